// Argument completion: an input whose suggestions (a <datalist>) come from /api/completions.
import { post } from './api.js';
import { debounce, h, uid } from './dom.js';

/** An input that asks `request(value)` -> body for /api/completions as the user types. */
export function completingInput(label, request, props = {}) {
  const list = h('datalist', { id: uid('complete') });
  const input = h('input', { type: 'text', 'aria-label': label, list: list.id, autocomplete: 'off', spellcheck: false, ...props });
  let asked = 0;
  const ask = debounce(async () => {
    const mine = ++asked;
    try {
      const r = await post('/completions', request(input.value));
      if (mine !== asked) return;
      list.replaceChildren(...r.values.slice(0, 100).map((v) => h('option', { value: v })));
    } catch {
      list.replaceChildren(); // a server without completions simply offers none
    }
  }, 150);
  input.addEventListener('input', ask);
  input.addEventListener('focus', ask);
  return { input, element: h('span', { class: 'completing' }, input, list) };
}
