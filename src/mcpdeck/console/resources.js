// Resources: every server's resources and templates; read one; subscribe for live updates;
// fill a template's arguments with the server's completions.
import { get, on, post } from './api.js';
import { add, button, clear, debounce, drawKeyed, field, h, serverOrder, tabs, toast } from './dom.js';
import { resourceBody } from './content.js';
import { completingInput } from './completion.js';

export default { title: 'Resources', mount };

/** The variable names of an RFC 6570 template, with their operator. */
export function templateVariables(template) {
  const out = [];
  for (const match of template.matchAll(/\{([+#./;?&]?)([^}]+)\}/g)) {
    for (const name of match[2].split(',')) out.push({ op: match[1], name: name.replace(/[*]|:\d+$/g, '') });
  }
  return out;
}

/** Expand a template with values (simple, reserved and the common operators). */
export function expand(template, values) {
  return template.replace(/\{([+#./;?&]?)([^}]+)\}/g, (_, op, names) => {
    const parts = names.split(',').map((n) => n.replace(/[*]|:\d+$/g, '')).filter((n) => values[n] !== undefined && values[n] !== '');
    const enc = (v) => (op === '+' || op === '#' ? encodeURI(v) : encodeURIComponent(v));
    if (!parts.length) return '';
    const joined = (sep, named) => parts.map((n) => (named ? `${n}=${enc(values[n])}` : enc(values[n]))).join(sep);
    switch (op) {
      case '?': return `?${joined('&', true)}`;
      case '&': return `&${joined('&', true)}`;
      case '/': return `/${joined('/')}`;
      case '.': return `.${joined('.')}`;
      case ';': return `;${joined(';', true)}`;
      case '#': return `#${joined(',')}`;
      default: return joined(',');
    }
  });
}

function mount(root) {
  const subscribed = new Set(); // "server uri"
  const viewer = h('div', { class: 'panel' }, h('p', { class: 'muted' }, 'Pick a resource to read it, or a template to fill in.'));
  let showing = null; // {server, uri}
  const listSlot = h('div', {});
  const t = tabs([
    { id: 'resources', label: 'Resources', render: () => listSlot },
    { id: 'templates', label: 'Templates', render: () => templatesSlot },
  ]);
  const templatesSlot = h('div', {});
  const searchBox = h('input', { type: 'search', placeholder: 'Filter by name or URI', 'aria-label': 'Filter resources' });
  add(root, h('div', { class: 'page-head' }, h('h1', {}, 'Resources')), h('div', { class: 'toolbar' }, searchBox),
    h('div', { class: 'split' }, t.element, viewer));
  let data = { resources: [], templates: [] };

  function key(server, uri) { return `${server} ${uri}`; }

  async function read(server, uri, note = '') {
    showing = { server, uri };
    add(clear(viewer), h('p', { class: 'muted' }, `Reading ${uri}…`));
    try {
      const r = await post('/resources/read', { uri, server });
      if (!showing || showing.uri !== uri) return;
      const k = key(server, uri);
      const sub = button(subscribed.has(k) ? 'Unsubscribe' : 'Subscribe to changes', async () => {
        try {
          if (subscribed.has(k)) { await post('/resources/unsubscribe', { uri, server }); subscribed.delete(k); }
          else { await post('/resources/subscribe', { uri, server }); subscribed.add(k); }
          read(server, uri);
        } catch (error) { toast(error.message, 'error'); }
      }, { class: 'small', 'aria-pressed': String(subscribed.has(k)) });
      add(clear(viewer), h('h2', {}, uri), h('p', {}, h('span', { class: 'badge server' }, server), ' ', sub, ' ', h('span', { class: 'muted', 'aria-live': 'polite' }, note)),
        (r.contents || []).map((c) => h('div', {}, h('p', { class: 'hint' }, `${c.uri}${c.mimeType ? ` · ${c.mimeType}` : ''}`), resourceBody(c))));
    } catch (error) {
      add(clear(viewer), h('p', { class: 'error-text' }, error.message));
    }
  }

  // Drawn again on every list event and keystroke, touching only what changed (drawKeyed): a list
  // read again as it was keeps its elements; a server that connects late is listed after the ones
  // shown (serverOrder), so nothing moves under a click.
  const servers = []; // in the order first drawn
  const resList = h('div', { class: 'list' });
  const resEmpty = h('p', { class: 'empty', hidden: true }, 'No resources.');
  const tplList = h('div', { class: 'list' });
  const tplEmpty = h('p', { class: 'empty', hidden: true }, 'No resource templates.');
  const problem = h('p', { class: 'error-text', hidden: true });
  add(listSlot, problem, resList, resEmpty);
  add(templatesSlot, tplList, tplEmpty);
  let resDrawn = new Map();
  let tplDrawn = new Map();
  function renderLists() {
    const f = searchBox.value.toLowerCase();
    const order = serverOrder(servers, [...data.resources, ...data.templates].map((r) => r.server));
    const res = order(data.resources).filter((r) => !f || `${r.name} ${r.uri} ${r.title || ''} ${r.server}`.toLowerCase().includes(f));
    resDrawn = drawKeyed(resList, res.map((r) => ({ key: key(r.server, r.uri), look: JSON.stringify(r), build: () => h('button', { type: 'button', class: 'list-item', on: { click: () => read(r.server, r.uri) } },
      h('span', { class: 'title' }, r.title || r.name), ' ', h('span', { class: 'badge server' }, r.server),
      h('span', { class: 'desc' }, `${r.uri}${r.mimeType ? ` · ${r.mimeType}` : ''}`)) })), resDrawn);
    if (resEmpty.hidden !== Boolean(res.length)) { resEmpty.hidden = Boolean(res.length); resList.hidden = !res.length; }
    const tpl = order(data.templates).filter((r) => !f || `${r.name} ${r.uriTemplate} ${r.server}`.toLowerCase().includes(f));
    tplDrawn = drawKeyed(tplList, tpl.map((tp) => ({ key: key(tp.server, tp.uriTemplate), look: JSON.stringify(tp), build: () => h('button', { type: 'button', class: 'list-item', on: { click: () => showTemplate(tp) } },
      h('span', { class: 'title' }, tp.title || tp.name), ' ', h('span', { class: 'badge server' }, tp.server),
      h('span', { class: 'desc' }, tp.uriTemplate)) })), tplDrawn);
    if (tplEmpty.hidden !== Boolean(tpl.length)) { tplEmpty.hidden = Boolean(tpl.length); tplList.hidden = !tpl.length; }
  }
  searchBox.addEventListener('input', renderLists);

  function showTemplate(tp) {
    showing = null;
    const vars = templateVariables(tp.uriTemplate);
    const inputs = new Map();
    const preview = h('code', {});
    const update = () => { preview.textContent = expand(tp.uriTemplate, values()); };
    function values() { return Object.fromEntries([...inputs].map(([n, c]) => [n, c.input.value])); }
    for (const v of vars) {
      const c = completingInput(v.name, (value) => ({ server: tp.server, uriTemplate: tp.uriTemplate, argument: v.name, value, context: values() }));
      c.input.addEventListener('input', update);
      inputs.set(v.name, c);
    }
    add(clear(viewer), h('h2', {}, tp.uriTemplate), h('p', {}, h('span', { class: 'badge server' }, tp.server), ' ', tp.description ? h('span', { class: 'description' }, tp.description) : null),
      [...inputs].map(([n, c]) => field(n, c.input, 'Suggestions come from the server as you type.')),
      h('p', {}, 'URI: ', preview),
      button('Read', () => read(tp.server, expand(tp.uriTemplate, values())), { class: 'primary' }));
    for (const [, c] of inputs) c.input.after(c.element.querySelector('datalist'));
    update();
  }

  async function load() {
    try { data = await get('/resources'); } catch (error) { problem.textContent = error.message; problem.hidden = false; return; }
    if (!problem.hidden) problem.hidden = true;
    renderLists();
  }
  const reload = debounce(load, 300);
  const offs = [
    on('ResourcesChanged', reload),
    on('open', ({ again }) => { if (again) load(); }),
    on('ResourceUpdated', (e) => {
      if (showing && showing.server === e.server && showing.uri === e.uri) read(e.server, e.uri, `updated at ${new Date().toLocaleTimeString()}`);
    }),
  ];
  load();
  return () => {
    offs.forEach((off) => off());
    for (const k of subscribed) {
      const [server, ...rest] = k.split(' ');
      post('/resources/unsubscribe', { server, uri: rest.join(' ') }).catch(() => {});
    }
  };
}

