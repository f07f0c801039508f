// The add/edit server dialog: a form (transport, command, args, env, cwd, URL, headers),
// a pasted "mcpServers" JSON snippet, or an import from another app, with a test first.
// Secrets come from the API masked ("****", "abc…****"); a masked value sent back means
// "keep the stored one" (the API restores it), so masked values are never replaced by accident.
import { get, on, post, put, seg } from './api.js';
import { add, button, clear, confirmDialog, field, formatDuration, h, openDialog, tabs, toast, uid } from './dom.js';
import { secretHint } from './secret-hint.js';
import { signIn } from './sign-in.js';

const MASKED = /^(?:\*{4}|.{0,3}…\*{4})$/;

/** Send with `send(query)`; when the URL now names another host and the stored headers would go
 * there (409 secrets-for-new-host), ask the user, and send again with keepSecrets=true only if they agree. */
async function askBeforeMovingSecrets(send) {
  try {
    return await send('');
  } catch (error) {
    if (error.code !== 'secrets-for-new-host') throw error;
    const yes = await confirmDialog('Send the stored secrets to the new host?', error.message, { ok: 'Send them there', danger: true });
    if (!yes) throw new Error('Nothing was sent: type the headers again for the new host, or remove them.');
    return send('?keepSecrets=true');
  }
}
const SOURCES = [
  ['claude-desktop', 'Claude Desktop'], ['claude-code', 'Claude Code'], ['cursor', 'Cursor'],
  ['vscode', 'VS Code'], ['goose', 'Goose'],
];
const TRANSPORTS = [
  ['stdio', 'stdio: a local command'], ['http', 'Streamable HTTP'], ['sse', 'SSE (older servers)'],
  ['auto', 'URL: HTTP, falling back to SSE'],
];
// Keys with a field of their own; every other key of the entry is edited as JSON under "More settings".
const FORM_KEYS = ['command', 'args', 'env', 'cwd', 'url', 'headers', 'type', 'timeout', 'startupTimeout', 'protocol', 'maxMessageSize'];
const PROTOCOLS = [
  ['auto', 'auto: the initialize handshake, 2026-07-28 for a server that speaks only that'], ['handshake', 'handshake: initialize only'],
  ['modern', 'modern: 2026-07-28 only (its servers ask only by input-required rounds)'],
];

function transportOf(config) {
  if (config.command) return 'stdio';
  const type = String(config.type || '').toLowerCase().replace(/[-_]/g, '');
  if (type === 'sse') return 'sse';
  if (type === 'http' || type === 'streamablehttp') return 'http';
  return config.url ? 'auto' : 'stdio';
}

/** Key/value rows whose values are masked (password inputs) until revealed. */
function kvEditor(label, entries, { item, keyHint, valueHint, header = false, server }) {
  const list = h('div', { class: 'kv-list' });
  const rows = [];
  function addRow(key = '', value = '') {
    const k = h('input', { type: 'text', value: key, placeholder: keyHint, 'aria-label': `${item} name`, spellcheck: false, autocomplete: 'off' });
    const stored = MASKED.test(value);
    const v = h('input', { type: 'password', value, placeholder: valueHint, 'aria-label': `${item} value`, spellcheck: false, autocomplete: 'off' });
    if (stored) v.title = 'A stored secret, shown masked. Leave it to keep it; type a new value to replace it.';
    const reveal = button('Show', () => {
      const shown = v.type === 'text';
      v.type = shown ? 'password' : 'text';
      reveal.textContent = shown ? 'Show' : 'Hide';
      reveal.setAttribute('aria-pressed', String(!shown));
    }, { class: 'small', 'aria-pressed': 'false', title: 'Show or hide the value' });
    const row = h('div', { class: 'kv-row' }, k, v, reveal);
    const entry = { k, v, row };
    add(row, button('Remove', () => { row.remove(); rows.splice(rows.indexOf(entry), 1); }, { class: 'small', 'aria-label': `Remove this ${item.toLowerCase()}` }));
    if (stored) add(row, h('small', { class: 'hint kv-note' }, 'stored secret: kept unless you type a new value'));
    add(row, secretHint(k, v, { header, server, kept: (value) => MASKED.test(value) }));
    rows.push(entry);
    add(list, row);
    return entry;
  }
  for (const [key, value] of Object.entries(entries || {})) addRow(key, String(value));
  const element = h('fieldset', { class: 'kv' }, h('legend', {}, label), list,
    button(`Add ${item.toLowerCase()}`, () => addRow().k.focus(), { class: 'small' }));
  return {
    element,
    value() {
      const out = {};
      for (const { k, v } of rows) if (k.value.trim()) out[k.value.trim()] = v.value;
      return out;
    },
  };
}

/** The form part; `config` is the masked config from the API (or a pasted one). */
function serverForm({ name = '', config = {}, locked = false }) {
  const nameInput = h('input', { type: 'text', value: name, required: true, readOnly: locked, spellcheck: false, autocomplete: 'off', placeholder: 'e.g. github' });
  const transport = h('select', {}, TRANSPORTS.map(([v, label]) => h('option', { value: v }, label)));
  transport.value = transportOf(config);
  const command = h('input', { type: 'text', value: config.command || '', spellcheck: false, placeholder: 'npx' });
  const args = h('textarea', { rows: 3, spellcheck: false, placeholder: '-y\n@modelcontextprotocol/server-filesystem\n/home/me/projects' });
  args.value = (config.args || []).join('\n');
  const env = kvEditor('Environment variables', config.env, { item: 'Variable', keyHint: 'NAME', valueHint: 'value or ${VAR}', server: () => nameInput.value.trim() });
  const cwd = h('input', { type: 'text', value: config.cwd || '', spellcheck: false, placeholder: '(the folder mcpdeck runs in)' });
  const url = h('input', { type: 'url', value: config.url || '', spellcheck: false, placeholder: 'https://example.com/mcp' });
  const headers = kvEditor('Headers', config.headers, { item: 'Header', keyHint: 'Authorization', valueHint: 'Bearer ${TOKEN}', header: true, server: () => nameInput.value.trim() });
  const timeout = h('input', { type: 'number', min: 0, step: 'any', value: config.timeout ?? '', placeholder: '60', data: { key: 'timeout' } });
  const startup = h('input', { type: 'number', min: 0, step: 'any', value: config.startupTimeout ?? '', placeholder: '30', data: { key: 'startupTimeout' } });
  const protocol = h('select', { data: { key: 'protocol' } }, PROTOCOLS.map(([v, label]) => h('option', { value: v }, label)));
  protocol.value = config.protocol || 'auto';
  const maxMessage = h('input', { type: 'number', min: 1, step: 1, value: config.maxMessageSize ?? '', placeholder: String(128 * 1024 * 1024), data: { key: 'maxMessageSize' } });
  const others = Object.fromEntries(Object.entries(config).filter(([key]) => !FORM_KEYS.includes(key)));
  const more = h('textarea', { rows: 5, spellcheck: false, class: 'mono', placeholder: '{"autoApprove": ["read_*"], "tools": {"exclude": ["delete_*"]}}', data: { key: '*' } });
  more.value = Object.keys(others).length ? JSON.stringify(others, null, 2) : '';
  const stdio = h('div', { class: 'group' },
    field('Command', command, 'The program to run (found on PATH, or a full path).'),
    field('Arguments', args, 'One per line, no quoting needed.'),
    env.element,
    field('Working folder', cwd));
  const remote = h('div', { class: 'group' },
    field('URL', url, 'Secrets in the query string are shown masked.'),
    headers.element,
    locked
      ? h('p', { class: 'hint' }, 'OAuth: if this server asks you to sign in, ',
        button('Sign in', () => signIn(name), { class: 'small', title: `Sign in to ${name} in a new tab` }),
        ' (mcpdeck keeps the tokens, as `mcpdeck auth login` does).')
      : h('p', { class: 'hint' }, 'OAuth: if this server asks you to sign in, save it, then use Sign in on its row (or run ',
        h('code', {}, `mcpdeck auth login ${name || 'NAME'}`), ').'));
  function sync() {
    const isStdio = transport.value === 'stdio';
    stdio.hidden = !isStdio;
    remote.hidden = isStdio;
  }
  transport.addEventListener('change', sync);
  sync();
  const element = h('div', { class: 'server-form' },
    field('Name', nameInput, locked ? 'Names are locked: to rename, remove the server and add it again.' : 'Letters, digits, - and _. Tools are named mcp__<name>__<tool>.'),
    field('Transport', transport),
    stdio, remote,
    h('div', { class: 'row' },
      field('Request timeout (seconds)', timeout, '"timeout": how long a request may take. Empty: 60 s (progress restarts it).'),
      field('Startup timeout (seconds)', startup, '"startupTimeout": how long connecting and listing its tools may take. Empty: 30 s.')),
    h('details', { class: 'more', open: Boolean(config.protocol || config.maxMessageSize || Object.keys(others).length) },
      h('summary', {}, 'More settings'),
      field('Protocol', protocol, '"protocol": how a session is opened.'),
      field('Largest message (bytes)', maxMessage, '"maxMessageSize": the largest message read from the server. Empty: 128 MiB.'),
      field('Other settings (JSON)', more, 'The rest of the entry as the config file keeps it: "autoApprove", "tools", "roots", "oauth", "disabled"… (see docs/config.md). A stored secret stays masked: leave it to keep it.')));
  return {
    element,
    nameInput,
    /** The entry as the form has it; throws an Error that says what to fix. */
    value() {
      let out = {};
      if (more.value.trim()) {
        try { out = JSON.parse(more.value); } catch (error) { throw new Error(`Other settings: that is not JSON (${error.message}).`); }
        if (!out || typeof out !== 'object' || Array.isArray(out)) throw new Error('Other settings: give a JSON object, like {"autoApprove": ["read_*"]}.');
        const own = Object.keys(out).filter((key) => FORM_KEYS.includes(key));
        if (own.length) throw new Error(`Other settings: ${own.map((k) => `"${k}"`).join(', ')} ${own.length > 1 ? 'have fields' : 'has a field'} of its own above; set ${own.length > 1 ? 'them' : 'it'} there.`);
      }
      if (transport.value === 'stdio') {
        out.command = command.value.trim();
        const list = args.value.split('\n').map((a) => a.trim()).filter(Boolean);
        if (list.length) out.args = list;
        const e = env.value();
        if (Object.keys(e).length) out.env = e;
        if (cwd.value.trim()) out.cwd = cwd.value.trim();
      } else {
        out.url = url.value.trim();
        if (transport.value !== 'auto') out.type = transport.value;
        const hd = headers.value();
        if (Object.keys(hd).length) out.headers = hd;
      }
      if (timeout.value) out.timeout = Number(timeout.value);
      if (startup.value) out.startupTimeout = Number(startup.value);
      if (protocol.value !== 'auto') out.protocol = protocol.value;
      if (maxMessage.value) out.maxMessageSize = Number(maxMessage.value);
      return { name: nameInput.value.trim(), config: out };
    },
  };
}

function testReport(r) {
  if (r.ok) {
    return h('div', { class: 'report ok' }, h('strong', {}, `Connected: ${r.tools.length} tools in ${formatDuration(r.duration)}`),
      r.serverInfo ? h('span', { class: 'muted' }, ` · ${r.serverInfo.name} ${r.serverInfo.version || ''}`) : null,
      r.tools.length ? h('p', { class: 'tool-names' }, r.tools.join(', ')) : null);
  }
  return h('div', { class: 'report bad' }, h('strong', {}, 'It did not connect: '), r.error || r.state);
}

// ----- paste ------------------------------------------------------------------------------

/** The servers of a pasted snippet: {"mcpServers": {...}}, {"servers": {...}}, a bare {"name": {...}}, or one entry. */
export function parseSnippet(text) {
  let data;
  const trimmed = text.trim();
  if (!trimmed) throw new Error('Paste a JSON snippet first.');
  try {
    data = JSON.parse(trimmed);
  } catch (error) {
    try { data = JSON.parse(`{${trimmed.replace(/,\s*$/, '')}}`); } // a fragment: "name": {...}
    catch { throw new Error(`That is not JSON: ${error.message}`); }
  }
  if (!data || typeof data !== 'object' || Array.isArray(data)) throw new Error('Expected a JSON object.');
  if (data.mcpServers && typeof data.mcpServers === 'object') data = data.mcpServers;
  else if (data.servers && typeof data.servers === 'object' && !data.command) data = data.servers;
  if (typeof data.command === 'string' || typeof data.url === 'string') return { '': data };
  const out = {};
  for (const [name, entry] of Object.entries(data)) {
    if (!entry || typeof entry !== 'object' || Array.isArray(entry)) throw new Error(`"${name}" is not a server entry (an object with "command" or "url").`);
    if (typeof entry.command !== 'string' && typeof entry.url !== 'string') throw new Error(`"${name}" has neither "command" nor "url".`);
    out[name] = entry;
  }
  if (!Object.keys(out).length) throw new Error('No servers in that snippet.');
  return out;
}

/** A word as a shell would need it to read it back (as the API shows a command line). */
function shellWord(word) {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'"'"'`)}'`;
}

function targetOf(entry) {
  if (entry.command) return [entry.command, ...(entry.args || [])].map((w) => shellWord(String(w))).join(' ');
  return entry.url || '';
}

function pastePane(known, done, editInForm) {
  const area = h('textarea', { rows: 10, spellcheck: false, class: 'mono', placeholder: '{\n  "mcpServers": {\n    "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}\n  }\n}' });
  const out = h('div', { 'aria-live': 'polite' });
  const replace = h('input', { type: 'checkbox' });
  function read() {
    clear(out);
    let servers;
    try { servers = parseSnippet(area.value); } catch (error) { add(out, h('p', { class: 'error-text', role: 'alert' }, error.message)); return; }
    const entries = Object.entries(servers);
    if (entries.length === 1) {
      const [name, config] = entries[0];
      add(out, h('p', {}, name ? `One server, "${name}".` : 'One server entry without a name.'),
        button('Open in the form', () => editInForm(name, config), { class: 'primary' }));
      return;
    }
    const checks = entries.map(([name]) => h('input', { type: 'checkbox', checked: !known.has(name), 'aria-label': `Add ${name}` }));
    const status = entries.map(() => h('td', {}));
    add(out, h('table', { class: 'preview' }, h('thead', {}, h('tr', {}, h('th', {}, ''), h('th', {}, 'Name'), h('th', {}, 'Command / URL'), h('th', {}, ''))),
      h('tbody', {}, entries.map(([name, config], i) => h('tr', {}, h('td', {}, checks[i]), h('td', {}, name, known.has(name) ? h('small', { class: 'warn-text' }, ' (exists)') : null), h('td', {}, h('code', {}, targetOf(config))), status[i])))),
    h('label', { class: 'inline' }, replace, ' Replace servers that exist'),
    button('Add selected', async () => {
      // Each is tried first and saved only if it connects; one that does not says why, with a
      // button to save it anyway. The dialog stays open while any is left unsaved.
      const results = await Promise.all(entries.map(([name, config], i) => (checks[i].checked ? addOne(name, config, i, false) : null)));
      const added = results.filter((r) => r === true).length;
      if (added) toast(`Added ${added} server${added > 1 ? 's' : ''}`);
      if (added && !results.includes(false)) done();
    }, { class: 'primary' }));
    async function addOne(name, config, i, anyway) {
      add(clear(status[i]), anyway ? 'saving…' : 'trying…');
      try {
        const r = await post('/servers', { name, config, force: replace.checked, saveAnyway: anyway });
        status[i].textContent = r.status.state === 'connected' ? `✓ ${r.status.toolCount} tools` : `saved; ${r.status.state}: ${r.status.error || ''}`;
        checks[i].checked = false;
        return true;
      } catch (error) {
        const why = error.code === 'did-not-connect' ? `not saved: ${error.message.split('\n')[0].replace(/^.*? so it was not saved: /, '')}` : error.message;
        add(clear(status[i]), h('span', { class: 'error-text' }, `✗ ${why}`),
          error.code === 'did-not-connect' ? [' ', button('Save anyway', () => addOne(name, config, i, true), { class: 'small', 'aria-label': `Save ${name} anyway` })] : null);
        return false;
      }
    }
  }
  return h('div', {}, field('A "mcpServers" snippet (as in a README or another app\'s config)', area,
    'Both {"mcpServers": {"name": {...}}} and a bare {"name": {...}} work.'),
  button('Read it', read), out);
}

// ----- import -----------------------------------------------------------------------------

function importPane(done) {
  const source = h('select', {}, SOURCES.map(([v, label]) => h('option', { value: v }, label)));
  const path = h('input', { type: 'text', spellcheck: false, placeholder: '(where that app keeps it)' });
  const out = h('div', { 'aria-live': 'polite' });
  async function preview() {
    add(clear(out), h('p', { class: 'muted' }, 'Reading…'));
    let r;
    const body = { source: source.value, ...(path.value.trim() ? { path: path.value.trim() } : {}) };
    try { r = await post('/import/preview', body); } catch (error) { add(clear(out), h('p', { class: 'error-text', role: 'alert' }, error.message)); return; }
    clear(out);
    add(out, h('p', {}, `From ${r.path}: ${r.servers.length} server${r.servers.length === 1 ? '' : 's'}.`));
    const checks = r.servers.map((s) => h('input', { type: 'checkbox', checked: !s.exists, 'aria-label': `Import ${s.name}` }));
    if (r.servers.length) {
      add(out, h('table', { class: 'preview' }, h('thead', {}, h('tr', {}, h('th', {}, ''), h('th', {}, 'Name'), h('th', {}, 'Transport'), h('th', {}, 'Command / URL'))),
        h('tbody', {}, r.servers.map((s, i) => h('tr', {}, h('td', {}, checks[i]), h('td', {}, s.name, s.exists ? h('small', { class: 'warn-text' }, ' (exists)') : null), h('td', {}, s.transport), h('td', {}, h('code', {}, s.target)))))));
    }
    const skipped = Object.entries(r.skipped || {});
    if (skipped.length) add(out, h('p', {}, 'Skipped:'), h('ul', {}, skipped.map(([n, why]) => h('li', {}, `${n}: ${why}`))));
    for (const note of r.notes || []) add(out, h('p', { class: 'hint' }, note));
    if (!r.servers.length) return;
    const replace = h('input', { type: 'checkbox' });
    add(out, h('label', { class: 'inline' }, replace, ' Replace servers that exist'),
      button('Import selected', async () => {
        const names = r.servers.filter((_, i) => checks[i].checked).map((s) => s.name);
        if (!names.length) { toast('Nothing selected'); return; }
        try {
          const done2 = await post('/import', { ...body, names, force: replace.checked });
          toast(`Imported ${done2.imported.length} server(s)` + (Object.keys(done2.skipped).length ? `; skipped ${Object.keys(done2.skipped).join(', ')}` : ''));
          done();
        } catch (error) {
          toast(error.message, 'error');
        }
      }, { class: 'primary' }));
  }
  return h('div', {}, h('div', { class: 'row' }, field('From', source), field('Config file', path)), button('Preview', preview), out);
}

// ----- the dialog -------------------------------------------------------------------------

/** Open the dialog: {name} edits that server; otherwise it adds (tab: 'form' | 'paste' | 'import'). */
export async function openServerDialog({ name, tab = 'form', onDone = () => {} } = {}) {
  const editing = Boolean(name);
  let detail = null;
  if (editing) {
    try { detail = await get(`/servers/${seg(name)}`); } catch (error) { toast(error.message, 'error'); return; }
  }
  let known = new Set();
  try { known = new Set((await get('/servers')).servers.map((s) => s.name)); } catch { /* the add still works */ }
  const report = h('div', { class: 'report-slot', 'aria-live': 'polite' });
  let form = serverForm({ name: name || '', config: detail?.config || {}, locked: editing });
  const formSlot = h('div', {}, form.element);
  const testBtn = button('Test', test);
  const saveBtn = button(editing ? 'Save & reconnect' : 'Add & connect', () => save(), { class: 'primary' });
  const actions = [testBtn, saveBtn];
  let dialog;
  let trying = null; // the AbortController of an add being tried: closing the dialog gives it up
  function finish() { dialog.close(); onDone(); }

  function busy(on, label) {
    testBtn.disabled = on;
    saveBtn.disabled = on;
    if (label) add(clear(report), h('p', { class: 'muted' }, label));
  }
  const problem = (message) => add(clear(report), h('p', { class: 'error-text', role: 'alert' }, message));

  /** The form's entry, or null after saying what is wrong with it. */
  function entry() {
    try { return form.value(); } catch (error) { problem(error.message); return null; }
  }

  async function test() {
    const value = entry();
    if (!value) return;
    busy(true, 'Connecting to test it (nothing is saved)…');
    try {
      add(clear(report), testReport(await askBeforeMovingSecrets((q) => post(`/test${q}`, { name: value.name || 'test', config: value.config }))));
      report.scrollIntoView({ block: 'nearest' });
    } catch (error) {
      problem(error.message);
    } finally { busy(false); }
  }

  // Adding tries the server first and saves it only if it connects, as `mcpdeck add` does; if it
  // does not, the dialog says why and offers to save it anyway. Editing saves and reconnects.
  async function save(anyway = false) {
    const value = entry();
    if (!value) return;
    const { name: n, config } = value;
    if (!n) { problem('Give the server a name.'); form.nameInput.focus(); return; }
    if (editing || anyway || config.disabled) { await store(n, config); return; }
    busy(true, `Trying ${n} first: it is saved once it connects (at most ${config.startupTimeout ?? 30} s, its startup timeout). Closing this dialog gives up, and nothing is saved.`);
    trying = new AbortController();
    try {
      announce(n, (await post('/servers', { name: n, config }, { signal: trying.signal })).status);
      finish();
    } catch (error) {
      if (error.name === 'AbortError') return;
      if (error.code !== 'did-not-connect') { problem(error.message); return; }
      // The API's message ends with how a script saves it anyway; here that is the button.
      add(clear(report), h('div', { class: 'report bad', role: 'alert' },
        h('p', { class: 'error-text' }, error.message.split('\n')[0]),
        h('div', { class: 'report-actions' },
          button('Save anyway', () => save(true), { title: `Save ${n} as it is; it shows as failed until it connects` }),
          h('span', { class: 'hint' }, 'Fix it above and press Add & connect again, or save it as it is.'))));
      report.scrollIntoView({ block: 'nearest' });
    } finally {
      trying = null;
      if (dialog.open) busy(false);
    }
  }

  function announce(n, s) {
    if (s.state === 'connected' || s.state === 'disabled') toast(`${n}: ${s.state}${s.state === 'connected' ? `, ${s.toolCount} tools` : ''}`);
    else toast(`${n} was saved but is ${s.state}: ${s.error || ''}`, 'error');
  }

  /** Save and connect (an edit, or an add the user chose to save whatever happens). */
  async function store(n, config) {
    busy(true, editing ? 'Saving and reconnecting…' : 'Saving and connecting…');
    // The answer comes once the server has connected or failed, which for a slow or hanging
    // one is its whole startup timeout. Once the entry is saved (its status turns to
    // connecting) and a second has passed, the dialog closes: the row shows the rest.
    let closed = false;
    let grace = null;
    const off = on('ServerStatusChanged', (e) => {
      if (e.remote || e.server !== n || e.state !== 'connecting' || grace) return; // another replica's is not ours
      grace = setTimeout(() => { closed = true; toast(`${n}: saved, connecting…`); finish(); }, 1000);
    });
    try {
      const r = editing
        ? await askBeforeMovingSecrets((q) => put(`/servers/${seg(name)}${q}`, { config }))
        : await post('/servers', { name: n, config, saveAnyway: true });
      announce(n, r.status);
      if (!closed) finish();
    } catch (error) {
      if (closed) toast(`${n}: ${error.message}`, 'error');
      else problem(error.message);
    } finally {
      off();
      clearTimeout(grace);
      if (!closed) busy(false);
    }
  }

  let body;
  if (editing) {
    body = h('div', {}, formSlot, report);
  } else {
    const t = tabs([
      { id: 'form', label: 'Form', render: () => h('div', {}, formSlot, report) },
      { id: 'paste', label: 'Paste JSON', render: () => pastePane(known, finish, (n, config) => {
        form = serverForm({ name: n, config });
        add(clear(formSlot), form.element);
        t.select('form');
      }) },
      { id: 'import', label: 'Import from an app', render: () => importPane(finish) },
    ], tab, (id) => { saveBtn.hidden = id !== 'form'; testBtn.hidden = id !== 'form'; });
    body = t.element;
  }
  dialog = openDialog({ title: editing ? `Edit ${name}` : 'Add a server', body, actions, wide: true, onClose: () => trying?.abort() });
  dialog.dataset.id = uid('server-dialog');
  if (!editing && tab === 'form') form.nameInput.focus();
}
