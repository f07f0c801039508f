// Tools: every tool of every connected server; search; a form from its input schema that
// calls it, with live progress, cancel and the server's questions (asks.js, as Chat asks them);
// the result as text, images, audio, links and a tree, a big one cut to what shows at once.
import { ApiError, get, newCallId, on, post, seg, streamPost } from './api.js';
import { askDialogs } from './asks.js';
import { add, breakable, button, clear, debounce, drawKeyed, h, serverOrder, toast } from './dom.js';
import { badges, toolResult, tree } from './content.js';
import { navigate } from './router.js';
import { schemaForm } from './schema-form.js';

export default { title: 'Tools', mount };

const RESULT_CHARS = 20_000; // of each text block (and of the structured content as JSON) sent at once

function mount(root, route) {
  let tools = [];
  const items = new Map(); // name -> {el, haystack, tool}
  let selected = null;
  let running = null; // {callId, name, server, progress, progressText, notes}
  const questions = askDialogs();

  const search = h('input', { type: 'search', placeholder: 'Search tools by name, server or description', 'aria-label': 'Search tools', value: route.query.get('q') || '' });
  const serverFilter = h('select', { 'aria-label': 'Only the tools of one server' }, h('option', { value: '' }, 'All servers'));
  const count = h('p', { class: 'summary', 'aria-live': 'polite' });
  const list = h('div', { class: 'list', role: 'list', 'aria-label': 'Tools' });
  const detail = h('div', { class: 'panel', 'aria-live': 'off' }, h('p', { class: 'muted' }, 'Pick a tool to see its schema and call it.'));
  add(root, h('div', { class: 'page-head' }, h('h1', {}, 'Tools')),
    h('div', { class: 'toolbar' }, search, serverFilter), count,
    h('div', { class: 'split' }, list, detail));

  // ----- the list -----------------------------------------------------------------------
  // Drawn again on every change of the catalog, but only what changed is touched (drawKeyed): a
  // reload that lists the same tools leaves every element as it is. Servers keep the place they were
  // first drawn in (the config's order on the first draw): a server that connects later is listed
  // after the ones shown, so no tool moves under a click when another server's arrive.
  let drawn = new Map(); // name -> {el, look}
  const servers = []; // in the order first drawn
  function itemElement(tool) {
    return h('button', { type: 'button', class: 'list-item', role: 'listitem', data: { name: tool.name }, on: { click: () => navigate('tools', [tool.name], currentQuery()) } },
      h('span', { class: 'title' }, breakable(tool.name)), ' ', badges(tool.annotations),
      h('span', { class: 'desc' }, tool.title || tool.description || ''));
  }
  function renderList() {
    tools = serverOrder(servers, tools.map((t) => t.server))(tools);
    drawn = drawKeyed(list, tools.map((tool) => ({
      key: tool.name,
      look: JSON.stringify([tool.server, tool.title, tool.description, tool.annotations]),
      build: () => itemElement(tool),
    })), drawn);
    items.clear();
    for (const tool of tools) {
      const { el } = drawn.get(tool.name);
      markCurrent(el, Boolean(selected && selected.name === tool.name));
      items.set(tool.name, { el, tool, haystack: `${tool.name} ${tool.server} ${tool.title || ''} ${tool.description || ''}`.toLowerCase() });
    }
    const names = [...new Set(tools.map((t) => t.server))].sort();
    const keep = serverFilter.value || route.query.get('server') || '';
    if (JSON.stringify(names) !== JSON.stringify([...serverFilter.options].slice(1).map((o) => o.value))) {
      add(clear(serverFilter), h('option', { value: '' }, 'All servers'), names.map((s) => h('option', { value: s }, s)));
    }
    const value = names.includes(keep) ? keep : '';
    if (serverFilter.value !== value) serverFilter.value = value;
    applyFilter();
  }

  function markCurrent(el, current) {
    if (current && el.getAttribute('aria-current') !== 'true') el.setAttribute('aria-current', 'true');
    else if (!current && el.hasAttribute('aria-current')) el.removeAttribute('aria-current');
  }

  function applyFilter() {
    const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    const server = serverFilter.value;
    let shown = 0;
    for (const item of items.values()) {
      const visible = (!server || item.tool.server === server) && words.every((w) => item.haystack.includes(w));
      if (item.el.hidden === visible) item.el.hidden = !visible;
      if (visible) shown += 1;
    }
    const text = shown === tools.length ? `${tools.length} tools` : `${shown} of ${tools.length} tools`;
    if (count.textContent !== text) count.textContent = text;
  }
  search.addEventListener('input', applyFilter);
  serverFilter.addEventListener('change', applyFilter);

  function currentQuery() {
    const q = {};
    if (search.value) q.q = search.value;
    if (serverFilter.value) q.server = serverFilter.value;
    return q;
  }

  // ----- one tool -----------------------------------------------------------------------
  function select(name) {
    if (running) { // keep the running call on screen
      if (name !== running.name) toast(`${running.name} is still running: wait for it or cancel it first.`);
      return;
    }
    for (const item of items.values()) item.el.removeAttribute('aria-current');
    const item = name ? items.get(name) : null;
    selected = item ? item.tool : null;
    if (!name) { add(clear(detail), h('p', { class: 'muted' }, 'Pick a tool to see its schema and call it.')); return; }
    if (!item) { add(clear(detail), h('p', { class: 'muted' }, `No tool named ${name} (its server may be down).`)); return; }
    item.el.setAttribute('aria-current', 'true');
    showTool(item.tool);
  }

  function showTool(tool) {
    let jsonMode = false;
    let form = schemaForm(tool.inputSchema);
    const formSlot = h('div', {}, form.element);
    const jsonArea = h('textarea', { rows: 8, class: 'mono', spellcheck: false, 'aria-label': 'Arguments as JSON' });
    const toggle = button('JSON', () => {
      if (!jsonMode) {
        jsonArea.value = JSON.stringify(form.value().value, null, 2);
        add(clear(formSlot), jsonArea);
      } else {
        let initial;
        try { initial = JSON.parse(jsonArea.value || '{}'); } catch (error) { problems.textContent = `Not valid JSON: ${error.message}`; return; }
        form = schemaForm(tool.inputSchema, initial);
        add(clear(formSlot), form.element);
      }
      jsonMode = !jsonMode;
      toggle.setAttribute('aria-pressed', String(jsonMode));
      problems.textContent = '';
    }, { class: 'small', 'aria-pressed': 'false', title: 'Edit the arguments as JSON' });
    const problems = h('div', { class: 'error-text', role: 'alert' });
    const callBtn = button('Call', call, { class: 'primary' });
    const cancelBtn = button('Cancel', cancel, { hidden: true });
    const progress = h('progress', { hidden: true, max: 1 });
    const progressText = h('span', { class: 'progress-text', 'aria-live': 'polite' });
    const notes = h('div', { class: 'call-notes', 'aria-live': 'polite' });
    const resultSlot = h('div', {});
    const schemaBox = h('details', {}, h('summary', {}, 'Input schema'), tree(tool.inputSchema, { open: 1 }));
    add(clear(detail), 
      h('h2', {}, tool.name),
      h('p', {}, h('span', { class: 'badge server' }, tool.server), ' ', h('span', { class: 'muted' }, `tool “${tool.tool}”`), ' ', badges(tool.annotations)),
      tool.title ? h('p', {}, h('strong', {}, tool.title)) : null,
      h('p', { class: 'description' }, tool.description || '(no description)'),
      h('div', { class: 'page-head' }, h('h3', {}, 'Arguments'), h('div', { class: 'actions' }, toggle)),
      formSlot, problems,
      h('div', { class: 'call-bar' }, callBtn, cancelBtn, progress, progressText), notes,
      resultSlot, schemaBox,
      tool.outputSchema ? h('details', {}, h('summary', {}, 'Output schema'), tree(tool.outputSchema, { open: 1 })) : null);

    async function call() {
      problems.textContent = '';
      let args;
      if (jsonMode) {
        try { args = JSON.parse(jsonArea.value || '{}'); } catch (error) { clear(resultSlot); problems.textContent = `Not valid JSON: ${error.message}`; return; }
      } else {
        const { value, errors } = form.value();
        if (errors.length) { clear(resultSlot); problems.textContent = errors.length > 1 ? `${errors.length} arguments need a fix (marked above).` : 'An argument needs a fix (marked above).'; form.focusError(); return; }
        args = value;
      }
      const callId = newCallId();
      running = { callId, name: tool.name, server: tool.server, progress, progressText, notes };
      callBtn.disabled = true;
      cancelBtn.hidden = false;
      progress.hidden = false;
      progress.removeAttribute('value'); // indeterminate until the first progress
      progressText.textContent = 'Running…';
      clear(resultSlot);
      clear(notes);
      const started = performance.now();
      try {
        // The call's own stream: its progress, and the server's questions (a form, a page to open, a
        // completion to allow) shown as Chat shows them; then its result or its error.
        let end = null;
        // `cut`: a big result comes cut to what shows at once; the rest stays with the API (content.js).
        await streamPost(`/tools/${seg(tool.name)}/call`, { arguments: args, callId, cut: RESULT_CHARS }, (event, data) => {
          if (event === 'progress') showProgress(data);
          else if (event === 'ask') questions.ask(data);
          else if (event === 'ask-closed') questions.closed(data);
          else if (event === 'result' || event === 'error') end = { event, data };
        });
        if (!end) throw new ApiError(0, 'offline', 'The call ended without an answer: is `mcpdeck serve` still running?');
        if (end.event === 'error') throw new ApiError(end.data.status, end.data.error.code, end.data.error.message);
        add(clear(resultSlot), toolResult(end.data, { name: tool.tool }));
        progressText.textContent = '';
      } catch (error) {
        const cancelled = error instanceof ApiError && error.code === 'cancelled';
        progressText.textContent = cancelled ? `Cancelled after ${((performance.now() - started) / 1000).toFixed(1)} s` : '';
        if (!cancelled) add(resultSlot, h('div', { class: 'result is-error', role: 'alert' }, h('strong', {}, 'The call failed: '), error.message));
      } finally {
        running = null;
        callBtn.disabled = false;
        cancelBtn.hidden = true;
        progress.hidden = true;
      }
    }

    async function cancel() {
      if (!running) return;
      cancelBtn.disabled = true;
      try { await post(`/calls/${seg(running.callId)}/cancel`); } catch (error) { toast(error.message, 'error'); } finally { cancelBtn.disabled = false; }
    }
  }

  // ----- data and events ----------------------------------------------------------------
  async function load() {
    try {
      tools = await get('/tools');
    } catch (error) {
      add(clear(list), h('p', { class: 'error-text' }, error.message));
      return;
    }
    const before = selected ? JSON.stringify(selected) : null;
    renderList();
    const wanted = route.args[0] || (selected && selected.name);
    if (!wanted || running) return;
    const now = items.get(wanted);
    // A reload that left the shown tool as it was keeps its form (and what was typed in it).
    if (now && before === JSON.stringify(now.tool) && detail.querySelector('h2')?.textContent === wanted) {
      selected = now.tool;
      markCurrent(now.el, true);
      return;
    }
    select(wanted);
  }
  const reload = debounce(load, 300);

  const offs = [
    on('ToolsChanged', reload),
    on('open', ({ again }) => { if (again) load(); }),
    // A server's question that could not be asked (sampling with no model set up, a handler that
    // failed) is said under the call, whatever the server makes of the refusal.
    on('ServerRequestHandled', (e) => {
      if (!running || e.server !== running.server || !['refused', 'error'].includes(e.outcome)) return;
      add(running.notes, h('p', { class: 'warn-text' }, `${e.server} asked for ${e.kind === 'sampling' ? 'a model completion (sampling)' : e.kind}: ${e.outcome}${e.detail ? ` — ${e.detail}` : ''}`));
    }),
  ];

  function showProgress(e) {
    if (!running) return;
    if (e.total) { running.progress.max = e.total; running.progress.value = e.progress; }
    const pct = e.total ? ` (${Math.round((100 * e.progress) / e.total)}%)` : '';
    running.progressText.textContent = `${e.message || `progress ${e.progress}${e.total ? ` of ${e.total}` : ''}`}${pct}`;
  }
  load();
  return {
    update(next) {
      route = next;
      if (next.query.get('server') !== null && next.query.get('server') !== serverFilter.value && !next.args[0]) { serverFilter.value = next.query.get('server'); applyFilter(); }
      select(next.args[0] || null);
    },
    // A call still running goes on (its questions are still asked); its result is not shown.
    unmount() { offs.forEach((off) => off()); },
  };
}

