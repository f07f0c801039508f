// Prompts: every server's prompts; arguments with the server's completions; the messages.
import { get, on, post, seg } from './api.js';
import { add, button, clear, debounce, drawKeyed, field, h, serverOrder } from './dom.js';
import { messages } from './content.js';
import { completingInput } from './completion.js';

export default { title: 'Prompts', mount };

function mount(root) {
  let prompts = [];
  const searchBox = h('input', { type: 'search', placeholder: 'Filter prompts', 'aria-label': 'Filter prompts' });
  const list = h('div', { class: 'list' });
  const panel = h('div', { class: 'panel' }, h('p', { class: 'muted' }, 'Pick a prompt to fill in its arguments.'));
  const empty = h('p', { class: 'empty', hidden: true }, 'No prompts.');
  const problem = h('p', { class: 'error-text', hidden: true });
  add(root, h('div', { class: 'page-head' }, h('h1', {}, 'Prompts')), h('div', { class: 'toolbar' }, searchBox),
    h('div', { class: 'split' }, h('div', {}, problem, list, empty), panel));

  // Drawn again on every list event and keystroke, touching only what changed (drawKeyed); a server
  // that connects late is listed after the ones shown (serverOrder), so nothing moves under a click.
  const servers = []; // in the order first drawn
  let drawn = new Map();
  function render() {
    const f = searchBox.value.toLowerCase();
    const shown = serverOrder(servers, prompts.map((p) => p.server))(prompts).filter((p) => !f || `${p.name} ${p.title || ''} ${p.description || ''}`.toLowerCase().includes(f));
    drawn = drawKeyed(list, shown.map((p) => ({ key: p.name, look: JSON.stringify(p), build: () => h('button', { type: 'button', class: 'list-item', on: { click: () => show(p) } },
      h('span', { class: 'title' }, p.name), h('span', { class: 'desc' }, p.title || p.description || '')) })), drawn);
    if (empty.hidden !== Boolean(shown.length)) { empty.hidden = Boolean(shown.length); list.hidden = !shown.length; }
  }
  searchBox.addEventListener('input', render);

  function show(p) {
    const inputs = new Map();
    const values = () => Object.fromEntries([...inputs].map(([n, c]) => [n, c.input.value]));
    for (const a of p.arguments) inputs.set(a.name, completingInput(a.name, (value) => ({ prompt: p.name, argument: a.name, value, context: values() }), { required: a.required }));
    const out = h('div', { 'aria-live': 'polite' });
    const problems = h('p', { class: 'error-text', role: 'alert' });
    add(clear(panel), h('h2', {}, p.name), h('p', {}, h('span', { class: 'badge server' }, p.server), ' ', h('span', { class: 'muted' }, `prompt “${p.prompt}”`)),
      p.description ? h('p', { class: 'description' }, p.description) : null,
      p.arguments.length ? p.arguments.map((a) => {
        const c = inputs.get(a.name);
        const f = field(a.name, c.input, a.description || undefined);
        c.input.after(c.element.querySelector('datalist'));
        if (a.required) f.querySelector('label').append(h('span', { class: 'req', title: 'required' }, '*'));
        return f;
      }) : h('p', { class: 'muted' }, 'No arguments.'),
      problems,
      button('Get messages', async () => {
        problems.textContent = '';
        const missing = p.arguments.filter((a) => a.required && !inputs.get(a.name).input.value).map((a) => a.name);
        if (missing.length) { problems.textContent = `Required: ${missing.join(', ')}`; return; }
        const args = Object.fromEntries(Object.entries(values()).filter(([, v]) => v !== ''));
        add(clear(out), h('p', { class: 'muted' }, 'Asking the server…'));
        try {
          const r = await post(`/prompts/${seg(p.name)}/get`, { arguments: args });
          add(clear(out), r.description ? h('p', { class: 'muted' }, r.description) : null, messages(r.messages || []));
        } catch (error) {
          add(clear(out), h('p', { class: 'error-text' }, error.message));
        }
      }, { class: 'primary' }),
      out);
  }

  async function load() {
    try { prompts = await get('/prompts'); } catch (error) { problem.textContent = error.message; problem.hidden = false; return; }
    if (!problem.hidden) problem.hidden = true;
    render();
  }
  const reload = debounce(load, 300);
  const offs = [on('PromptsChanged', reload), on('open', ({ again }) => { if (again) load(); })];
  load();
  return () => offs.forEach((off) => off());
}
