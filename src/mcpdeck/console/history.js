// History: tool calls with filters, who approved each and which gateway client made it; conversations and their messages.
import { get, on } from './api.js';
import { add, breakable, button, clear, formatDuration, formatTime, h, tabs } from './dom.js';
import { contentBlock, textView, tree } from './content.js';

export default { title: 'History', mount };

function mount(root) {
  // The tab shown's own listeners: a visit (tabs() draws a new pane each time) ends the one before.
  let offs = [];
  const end = () => { offs.forEach((off) => off()); offs = []; };
  const t = tabs([
    { id: 'calls', label: 'Tool calls', render: () => { end(); return callsPane(offs); } },
    { id: 'conversations', label: 'Conversations', render: () => { end(); return conversationsPane(); } },
  ]);
  add(root, h('div', { class: 'page-head' }, h('h1', {}, 'History')), t.element);
  return end;
}

function callsPane(offs) {
  const server = h('input', { type: 'text', placeholder: 'server', 'aria-label': 'Only calls to this server', spellcheck: false });
  const status = h('select', { 'aria-label': 'Only calls with this outcome' }, h('option', { value: '' }, 'Any outcome'),
    ['ok', 'tool-error', 'error', 'denied', 'running'].map((s) => h('option', { value: s }, s)));
  const text = h('input', { type: 'search', placeholder: 'tool name contains…', 'aria-label': 'Tool name contains' });
  const limit = h('select', { 'aria-label': 'How many' }, [50, 200, 1000].map((n) => h('option', { value: n }, `last ${n}`)));
  // Above the list: how many calls match, and the newer calls held back while the user is on the list.
  const count = h('span', { class: 'calls-count' });
  const newer = button('', () => showNewer(), { class: 'small', hidden: true, title: 'Put the calls made since into the list' });
  const said = h('span', { class: 'visually-hidden', 'aria-live': 'polite' }); // said once when newer calls start to wait
  const head = h('div', { class: 'calls-head' }, count, h('span', { class: 'calls-newer' }, newer), said);
  const list = h('div', {});
  const box = h('div', {}, head, list);
  // The call shown, outside the list: reading the list again (a call that starts or ends, a filter) keeps it.
  const detail = h('div', {});
  // The list and the call shown under it: a list drawn while the pointer or focus is in either moves the details.
  const zone = h('div', {}, box, detail);

  // Calls start and end several times a second on a busy gateway, and new ones go at the top: redrawing the list
  // then would move every row down under a click. While the pointer is over the list, keyboard focus is in it or
  // it is scrolled down, a live answer waits (the head says how many newer calls) until the button takes it or
  // the user moves off the list. A filter, the limit and Refresh are the user's own: their answer is drawn at once.
  let shown = null; // the answer the list shows
  let waiting = null; // a newer answer held back
  let asked = true; // the next answer is drawn at once: the first, or one the user asked for
  let reads = 0;
  let pointer = false;
  const bar = document.querySelector('.top'); // the top bar (sticky: what is under it is out of sight)
  const held = () => {
    const table = list.querySelector('table');
    if (!table) return false;
    if (pointer) return true;
    const focused = document.activeElement;
    if (focused && zone.contains(focused) && focused.matches(':focus-visible')) return true;
    return table.getBoundingClientRect().top < (bar ? bar.getBoundingClientRect().bottom : 0);
  };
  const release = () => { if (waiting && box.isConnected && !held()) draw(waiting); };
  zone.addEventListener('pointerenter', () => { pointer = true; });
  zone.addEventListener('pointerleave', () => { pointer = false; release(); });
  zone.addEventListener('focusout', (event) => { if (!zone.contains(event.relatedTarget)) release(); });
  const onScroll = () => release();
  window.addEventListener('scroll', onScroll, { passive: true });
  offs.push(() => window.removeEventListener('scroll', onScroll));
  // The head sticks just under the top bar, whose height changes with the window's width and the zoom (the nav wraps).
  if (bar) {
    const stick = new ResizeObserver(() => { head.style.top = `${bar.offsetHeight}px`; });
    stick.observe(bar);
    offs.push(() => stick.disconnect());
  }

  const read = async () => {
    if (!box.isConnected && shown) return; // a pane the tabs left (each visit draws a new one): it reads no more
    const q = new URLSearchParams({ limit: limit.value });
    if (server.value.trim()) q.set('server', server.value.trim());
    if (status.value) q.set('status', status.value);
    if (text.value.trim()) q.set('q', text.value.trim());
    const mine = ++reads;
    let r;
    try { r = await get(`/history/calls?${q}`); } catch (error) {
      if (mine !== reads || (!asked && held())) return; // a live read that failed: the list stays as it is
      asked = false; shown = waiting = null; setNewer(); count.textContent = '';
      add(clear(list), h('p', { class: 'error-text', role: 'alert' }, error.message));
      return;
    }
    if (mine !== reads) return; // a later read is on its way (it has the filters as they are now)
    if (asked || !held()) { asked = false; draw(r); return; }
    waiting = changes(shown, r) ? r : null;
    setNewer();
  };
  // Live events read the list at most once per 150 ms, and the next event never puts that read off (on a busy
  // gateway they never pause); the user's own changes wait for a pause in typing, and what was on its way is dropped.
  let timer = null;
  const schedule = (restart) => {
    if (timer !== null && !restart) return;
    clearTimeout(timer);
    timer = setTimeout(() => { timer = null; read(); }, 150);
  };
  const load = () => schedule(false);
  const ask = () => { asked = true; reads++; schedule(true); };

  function draw(r) {
    // Keyboard focus on a call's button stays on that call's button.
    const focused = document.activeElement;
    const keep = focused && list.contains(focused) ? focused.closest('tr')?.dataset.call : null;
    shown = r; waiting = null; setNewer();
    // Calls through the gateway name their client (clientInfo, profile, token); a column only when some do, as in the CLI.
    const clients = r.toolCalls.some((c) => c.caller);
    // A fleet's replicas share the history: which one made each call, once the list holds more than one's.
    const replicas = new Set(r.toolCalls.map((c) => c.replica)).size > 1;
    const rows = r.toolCalls.map((c) => h('tr', { data: { call: c.callId } },
      h('td', {}, formatTime(c.startedAt)),
      h('td', { class: 'mono' }, button(breakable(c.name), () => showCall(detail, c), { class: 'ghost small', title: 'Show its arguments and result' })),
      h('td', {}, c.server),
      h('td', { class: `state-${c.status}` }, c.status),
      h('td', { class: 'num' }, c.duration == null ? '' : formatDuration(c.duration)),
      h('td', { title: c.approvedBy ? 'Who let the call through' : 'No permission rule or user decision was involved' }, c.approvedBy || '—'),
      clients ? h('td', { class: 'client', title: c.caller ? 'The gateway client that made the call' : 'Made by mcpdeck itself' }, c.caller || '—') : null,
      replicas ? h('td', { class: 'mono', title: 'The serve replica that made the call' }, c.replica || '—') : null,
      h('td', { class: 'error-text' }, c.error || '')));
    count.textContent = `${countText(r.toolCalls.length, r.total)} · ${r.path}`;
    count.title = r.path;
    add(clear(list),
      rows.length ? h('div', { class: 'table-wrap' }, h('table', { class: 'history' },
        h('thead', {}, h('tr', {}, ['When', 'Tool', 'Server', 'Outcome', 'Took', 'Approved by', clients ? 'Client' : null, replicas ? 'Replica' : null, 'Error'].filter(Boolean).map((x) => h('th', { attrs: { scope: 'col' } }, x)))),
        h('tbody', {}, rows))) : h('p', { class: 'empty' }, 'No tool calls match.'));
    if (keep) [...list.querySelectorAll('tr[data-call]')].find((tr) => tr.dataset.call === keep)?.querySelector('button')?.focus({ preventScroll: true });
  }

  function setNewer() {
    const text = waiting ? changes(shown, waiting) : '';
    const label = text ? `${text} — show` : '';
    if (newer.textContent !== label) newer.textContent = label;
    if (newer.hidden !== !text) { newer.hidden = !text; said.textContent = text ? 'Newer calls wait above the list' : ''; }
  }

  function showNewer() {
    const had = document.activeElement === newer;
    if (waiting) draw(waiting);
    // The button is gone with what it showed: keyboard focus goes on to the newest call.
    if (had) list.querySelector('tbody button')?.focus({ preventScroll: true });
  }

  for (const el of [server, text]) el.addEventListener('input', ask);
  for (const el of [status, limit]) el.addEventListener('change', ask);
  offs.push(on('ToolCallFinished', load), on('ToolCallStarted', load)); // live
  load();
  return h('div', {}, h('div', { class: 'toolbar' }, server, status, text, limit, button('Refresh', ask, { class: 'small' })), zone);
}

/** What a newer answer would change in the list shown: "3 newer calls", "3 newer calls, 1 updated", "1 call updated"; '' for nothing. */
function changes(shown, next) {
  if (!shown) return 'changes';
  const before = new Map(shown.toolCalls.map((c) => [c.callId, JSON.stringify(c)]));
  const added = Math.max(0, next.total - shown.total) || next.toolCalls.filter((c) => !before.has(c.callId)).length;
  const updated = next.toolCalls.filter((c) => before.has(c.callId) && before.get(c.callId) !== JSON.stringify(c)).length;
  const parts = [];
  if (added) parts.push(`${added.toLocaleString()} newer call${added === 1 ? '' : 's'}`);
  if (updated) parts.push(added ? `${updated.toLocaleString()} updated` : `${updated.toLocaleString()} call${updated === 1 ? '' : 's'} updated`);
  if (!parts.length && next.toolCalls.length !== shown.toolCalls.length) parts.push('changes');
  return parts.join(', ');
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
