// Traffic: the JSON-RPC messages between mcpdeck and its servers, both directions, with timing,
// for every server at once (or one), live. A row opens to show the whole message.
// Message bodies are shown as text only; they can hold tool arguments and results.
import { EventStream, get } from './api.js';
import { add, button, clear, h } from './dom.js';
import { navigate } from './router.js';

export default { title: 'Traffic', mount };

const MAX_ROWS = 2000;

function clock(seconds) {
  const d = new Date(seconds * 1000);
  return `${d.toLocaleTimeString(undefined, { hour12: false })}.${String(d.getMilliseconds()).padStart(3, '0')}`;
}

function pretty(message) {
  if (message.truncated) return `${message.body}\n… (${message.size} characters in all; the rest is not kept)`;
  try { return JSON.stringify(JSON.parse(message.body), null, 2); } catch { return message.body; }
}

function errorCode(message) {
  try { return JSON.parse(message.body).error.code; } catch { return null; }
}

function mount(root, route) {
  let server = route.args[0] || '';
  let source = null;
  let paused = false;
  let lastSeq = 0;
  const held = [];

  const picker = h('select', { class: 'server-picker', 'aria-label': 'Server', on: { change: () => navigate('traffic', picker.value ? [picker.value] : []) } });
  const filter = h('input', { type: 'search', placeholder: 'Method, id or text…', 'aria-label': 'Filter messages' });
  const direction = h('select', { 'aria-label': 'Direction' },
    h('option', { value: '' }, 'both directions'), h('option', { value: 'out' }, '→ to servers'), h('option', { value: 'in' }, '← from servers'));
  const pauseButton = button('Pause', () => {
    paused = !paused;
    pauseButton.textContent = paused ? 'Resume' : 'Pause';
    pauseButton.setAttribute('aria-pressed', String(paused));
    if (!paused) { held.splice(0).forEach(addRow); }
  }, { class: 'small', 'aria-pressed': 'false' });
  const state = h('span', { class: 'muted', 'aria-live': 'polite' });
  const body = h('tbody');
  const table = h('table', { class: 'traffic' },
    h('thead', {}, h('tr', {}, ['Time', 'Server', '', 'Kind', 'Method / id', 'Took', 'Size'].map((t) => h('th', { attrs: { scope: 'col' } }, t)))),
    body);
  add(root, h('div', { class: 'page-head' }, h('h1', {}, 'Traffic')),
    h('div', { class: 'toolbar' }, picker, direction, filter, pauseButton, button('Clear view', () => clear(body), { class: 'small' }), state),
    h('p', { class: 'hint' }, 'The last 500 JSON-RPC messages of each server are kept in memory (never on disk); new ones appear as they pass.'),
    h('div', { class: 'table-wrap' }, table));

  function visible(message) {
    if (direction.value && message.direction !== direction.value) return false;
    const f = filter.value.trim().toLowerCase();
    if (!f) return true;
    return [message.method, message.id, message.body, message.server].some((v) => v !== null && v !== undefined && String(v).toLowerCase().includes(f));
  }

  function refilter() {
    for (const row of body.querySelectorAll('tr.msg')) {
      const hidden = !visible(row.message);
      row.hidden = hidden;
      if (row.detail) row.detail.hidden = hidden || !row.open;
    }
  }
  filter.addEventListener('input', refilter);
  direction.addEventListener('change', refilter);

  function toggle(row) {
    row.open = !row.open;
    row.setAttribute('aria-expanded', String(row.open));
    if (!row.detail) {
      row.detail = h('tr', { class: 'detail' }, h('td', { attrs: { colspan: 7 } }, h('pre', { class: 'traffic-body' }, pretty(row.message))));
      row.after(row.detail);
    }
    row.detail.hidden = !row.open;
  }

  function addRow(message) {
    if (message.seq <= lastSeq) return; // seen already (the stream and the first read overlap)
    lastSeq = message.seq;
    const arrow = message.direction === 'out' ? '→' : '←';
    const label = message.method || (message.id !== null ? `#${message.id}` : '');
    // mcpdeck opens with initialize; a server that speaks only the 2026-07-28 protocol refuses it
    // naming its versions (-32022), and mcpdeck goes on with server/discover. Expected, so it is
    // not shown as a failure.
    const probe = message.kind === 'error' && message.method === 'initialize' && errorCode(message) === -32022;
    const row = h('tr', {
      class: `msg ${message.direction} ${probe ? 'probe' : message.kind}`, tabIndex: 0, 'aria-expanded': 'false',
      data: { server: message.server, kind: message.kind, direction: message.direction },
      on: { click: () => toggle(row), keydown: (event) => { if (event.key === 'Enter' || event.key === ' ') { event.preventDefault(); toggle(row); } } },
    },
    h('td', { class: 'mono' }, clock(message.at)),
    h('td', {}, message.server),
    h('td', { class: 'dir', title: message.direction === 'out' ? 'to the server' : 'from the server' }, arrow),
    probe
      ? h('td', { title: 'This server speaks only the 2026-07-28 protocol; mcpdeck goes on with server/discover. Not a failure.' }, 'modern server')
      : h('td', {}, message.kind),
    h('td', { class: 'mono' }, message.method && message.id !== null ? `${message.method} #${message.id}` : label),
    h('td', { class: 'num' }, message.elapsed !== null ? `${(message.elapsed * 1000).toFixed(1)} ms` : ''),
    h('td', { class: 'num' }, message.truncated ? `${message.size} (cut)` : String(message.size)));
    row.message = message;
    row.hidden = !visible(message);
    add(body, row);
    while (body.querySelectorAll('tr.msg').length > MAX_ROWS) {
      const first = body.querySelector('tr.msg');
      if (first.detail) first.detail.remove();
      first.remove();
    }
  }

  function take(message) {
    if (server && message.server !== server) return;
    if (paused) held.push(message);
    else addRow(message);
  }

  function open() {
    if (source) source.close();
    clear(body);
    lastSeq = 0;
    held.length = 0;
    state.textContent = 'connecting…';
    const q = server ? `?server=${encodeURIComponent(server)}` : '';
    const pending = [];
    let loaded = false;
    source = new EventStream(`/api/traffic/stream${q}`);
    source.addEventListener('message', (event) => {
      let message;
      try { message = JSON.parse(event.data); } catch { return; }
      if (loaded) take(message); else pending.push(message);
    });
    source.onopen = () => {
      state.textContent = 'live';
      // Read what is kept after the stream listens, so nothing falls between the two.
      const path = server ? `/servers/${encodeURIComponent(server)}/traffic` : '/traffic';
      get(`${path}?after=${lastSeq}`).then((r) => {
        r.messages.forEach(take);
        loaded = true;
        pending.splice(0).forEach(take);
      }, (error) => { state.textContent = error.message; loaded = true; });
    };
    source.onerror = () => {
      state.textContent = 'reconnecting…';
      loaded = false;
    };
  }

  get('/servers').then((r) => {
    const names = r.servers.map((s) => s.name).sort();
    add(picker, h('option', { value: '' }, 'All servers'), names.map((n) => h('option', { value: n }, n)));
    picker.value = names.includes(server) ? server : '';
  });
  open();
  return {
    update(next) { server = next.args[0] || ''; picker.value = server; open(); },
    unmount() { if (source) source.close(); source = null; },
  };
}
