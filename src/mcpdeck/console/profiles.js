// Profiles: the gateway's virtual servers (a subset of servers and tools at /mcp/<name>),
// listed with what each serves now, added, edited and deleted. The config file is the record:
// the gateway follows it and tells a changed profile's connected clients to list again.
import { del, get, on, put, seg } from './api.js';
import { add, breakable, button, clear, confirmDialog, debounce, drawKeyed, field, h, openDialog, toast } from './dom.js';

export default { title: 'Profiles', mount };

const lines = (text) => text.split('\n').map((s) => s.trim()).filter(Boolean);

function mount(root) {
  const out = h('div', { 'aria-live': 'polite' });
  let servers = [];
  // Read again on every status, tools and config event: drawn again only when what it would draw
  // differs from what is drawn, and then row by row (drawKeyed), so a row that did not change keeps
  // its element (an opened "N tools" stays open).
  let drawnAs = null; // what `out` shows: the answer it was drawn from, as JSON
  let rows = new Map(); // profile name -> {el, look}
  let tbody = null;
  const load = debounce(async () => {
    let list;
    try {
      [list, servers] = await Promise.all([get('/profiles'), get('/servers').then((r) => r.servers.map((s) => s.name))]);
    } catch (error) {
      drawnAs = null;
      add(clear(out), h('p', { class: 'error-text' }, error.message));
      return;
    }
    const look = JSON.stringify(list);
    if (look === drawnAs) return;
    const wasTable = tbody !== null && tbody.isConnected;
    drawnAs = look;
    if (list.config !== null && list.profiles.length) {
      if (!wasTable) {
        rows = new Map();
        tbody = h('tbody', {});
        add(clear(out), h('div', { class: 'table-wrap' }, h('table', { class: 'profiles' },
          h('thead', {}, h('tr', {}, ['Profile', 'Servers', 'Tools', 'Names', 'Serves', 'Endpoint', ''].map((x) => h('th', { attrs: { scope: 'col' } }, x)))),
          tbody)));
      }
      rows = drawKeyed(tbody, list.profiles.map((p) => ({ key: p.name, look: JSON.stringify(p), build: () => row(p) })), rows);
      return;
    }
    tbody = null;
    add(clear(out), list.config === null
      ? h('p', { class: 'empty' }, 'This host has no config file, so it has nowhere to keep profiles.')
      : h('section', { class: 'empty' },
        h('p', {}, 'No profiles yet. A profile serves some of your servers and tools to MCP clients as one server of its own, at /mcp/<name>.'),
        button('New profile', () => edit(), { class: 'primary' })));
  }, 100);

  function row(p) {
    return h('tr', {},
      h('th', { class: 'mono', attrs: { scope: 'row' } }, breakable(p.name)),
      h('td', {}, p.config.servers ? p.servers.join(', ') || '—' : 'all servers',
        p.unknownServers.length ? h('div', { class: 'error-text' }, `not configured: ${p.unknownServers.join(', ')}`) : null),
      h('td', {}, filterText(p.config.tools)),
      h('td', {}, p.config.prefix === false ? 'their own' : 'mcp__<server>__<tool>'),
      h('td', {}, h('details', {}, h('summary', {}, `${p.tools.length} tool${p.tools.length === 1 ? '' : 's'}`),
        h('ul', { class: 'plain mono' }, p.tools.map((t) => h('li', {}, breakable(t)))))),
      h('td', { class: 'mono' }, breakable(`${location.origin}${p.path}`)),
      h('td', { class: 'actions' },
        button('Edit', () => edit(p), { class: 'small', 'aria-label': `Edit profile ${p.name}` }),
        button('Delete', () => remove(p), { class: 'small danger', 'aria-label': `Delete profile ${p.name}` })));
  }

  function edit(profile) {
    profileDialog(profile, servers, () => load());
  }

  async function remove(profile) {
    const sure = await confirmDialog(`Delete profile ${profile.name}?`,
      `Clients connected to ${profile.path} are told, and refused from then on. The servers stay as they are.`,
      { ok: 'Delete', danger: true });
    if (!sure) return;
    try {
      await del(`/profiles/${seg(profile.name)}`);
      toast(`Profile ${profile.name} deleted`);
    } catch (error) {
      toast(error.message, 'error');
    }
    load();
  }

  add(root, h('div', { class: 'page-head' }, h('h1', {}, 'Profiles'),
    button('New profile', () => edit(), { class: 'primary' })), out);
  const offs = [on('ToolsChanged', load), on('ServerStatusChanged', load), on('ConfigChanged', load), on('ConfigReloaded', load)];
  load();
  return () => offs.forEach((off) => off());
}

function filterText(tools) {
  if (!tools) return 'all tools';
  const parts = [];
  if (tools.include) parts.push(`only ${tools.include.join(', ')}`);
  if (tools.exclude && tools.exclude.length) parts.push(`not ${tools.exclude.join(', ')}`);
  return parts.join('; ') || 'all tools';
}

/** The add/edit dialog; `profile` is the API's shape (undefined: a new one). */
function profileDialog(profile, known, saved) {
  const config = profile ? profile.config : {};
  const name = h('input', { type: 'text', value: profile ? profile.name : '', required: true, readOnly: Boolean(profile), spellcheck: false, autocomplete: 'off', placeholder: 'e.g. coding' });
  const all = h('input', { type: 'checkbox', checked: !config.servers });
  const boxes = [...new Set([...known, ...(config.servers || [])])].map((server) => {
    const box = h('input', { type: 'checkbox', value: server, checked: Boolean(config.servers && config.servers.includes(server)) });
    return { server, box, label: h('label', { class: 'check' }, box, ` ${server}${known.includes(server) ? '' : ' (not configured)'}`) };
  });
  const include = h('textarea', { rows: 3, spellcheck: false, placeholder: 'mcp__github__*\nread_*' });
  include.value = (config.tools && config.tools.include || []).join('\n');
  const exclude = h('textarea', { rows: 3, spellcheck: false, placeholder: '*delete*' });
  exclude.value = (config.tools && config.tools.exclude || []).join('\n');
  const own = h('input', { type: 'checkbox', checked: config.prefix === false });
  const description = h('input', { type: 'text', value: config.description || '', placeholder: '(optional) told to its clients' });
  const problem = h('p', { class: 'error-text', role: 'alert' });

  function chosen() {
    return all.checked ? null : boxes.filter((b) => b.box.checked).map((b) => b.server);
  }
  function sync() {
    for (const b of boxes) b.box.disabled = all.checked;
    const picked = chosen();
    own.disabled = !(picked && picked.length === 1);
    if (own.disabled) own.checked = false;
  }
  all.addEventListener('change', sync);
  for (const b of boxes) b.box.addEventListener('change', sync);
  sync();

  async function save() {
    problem.textContent = '';
    const body = { servers: chosen(), prefix: !own.checked };
    const inc = lines(include.value);
    const exc = lines(exclude.value);
    if (inc.length || exc.length) body.tools = { ...(inc.length ? { include: inc } : {}), exclude: exc };
    if (description.value.trim()) body.description = description.value.trim();
    if (!name.value.trim()) { problem.textContent = 'Give the profile a name.'; name.focus(); return; }
    try {
      const result = await put(`/profiles/${seg(name.value.trim())}`, body);
      dialog.close();
      toast(`Profile ${result.name} saved: ${result.tools.length} tools at ${result.path}`);
      saved();
    } catch (error) {
      problem.textContent = error.message;
    }
  }

  const form = h('form', { class: 'form', on: { submit: (event) => { event.preventDefault(); save(); } } },
    field('Name', name, profile ? 'The name is its endpoint, so it cannot change.' : 'Letters, digits, _ - and . (it becomes /mcp/<name>).'),
    h('fieldset', {}, h('legend', {}, 'Servers'),
      h('label', { class: 'check' }, all, ' All servers (also the ones added later)'),
      h('div', { class: 'checks' }, boxes.map((b) => b.label))),
    field('Only these tools', include, 'Shell patterns, one per line, on catalog names (mcp__fs__read_*) or the servers\u2019 own names (read_*). Empty: every tool.'),
    field('Never these tools', exclude, 'Patterns as above; they win over the list above.'),
    h('label', { class: 'check' }, own, ' Serve the tools under their own names (no mcp__<server>__ prefix; one server only)'),
    field('Description', description),
    problem);
  const dialog = openDialog({
    title: profile ? `Edit profile ${profile.name}` : 'New profile',
    body: form,
    actions: [button('Cancel', () => dialog.close()), button('Save', () => save(), { class: 'primary' })],
  });
}
