// DOM helpers. Everything a server sends is untrusted: it only ever becomes text
// (textContent, attribute values, input values), never markup. There is no innerHTML here.

const PROPS = new Set([
  'id', 'type', 'value', 'checked', 'disabled', 'hidden', 'title', 'placeholder', 'name',
  'htmlFor', 'min', 'max', 'step', 'rows', 'readOnly', 'required', 'selected', 'tabIndex',
  'href', 'target', 'rel', 'src', 'alt', 'controls', 'open', 'multiple', 'autocomplete', 'spellcheck', 'autofocus',
]);

/**
 * Build an element: h('button', {class: 'x', on: {click: f}}, 'text', child, [more]).
 * Strings become text nodes; null, undefined and false are skipped.
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null) continue;
    if (key === 'class') el.className = value;
    else if (key === 'text') el.textContent = String(value);
    else if (key === 'on') for (const [ev, fn] of Object.entries(value)) el.addEventListener(ev, fn);
    else if (key === 'data') for (const [k, v] of Object.entries(value)) el.dataset[k] = String(v);
    else if (key === 'attrs') for (const [k, v] of Object.entries(value)) el.setAttribute(k, String(v));
    else if (PROPS.has(key)) el[key] = value;
    else if (key.startsWith('aria-') || key === 'role' || key === 'for' || key === 'list') el.setAttribute(key, String(value));
    else throw new Error(`h(): unknown property ${key}`);
  }
  add(el, children);
  return el;
}

/** Append children to el, skipping null, undefined and false (native append would print "null"). */
export function add(el, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/**
 * A name (a server's, a tool's) as nodes that wrap only after its separators (_ - . / :), never
 * inside a word: its parts with a <wbr> between them. Use it as a child of h().
 */
export function breakable(name) {
  const out = [];
  for (const part of String(name).split(/(?<=[_\-./:])(?=[^_\-./:])/)) {
    if (out.length) out.push(document.createElement('wbr'));
    out.push(part);
  }
  return out;
}

export function clear(el) {
  el.replaceChildren();
  return el;
}

/**
 * Draw a keyed list into `container`, touching only what changed. `entries` are `{key, look, build}`:
 * an entry whose key was drawn before with the same `look` (a string: what its element shows) keeps
 * its element; another one gets `build()`. Elements are moved only where the order differs, and ones
 * no entry names are removed: a list drawn again as it was is left as it is (same nodes, no
 * mutation). `drawn` is the Map key -> {el, look} this returned last time (a new Map the first time).
 */
export function drawKeyed(container, entries, drawn) {
  const next = new Map();
  for (const { key, look, build } of entries) {
    const old = drawn.get(key);
    next.set(key, old && old.look === look ? old : { el: build(), look });
  }
  const kept = new Set([...next.values()].map((item) => item.el));
  for (const child of [...container.children]) if (!kept.has(child)) child.remove();
  if (!container.firstElementChild) { // the first draw: all at once, as one fragment
    const frag = document.createDocumentFragment();
    for (const { el } of next.values()) frag.append(el);
    container.append(frag);
    return next;
  }
  let at = container.firstElementChild;
  for (const { el } of next.values()) {
    if (el === at) at = at.nextElementSibling;
    else container.insertBefore(el, at);
  }
  return next;
}

/**
 * The order of the servers a page lists, kept while it is open: `seen` is the page's array of server
 * names in the order they were first drawn. Names in `servers` (in the API's order: the config's) not
 * in it yet are added at its end, so a server whose items come later is listed after the ones already
 * shown and moves none of them. Returns a function that sorts items by their server's place (stable:
 * a server's items keep the order the server gave).
 */
export function serverOrder(seen, servers) {
  for (const name of servers) if (!seen.includes(name)) seen.push(name);
  const place = new Map(seen.map((name, i) => [name, i]));
  return (items, serverOf = (item) => item.server) => [...items].sort((a, b) => place.get(serverOf(a)) - place.get(serverOf(b)));
}

export function button(label, onClick, props = {}) {
  return h('button', { type: 'button', ...props, on: { click: onClick, ...(props.on || {}) } }, label);
}

/** A labelled form field: <label>text <input></label> with an optional hint. */
export function field(labelText, control, hint, props = {}) {
  const id = control.id || uid('f');
  control.id = id;
  const hintEl = hint ? h('small', { class: 'hint', id: `${id}-hint` }, hint) : null;
  if (hintEl) control.setAttribute('aria-describedby', hintEl.id);
  return h('div', { class: `field ${props.class || ''}` }, h('label', { htmlFor: id }, labelText), control, hintEl);
}

let counter = 0;
export function uid(prefix = 'id') {
  counter += 1;
  return `${prefix}-${counter}`;
}

export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

export function formatTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return d.toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' });
}

export function formatDuration(seconds) {
  if (seconds === null || seconds === undefined) return '';
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 120) return `${seconds.toFixed(seconds < 10 ? 2 : 1)} s`;
  const m = Math.floor(seconds / 60);
  if (m < 120) return `${m} min`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

// ----- dialogs --------------------------------------------------------------------------

const FOCUSABLE = 'a[href], button:not([disabled]), input:not([disabled]):not([type=hidden]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"]), summary';

/**
 * A modal dialog (native <dialog>: the page behind is inert, Esc closes it).
 * Tab and Shift+Tab stay inside; focus returns where it was when the dialog closes.
 */
export function openDialog({ title, body, actions = [], wide = false, onClose }) {
  const before = document.activeElement;
  const heading = h('h2', { id: uid('dlg') }, title);
  const dialog = h('dialog', { class: wide ? 'wide' : '', 'aria-labelledby': heading.id },
    h('div', { class: 'dialog-head' }, heading,
      button('✕', () => dialog.close(), { class: 'ghost icon', 'aria-label': 'Close' })),
    h('div', { class: 'dialog-body' }, body),
    actions.length ? h('div', { class: 'dialog-actions' }, actions) : null);
  dialog.addEventListener('keydown', (event) => {
    if (event.key !== 'Tab') return;
    const items = [...dialog.querySelectorAll(FOCUSABLE)].filter((el) => el.offsetParent !== null || el === document.activeElement);
    if (!items.length) return;
    const first = items[0];
    const last = items[items.length - 1];
    if (event.shiftKey && document.activeElement === first) { last.focus(); event.preventDefault(); }
    else if (!event.shiftKey && document.activeElement === last) { first.focus(); event.preventDefault(); }
  });
  dialog.addEventListener('close', () => {
    dialog.remove();
    if (onClose) onClose(dialog.returnValue);
    if (before && before.isConnected && typeof before.focus === 'function') before.focus();
  });
  add(document.body, dialog);
  dialog.showModal();
  const auto = dialog.querySelector('[autofocus]') || dialog.querySelector('.dialog-body ' + FOCUSABLE);
  if (auto) auto.focus();
  return dialog;
}

/** Ask a yes/no question; resolves true only if the user confirmed. */
export function confirmDialog(title, message, { ok = 'OK', danger = false } = {}) {
  return new Promise((resolve) => {
    let answer = false;
    const yes = button(ok, () => { answer = true; dialog.close(); }, { class: danger ? 'danger' : 'primary' });
    const no = button('Cancel', () => dialog.close(), { autofocus: true });
    const dialog = openDialog({ title, body: h('p', {}, message), actions: [no, yes], onClose: () => resolve(answer) });
    no.focus();
  });
}

// ----- toasts ---------------------------------------------------------------------------

/** A note in the corner that goes by itself; the same message again restarts it, counted (×2), instead of stacking. */
export function toast(message, kind = 'info', ms = 5000) {
  const box = document.getElementById('toasts');
  if (!box) return;
  const text = String(message);
  const life = kind === 'error' ? ms * 2 : ms;
  const same = [...box.children].find((el) => el.toastText === text && el.dataset.kind === kind);
  if (same) {
    same.toastCount += 1;
    same.querySelector('.toast-count').textContent = ` ×${same.toastCount}`;
    clearTimeout(same.toastTimer);
    same.toastTimer = setTimeout(() => same.remove(), life);
    return;
  }
  const item = h('div', { class: `toast ${kind}`, data: { kind } }, h('span', {}, text, h('span', { class: 'toast-count' })),
    button('✕', () => item.remove(), { class: 'ghost icon', 'aria-label': 'Dismiss' }));
  item.toastText = text;
  item.toastCount = 1;
  item.toastTimer = setTimeout(() => item.remove(), life);
  add(box, item);
}

/** A small tabs widget: [{id, label, render() -> Node}] */
export function tabs(items, selected = items[0].id, onSelect = () => {}) {
  const list = h('div', { class: 'tabs', role: 'tablist' });
  const panel = h('div', { class: 'tab-panel', role: 'tabpanel' });
  const buttons = new Map();
  function select(id) {
    for (const [key, btn] of buttons) {
      btn.setAttribute('aria-selected', String(key === id));
      btn.tabIndex = key === id ? 0 : -1;
    }
    const item = items.find((it) => it.id === id);
    add(clear(panel), item.render());
    panel.setAttribute('aria-labelledby', buttons.get(id).id);
    onSelect(id);
  }
  for (const item of items) {
    const btn = h('button', { type: 'button', role: 'tab', id: uid('tab'), on: { click: () => select(item.id) } }, item.label);
    btn.addEventListener('keydown', (event) => {
      if (event.key !== 'ArrowRight' && event.key !== 'ArrowLeft') return;
      const ids = items.map((it) => it.id);
      const next = ids[(ids.indexOf(item.id) + (event.key === 'ArrowRight' ? 1 : ids.length - 1)) % ids.length];
      select(next);
      buttons.get(next).focus();
    });
    buttons.set(item.id, btn);
    add(list, btn);
  }
  select(selected);
  return { element: h('div', { class: 'tabbed' }, list, panel), select };
}
