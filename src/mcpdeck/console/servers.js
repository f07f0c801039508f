// Servers: every configured server with its live status; enable, reconnect, test, logs,
// edit, remove per row; bulk actions; search and grouping.
import { del, get, on, post, seg } from './api.js';
import { add, breakable, button, clear, confirmDialog, debounce, formatDuration, h, toast } from './dom.js';
import { href, navigate } from './router.js';
import { openServerDialog } from './server-dialog.js';
import { needsSignIn, signIn } from './sign-in.js';

const ORDER = ['failed', 'reconnecting', 'connecting', 'connected', 'stopped', 'disabled'];

export default { title: 'Servers', mount };

function mount(root) {
  const servers = new Map(); // name -> status JSON
  const rows = new Map(); // name -> row parts
  const selected = new Set();
  const notes = new Map(); // name -> {kind, text} (last test / action result)
  let group = 'none';
  let filter = '';
  let laidOut = false;

  // ----- toolbar --------------------------------------------------------------------------
  const search = h('input', { type: 'search', placeholder: 'Filter by name, command, URL, state or error', 'aria-label': 'Filter servers', on: { input: () => { filter = search.value.trim().toLowerCase(); applyFilter(); } } });
  const grouping = h('select', { 'aria-label': 'Group servers', on: { change: () => { group = grouping.value; layout(); } } },
    h('option', { value: 'none' }, 'No grouping'), h('option', { value: 'state' }, 'Group by status'), h('option', { value: 'transport' }, 'Group by transport'));
  const summary = h('p', { class: 'summary', 'aria-live': 'polite' });
  const banner = h('div', { class: 'banner', hidden: true, role: 'alert' });
  const selectAll = h('input', { type: 'checkbox', 'aria-label': 'Select all shown servers', on: { change: () => {
    for (const [name, row] of rows) {
      if (row.tr.hidden) continue;
      row.check.checked = selectAll.checked;
      if (selectAll.checked) selected.add(name); else selected.delete(name);
    }
    bulkState();
  } } });
  const bulkLabel = h('span', { class: 'muted' });
  const bulkButtons = [
    button('Test', () => bulk('test'), { class: 'small' }),
    button('Enable', () => bulk('enable'), { class: 'small' }),
    button('Disable', () => bulk('disable'), { class: 'small' }),
    button('Reconnect', () => bulk('reconnect'), { class: 'small' }),
  ];
  const bulkBar = h('div', { class: 'bulk', role: 'group', 'aria-label': 'Selected servers' }, bulkLabel, bulkButtons);
  const table = h('table', { class: 'servers' },
    h('caption', { class: 'visually-hidden' }, 'Configured MCP servers'),
    h('colgroup', {}, h('col', { class: 'c-check' }), h('col', { class: 'c-status' }), h('col', { class: 'c-name' }), h('col', { class: 'c-tools' }), h('col', { class: 'c-detail' }), h('col', { class: 'c-on' }), h('col', { class: 'c-actions' })),
    h('thead', {}, h('tr', {},
      h('th', { attrs: { scope: 'col' } }, selectAll), h('th', { attrs: { scope: 'col' } }, 'Status'), h('th', { attrs: { scope: 'col' } }, 'Server'),
      h('th', { attrs: { scope: 'col' }, class: 'num' }, 'Tools'), h('th', { attrs: { scope: 'col' } }, 'Command / URL · last error'),
      h('th', { attrs: { scope: 'col' } }, 'Enabled'), h('th', { attrs: { scope: 'col' } }, 'Actions'))));
  const empty = h('div', { class: 'empty', hidden: true },
    h('p', {}, 'No servers yet.'),
    h('p', { class: 'muted' }, 'Add one with its command or URL, paste the "mcpServers" JSON from a README, or import the servers another app (Claude, Cursor, VS Code, Goose) already has.'));

  add(root, 
    h('div', { class: 'page-head' }, h('h1', {}, 'Servers'),
      h('div', { class: 'actions' },
        button('Add server', () => openServerDialog({ onDone: refresh }), { class: 'primary' }),
        button('Paste JSON', () => openServerDialog({ tab: 'paste', onDone: refresh })),
        button('Import…', () => openServerDialog({ tab: 'import', onDone: refresh })))),
    // The banner under the toolbar: it comes with the first answer (the rows come with it), and above
    // the toolbar it moved the filter and the bulk actions down under a click.
    h('div', { class: 'toolbar' }, search, grouping, bulkBar),
    banner, summary, h('div', { class: 'table-wrap' }, table), empty);

  // ----- rows ---------------------------------------------------------------------------
  function makeRow(name) {
    const check = h('input', { type: 'checkbox', 'aria-label': `Select ${name}`, on: { change: () => {
      if (check.checked) selected.add(name); else selected.delete(name);
      bulkState();
    } } });
    const dot = h('span', { class: 'dot', attrs: { 'aria-hidden': 'true' } });
    const stateText = h('span', { class: 'state-text' });
    const status = h('span', { class: 'status' }, dot, stateText);
    const info = h('small', { class: 'muted' });
    // The tool count links to the Tools page only while there are tools to see there.
    const toolsLink = h('a', { href: href('tools', [], { server: name }) });
    const toolsText = h('span', { class: 'muted' });
    const toolsCell = h('td', { class: 'num' });
    const target = h('code', { class: 'target' });
    // A long error is folded to three lines; a click, Enter or Space shows all of it.
    const unfold = () => error.setAttribute('aria-expanded', String(error.classList.toggle('expanded')));
    const error = h('div', {
      class: 'error-text', role: 'button', 'aria-expanded': 'false', title: 'Click to show all of it', attrs: { tabindex: '0' },
      on: {
        click: unfold,
        keydown: (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); unfold(); } },
      },
    });
    const hint = h('div', { class: 'hint' });
    const warnings = h('ul', { class: 'warnings' });
    const note = h('div', { class: 'note' });
    const toggle = h('input', { type: 'checkbox', role: 'switch', 'aria-label': `Enable ${name}`, on: { change: () => setEnabled(name, toggle.checked) } });
    const reconnect = button('Reconnect', () => act(name, 'reconnect'), { class: 'small', title: `Reconnect ${name}` });
    const actions = h('div', { class: 'row-actions' },
      reconnect,
      button('Test', () => act(name, 'test'), { class: 'small', title: `Test ${name} (a separate connection)` }),
      button('Logs', () => navigate('logs', [name]), { class: 'small', title: `Logs of ${name}` }),
      button('Edit', () => openServerDialog({ name, onDone: refresh }), { class: 'small', title: `Edit ${name}` }),
      button('Remove', () => remove(name), { class: 'small danger-text', title: `Remove ${name}` }));
    const tr = h('tr', { data: { name } },
      h('td', {}, check),
      h('td', {}, status),
      h('td', { class: 'name' }, h('strong', {}, breakable(name)), h('br'), info),
      toolsCell,
      h('td', { class: 'detail' }, target, error, hint, warnings, note),
      h('td', {}, h('label', { class: 'switch' }, toggle, h('span', { class: 'slider', attrs: { 'aria-hidden': 'true' } }))),
      h('td', {}, actions));
    return { tr, check, status, stateText, info, toolsCell, toolsLink, toolsText, target, error, hint, warnings, note, toggle, reconnect, name, haystack: '' };
  }

  function paint(row, s) {
    row.status.dataset.state = s.state;
    row.stateText.textContent = s.state;
    row.status.title = s.state === 'connected' && s.uptime ? `connected for ${formatDuration(s.uptime)}` : s.state;
    const about = s.serverInfo ? `${s.serverInfo.name || ''} ${s.serverInfo.version || ''}`.trim() : '';
    row.info.textContent = [s.transport, about].filter(Boolean).join(' · ');
    const count = s.toolCount ?? 0;
    const linked = s.state === 'connected' && count > 0;
    if (row.toolsCell.firstChild !== (linked ? row.toolsLink : row.toolsText)) row.toolsCell.replaceChildren(linked ? row.toolsLink : row.toolsText);
    row.toolsLink.textContent = String(count);
    row.toolsLink.setAttribute('aria-label', `${count} tools of ${s.name}`);
    row.toolsText.textContent = s.state === 'connected' ? '0' : '—';
    row.toolsText.title = s.state === 'connected' ? `${s.name} has no tools` : `${s.name} is ${s.state}: no tools to see`;
    row.target.textContent = s.target || '';
    row.target.title = s.target || '';
    const failing = s.error && ['failed', 'reconnecting', 'stopped'].includes(s.state);
    row.error.textContent = failing ? s.error : '';
    row.error.hidden = !failing;
    clear(row.warnings);
    for (const w of s.warnings || []) add(row.warnings, h('li', {}, w));
    clear(row.hint);
    row.hint.hidden = !needsSignIn(s);
    if (needsSignIn(s)) {
      add(row.hint, 'This server asks you to sign in. ',
        button('Sign in', () => signIn(s.name), { class: 'small primary', title: `Sign in to ${s.name} in a new tab` }));
    }
    const n = notes.get(s.name);
    row.note.textContent = n ? n.text : '';
    row.note.dataset.kind = n ? n.kind : '';
    row.toggle.checked = s.state !== 'disabled';
    // A disabled server is not connected until it is enabled (the API answers 409 server-disabled).
    row.reconnect.disabled = s.state === 'disabled';
    row.reconnect.title = s.state === 'disabled' ? `${s.name} is disabled: turn its switch on to connect it` : `Reconnect ${s.name}`;
    row.haystack = [s.name, s.transport, s.target, s.state, s.error || '', ...(s.warnings || [])].join(' ').toLowerCase();
    const hide = Boolean(filter) && !row.haystack.includes(filter);
    if (row.tr.hidden !== hide) row.tr.hidden = hide;
  }

  function layout() {
    for (const body of table.querySelectorAll('tbody')) body.remove();
    const names = [...servers.keys()].sort((a, b) => a.localeCompare(b));
    const groups = new Map();
    for (const name of names) {
      const s = servers.get(name);
      const key = group === 'none' ? '' : group === 'state' ? s.state : s.transport;
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(name);
    }
    const keys = [...groups.keys()].sort((a, b) => group === 'state' ? ORDER.indexOf(a) - ORDER.indexOf(b) : a.localeCompare(b));
    for (const key of keys) {
      const body = h('tbody', {});
      if (group !== 'none') add(body, h('tr', { class: 'group' }, h('th', { attrs: { colspan: 7, scope: 'rowgroup' } }, `${key} (${groups.get(key).length})`)));
      for (const name of groups.get(key)) add(body, rows.get(name).tr);
      add(table, body);
    }
    empty.hidden = servers.size > 0;
    table.hidden = servers.size === 0;
    applyFilter();
  }

  function applyFilter() {
    for (const row of rows.values()) {
      const hide = Boolean(filter) && !row.haystack.includes(filter);
      if (row.tr.hidden !== hide) row.tr.hidden = hide; // touch only what changes
    }
    count();
  }

  function count() {
    const by = {};
    for (const s of servers.values()) by[s.state] = (by[s.state] || 0) + 1;
    const tools = [...servers.values()].reduce((n, s) => n + (s.toolCount || 0), 0);
    const shown = [...rows.values()].filter((r) => !r.tr.hidden).length;
    const parts = ORDER.filter((k) => by[k]).map((k) => `${by[k]} ${k}`);
    summary.textContent = `${servers.size} server${servers.size === 1 ? '' : 's'} (${parts.join(', ') || 'none'}) · ${tools} tools` + (filter ? ` · ${shown} shown` : '');
  }

  function bulkState() {
    for (const name of [...selected]) if (!servers.has(name)) selected.delete(name);
    bulkLabel.textContent = selected.size ? `${selected.size} selected:` : 'Select servers for bulk actions:';
    for (const b of bulkButtons) b.disabled = selected.size === 0;
  }

  function upsert(list) {
    const seen = new Set();
    let changed = false;
    for (const s of list) {
      seen.add(s.name);
      const old = servers.get(s.name);
      servers.set(s.name, s);
      if (!rows.has(s.name)) { rows.set(s.name, makeRow(s.name)); changed = true; }
      else if (group === 'state' && old && old.state !== s.state) changed = true;
      else if (group === 'transport' && old && old.transport !== s.transport) changed = true;
      paint(rows.get(s.name), s);
    }
    for (const name of [...servers.keys()]) {
      if (!seen.has(name)) { servers.delete(name); rows.get(name)?.tr.remove(); rows.delete(name); changed = true; }
    }
    if (changed || !laidOut) { laidOut = true; layout(); } else count();
    bulkState();
  }

  async function refresh() {
    try {
      const [list, host] = await Promise.all([get('/servers'), get('/host')]);
      upsert(list.servers);
      showProblems(host);
    } catch (error) {
      banner.hidden = false;
      banner.textContent = error.message;
    }
  }
  const refreshSoon = debounce(refresh, 250);

  function showProblems(host) {
    const problems = Object.entries(host.problems || {});
    banner.hidden = problems.length === 0 && host.enabled;
    clear(banner);
    if (!host.enabled) add(banner, h('p', {}, 'All servers are switched off (mcpEnabled is false in the config). ', button('Switch them on', async () => { await post('/host/enable'); refresh(); }, { class: 'small' })));
    for (const [where, message] of problems) {
      add(banner, h('p', {}, where ? `The last edit of ${host.config} could not be applied to ${where}: ` : `The config file ${host.config} could not be read: `, h('span', {}, message)));
    }
  }

  // ----- actions ------------------------------------------------------------------------
  function setNote(name, kind, text) {
    notes.set(name, { kind, text });
    if (servers.has(name)) paint(rows.get(name), servers.get(name));
  }

  async function run(name, action) {
    if (action === 'test') {
      setNote(name, 'busy', 'Testing…');
      const r = await post(`/servers/${seg(name)}/test`);
      if (r.ok) setNote(name, 'ok', `Test passed: ${r.tools.length} tools in ${formatDuration(r.duration)}`);
      else setNote(name, 'bad', `Test failed: ${r.error || r.state}`);
      return r.ok;
    }
    const s = await post(`/servers/${seg(name)}/${action}`);
    upsert([...servers.values()].map((x) => (x.name === name ? s : x)));
    return true;
  }

  async function act(name, action) {
    try {
      await run(name, action);
    } catch (error) {
      setNote(name, 'bad', `${action} failed: ${error.message}`);
    }
  }

  async function setEnabled(name, enabled) {
    const row = rows.get(name);
    row.toggle.disabled = true;
    try {
      await run(name, enabled ? 'enable' : 'disable');
    } catch (error) {
      row.toggle.checked = !enabled;
      toast(`${name}: ${error.message}`, 'error');
    } finally {
      row.toggle.disabled = false;
    }
  }

  async function bulk(action) {
    const names = [...selected];
    const results = await Promise.allSettled(names.map((name) => run(name, action)));
    const failed = results.filter((r) => r.status === 'rejected' || r.value === false).length;
    for (const [i, r] of results.entries()) if (r.status === 'rejected') setNote(names[i], 'bad', `${action} failed: ${r.reason.message}`);
    toast(`${action}: ${names.length - failed} of ${names.length} servers OK`, failed ? 'error' : 'info');
  }

  async function remove(name) {
    const ok = await confirmDialog(`Remove ${name}?`, `This disconnects ${name} and deletes its entry from the config file.`, { ok: 'Remove', danger: true });
    if (!ok) return;
    try {
      await del(`/servers/${seg(name)}`);
      toast(`Removed ${name}`);
      refresh();
    } catch (error) {
      toast(`${name}: ${error.message}`, 'error');
    }
  }

  // ----- live updates -------------------------------------------------------------------
  const offs = [
    on('ServerStatusChanged', (e) => {
      // Another replica's server (a fleet on PostgreSQL): the rows are this replica's own; a failure there is said.
      if (e.remote) {
        if (e.state === 'failed') toast(`${e.server} failed on replica ${e.replica}${e.error ? `: ${e.error}` : ''}`, 'error');
        return;
      }
      const s = servers.get(e.server);
      if (!s) { refreshSoon(); return; }
      const next = { ...s, state: e.state, error: e.error ?? (e.state === 'connected' ? null : s.error) };
      if (e.state !== 'connected') next.uptime = null;
      if (group === 'state' && s.state !== e.state) { servers.set(e.server, next); paint(rows.get(e.server), next); layout(); }
      else { servers.set(e.server, next); paint(rows.get(e.server), next); count(); }
      refreshSoon(); // uptime, server info, pid, warnings
    }),
    on('ToolsChanged', (e) => {
      const s = servers.get(e.server);
      if (s) { s.toolCount = e.toolCount; paint(rows.get(e.server), s); count(); }
    }),
    on('ConfigChanged', refreshSoon),
    on('ConfigReloaded', refreshSoon),
    on('ConfigReloadFailed', refreshSoon),
    on('open', ({ again }) => { if (again) refresh(); }),
  ];
  bulkState();
  refresh();
  return () => offs.forEach((off) => off());
}

