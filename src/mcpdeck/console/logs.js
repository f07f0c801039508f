// Logs: one server's log (its stderr, its MCP log messages, the host's notes), live.
import { EventStream, get } from './api.js';
import { add, button, clear, h } from './dom.js';
import { navigate } from './router.js';

const MAX_LINES = 5000;

export default { title: 'Logs', mount };

function kindOf(line) {
  if (/^\S+ --- /.test(line) || / mcpdeck /.test(line.slice(0, 60))) return 'note';
  if (/\b(error|exception|traceback|failed)\b/i.test(line)) return 'err';
  if (/\[(debug|info|notice|warning|error|critical|alert|emergency)\]/i.test(line)) return 'mcp';
  return 'stderr';
}

function mount(root, route) {
  let name = route.args[0] || '';
  let source = null;
  let follow = true;
  const picker = h('select', { class: 'server-picker', 'aria-label': 'Server', on: { change: () => navigate('logs', picker.value ? [picker.value] : []) } });
  const filter = h('input', { type: 'search', placeholder: 'Show only lines with…', 'aria-label': 'Filter log lines' });
  const followBox = h('input', { type: 'checkbox', checked: true, on: { change: () => { follow = followBox.checked; if (follow) scrollEnd(); } } });
  const state = h('span', { class: 'muted', 'aria-live': 'polite' });
  const path = h('p', { class: 'hint' });
  const log = h('pre', { class: 'log', tabIndex: 0, 'aria-label': 'Log lines', role: 'log' });
  add(root, h('div', { class: 'page-head' }, h('h1', {}, 'Logs')),
    h('div', { class: 'toolbar' }, picker, filter, h('label', { class: 'inline' }, followBox, ' Keep scrolled to the end'),
      button('Clear view', () => clear(log), { class: 'small' }), state),
    path, log);

  function scrollEnd() { log.scrollTop = log.scrollHeight; }

  function matches(text) {
    const f = filter.value.toLowerCase();
    return !f || text.toLowerCase().includes(f);
  }
  filter.addEventListener('input', () => {
    for (const el of log.children) el.hidden = !matches(el.textContent);
  });

  function addLine(text) {
    const el = h('div', { class: `line ${kindOf(text)}` }, text);
    if (!matches(text)) el.hidden = true;
    add(log, el);
    while (log.childElementCount > MAX_LINES) log.firstElementChild.remove();
    if (follow) scrollEnd();
  }

  function open() {
    if (source) source.close();
    source = null;
    clear(log);
    if (!name) { state.textContent = ''; path.textContent = 'Pick a server to follow its log.'; return; }
    state.textContent = 'connecting…';
    get(`/servers/${encodeURIComponent(name)}/logs?lines=1`).then((r) => { path.textContent = `File: ${r.path}`; }, (error) => { path.textContent = error.message; });
    source = new EventStream(`/api/servers/${encodeURIComponent(name)}/logs/follow?lines=500`);
    source.onopen = () => { state.textContent = 'following (live)'; };
    source.addEventListener('line', (message) => {
      try { addLine(JSON.parse(message.data).line); } catch { /* a broken event is skipped */ }
    });
    source.onerror = () => {
      // Reopen after a drop; the server sends the last lines again, so start from a clean view.
      state.textContent = 'reconnecting…';
      source.close();
      const mine = source;
      setTimeout(() => { if (source === mine) open(); }, 2000);
    };
  }

  get('/servers').then((r) => {
    const names = r.servers.map((s) => s.name).sort();
    add(picker, h('option', { value: '' }, '— pick a server —'), names.map((n) => h('option', { value: n }, n)));
    picker.value = names.includes(name) ? name : '';
    if (!name && names.length) { navigate('logs', [names[0]]); }
  });
  open();
  return {
    update(next) { name = next.args[0] || ''; picker.value = name; open(); },
    unmount() { if (source) source.close(); source = null; },
  };
}
