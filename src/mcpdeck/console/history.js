// History: tool calls with filters, who approved each and which gateway client made it; conversations and their messages.
import { get, on } from './api.js';
import { add, breakable, button, clear, debounce, formatDuration, formatTime, h, tabs } from './dom.js';
import { contentBlock, textView, tree } from './content.js';

export default { title: 'History', mount };

function mount(root) {
  const offs = [];
  const t = tabs([
    { id: 'calls', label: 'Tool calls', render: () => callsPane(offs) },
    { id: 'conversations', label: 'Conversations', render: conversationsPane },
  ]);
  add(root, h('div', { class: 'page-head' }, h('h1', {}, 'History')), t.element);
  return () => offs.forEach((off) => off());
}

function callsPane(offs) {
  const server = h('input', { type: 'text', placeholder: 'server', 'aria-label': 'Only calls to this server', spellcheck: false });
  const status = h('select', { 'aria-label': 'Only calls with this outcome' }, h('option', { value: '' }, 'Any outcome'),
    ['ok', 'tool-error', 'error', 'denied', 'running'].map((s) => h('option', { value: s }, s)));
  const text = h('input', { type: 'search', placeholder: 'tool name contains…', 'aria-label': 'Tool name contains' });
  const limit = h('select', { 'aria-label': 'How many' }, [50, 200, 1000].map((n) => h('option', { value: n }, `last ${n}`)));
  const out = h('div', { 'aria-live': 'polite' });
  // The call shown, outside the list: reading the list again (a call that starts or ends, a filter) keeps it.
  const detail = h('div', {});
  const load = debounce(async () => {
    const q = new URLSearchParams({ limit: limit.value });
    if (server.value.trim()) q.set('server', server.value.trim());
    if (status.value) q.set('status', status.value);
    if (text.value.trim()) q.set('q', text.value.trim());
    let r;
    try { r = await get(`/history/calls?${q}`); } catch (error) { add(clear(out), h('p', { class: 'error-text' }, error.message)); return; }
    // Calls through the gateway name their client (clientInfo, profile, token); a column only when some do, as in the CLI.
    const clients = r.toolCalls.some((c) => c.caller);
    // A fleet's replicas share the history: which one made each call, once the list holds more than one's.
    const replicas = new Set(r.toolCalls.map((c) => c.replica)).size > 1;
    const rows = r.toolCalls.map((c) => h('tr', {},
      h('td', {}, formatTime(c.startedAt)),
      h('td', { class: 'mono' }, button(breakable(c.name), () => showCall(detail, c), { class: 'ghost small', title: 'Show its arguments and result' })),
      h('td', {}, c.server),
      h('td', { class: `state-${c.status}` }, c.status),
      h('td', { class: 'num' }, c.duration == null ? '' : formatDuration(c.duration)),
      h('td', { title: c.approvedBy ? 'Who let the call through' : 'No permission rule or user decision was involved' }, c.approvedBy || '—'),
      clients ? h('td', { class: 'client', title: c.caller ? 'The gateway client that made the call' : 'Made by mcpdeck itself' }, c.caller || '—') : null,
      replicas ? h('td', { class: 'mono', title: 'The serve replica that made the call' }, c.replica || '—') : null,
      h('td', { class: 'error-text' }, c.error || '')));
    add(clear(out), 
      h('p', { class: 'hint' }, `${countText(r.toolCalls.length, r.total)} · ${r.path}`),
      rows.length ? h('div', { class: 'table-wrap' }, h('table', { class: 'history' },
        h('thead', {}, h('tr', {}, ['When', 'Tool', 'Server', 'Outcome', 'Took', 'Approved by', clients ? 'Client' : null, replicas ? 'Replica' : null, 'Error'].filter(Boolean).map((x) => h('th', { attrs: { scope: 'col' } }, x)))),
        h('tbody', {}, rows))) : h('p', { class: 'empty' }, 'No tool calls match.'));
  }, 150);
  for (const el of [server, text]) el.addEventListener('input', load);
  for (const el of [status, limit]) el.addEventListener('change', load);
  offs.push(on('ToolCallFinished', load), on('ToolCallStarted', load)); // live
  load();
  return h('div', {}, h('div', { class: 'toolbar' }, server, status, text, limit, button('Refresh', load, { class: 'small' })), out, detail);
}

/** "3 calls", or "the newest 50 of 1,234 calls" when the limit cut the list. */
function countText(shown, total) {
  const n = (x) => x.toLocaleString();
  if (total === undefined || total <= shown) return `${n(shown)} call${shown === 1 ? '' : 's'}`;
  return `the newest ${n(shown)} of ${n(total)} calls`;
}

/** One call: its arguments, then its result as the history keeps it (the start of it, as text) or its error. */
async function showCall(detail, c) {
  const result = h('div', {}, h('p', { class: 'muted' }, 'Loading the result…'));
  add(clear(detail), h('h3', {}, `${c.name} · ${formatTime(c.startedAt)}`),
    h('h4', {}, 'Arguments'), tree(c.arguments || {}), h('h4', {}, 'Result'), result);
  detail.scrollIntoView({ block: 'nearest' });
  let found;
  try { found = (await get(`/history/calls/${encodeURIComponent(c.callId)}`)).toolCall; } catch (error) { add(clear(result), h('p', { class: 'error-text' }, error.message)); return; }
  if (c.error) add(clear(result), h('p', { class: 'error-text' }, c.error));
  else if (typeof found.result === 'string') {
    // As text (images and the like are named, not shown); a long one ends with a note of what was cut.
    add(clear(result), h('div', { class: `result ${c.status === 'tool-error' ? 'is-error' : ''}` }, textView(found.result, { name: `${c.tool}-result.txt` })));
  } else add(clear(result), h('p', { class: 'muted' }, c.status === 'running' ? 'Still running.' : 'No result was kept (calls recorded before results were, or one that never ended).'));
}

function conversationsPane() {
  const list = h('div', {});
  const view = h('div', { class: 'messages' });
  get('/history/conversations?limit=100').then((r) => {
    if (!r.conversations.length) { add(list, h('p', { class: 'empty' }, 'No conversations yet: they are recorded by `mcpdeck chat` and the Chat page.')); return; }
    add(list, h('div', { class: 'list' }, r.conversations.map((c) => h('button', { type: 'button', class: 'list-item', on: { click: () => show(c.id) } },
      h('span', { class: 'title' }, c.title || `Conversation ${c.id}`),
      h('span', { class: 'desc' }, [formatTime(c.startedAt), c.model, c.messages != null ? `${c.messages} messages` : ''].filter(Boolean).join(' · '))))));
  }, (error) => add(list, h('p', { class: 'error-text' }, error.message)));
  async function show(id) {
    add(clear(view), h('p', { class: 'muted' }, 'Loading…'));
    try {
      const r = await get(`/history/conversations/${id}`);
      add(clear(view), r.messages.map((m) => h('div', { class: `message ${m.role === 'error' ? 'failed' : ''}` },
        h('div', { class: 'role' }, `${m.role}${m.at ? ` · ${formatTime(m.at)}` : ''}`),
        m.role === 'error' ? h('p', { class: 'error-text' }, m.content?.message ?? '')
          : typeof m.content === 'string' ? h('pre', {}, m.content) : Array.isArray(m.content) ? m.content.map((b) => (b && b.type ? contentBlock(b) : tree(b))) : tree(m))));
    } catch (error) {
      add(clear(view), h('p', { class: 'error-text' }, error.message));
    }
  }
  return h('div', { class: 'split' }, list, view);
}
