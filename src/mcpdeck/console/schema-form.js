// A form built from a JSON Schema (a tool's inputSchema): nested objects, arrays, enums,
// defaults, required marks; what it cannot draw becomes a JSON field. Each field is labelled by
// its argument's name (a schema title is help, with the description). value() gives the
// arguments object (fields left empty are left out) and the problems found, each also shown at
// its field; focusError() goes to the first.
import { add, button, h, uid } from './dom.js';

const MAX_DEPTH = 8;

function resolve(schema, root, seen = new Set()) {
  let s = schema || {};
  while (s && typeof s.$ref === 'string' && s.$ref.startsWith('#')) {
    if (seen.has(s.$ref)) return { __cycle: true };
    seen.add(s.$ref);
    let target = root;
    for (const part of s.$ref.slice(1).split('/').filter(Boolean)) target = target?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
    const { $ref: _, ...rest } = s;
    s = { ...(target || {}), ...rest };
  }
  const options = s.anyOf || s.oneOf;
  if (Array.isArray(options)) {
    const real = options.filter((o) => o && o.type !== 'null');
    if (real.length === 1) {
      const { anyOf: _a, oneOf: _o, ...rest } = s;
      return { ...resolve(real[0], root, seen), ...rest, __nullable: real.length < options.length };
    }
  }
  if (Array.isArray(s.allOf) && s.allOf.length) {
    const merged = { ...s, properties: { ...(s.properties || {}) }, required: [...(s.required || [])] };
    delete merged.allOf;
    for (const part of s.allOf) {
      const r = resolve(part, root, seen);
      Object.assign(merged.properties, r.properties || {});
      merged.required.push(...(r.required || []));
      if (!merged.type && r.type) merged.type = r.type;
    }
    return merged;
  }
  return s;
}

function typeOf(s) {
  if (Array.isArray(s.type)) return s.type.find((t) => t !== 'null') || 'string';
  if (s.type) return s.type;
  if (s.properties) return 'object';
  if (s.items) return 'array';
  if (s.enum) return 'enum';
  return 'any';
}

function jsonEditor(s, value, label) {
  const area = h('textarea', { rows: 3, class: 'mono', spellcheck: false, placeholder: 'JSON', 'aria-label': label });
  if (value !== undefined) area.value = JSON.stringify(value, null, 2);
  return {
    element: area,
    get(errors, path) {
      if (!area.value.trim()) return { set: false };
      try { return { set: true, value: JSON.parse(area.value) }; } catch (e) { errors.push(`${path}: not valid JSON (${e.message})`); return { set: false }; }
    },
  };
}

function editor(schema, root, value, path, depth, label, required) {
  const s = resolve(schema, root);
  if (s.__cycle || depth > MAX_DEPTH) return jsonEditor(s, value, label);
  const initial = value !== undefined ? value : s.default;
  if ('const' in s) {
    return { element: h('code', {}, JSON.stringify(s.const)), get: () => ({ set: true, value: s.const }) };
  }
  if (Array.isArray(s.enum)) {
    const select = h('select', { 'aria-label': label });
    if (!required || initial === undefined) add(select, h('option', { value: '' }, '—'));
    s.enum.forEach((v, i) => add(select, h('option', { value: String(i) }, typeof v === 'string' ? v : JSON.stringify(v))));
    const idx = s.enum.findIndex((v) => JSON.stringify(v) === JSON.stringify(initial));
    select.value = idx >= 0 ? String(idx) : '';
    return { element: select, get: () => (select.value === '' ? { set: false } : { set: true, value: s.enum[Number(select.value)] }) };
  }
  const type = typeOf(s);
  if (type === 'boolean') {
    if (required || initial !== undefined) {
      const box = h('input', { type: 'checkbox', checked: Boolean(initial), 'aria-label': label });
      return { element: h('span', {}, box), get: () => ({ set: true, value: box.checked }) };
    }
    const select = h('select', { 'aria-label': label }, h('option', { value: '' }, '—'), h('option', { value: 'true' }, 'true'), h('option', { value: 'false' }, 'false'));
    return { element: select, get: () => (select.value === '' ? { set: false } : { set: true, value: select.value === 'true' }) };
  }
  if (type === 'integer' || type === 'number') {
    const input = h('input', { type: 'number', step: type === 'integer' ? 1 : 'any', 'aria-label': label });
    if (s.minimum !== undefined) input.min = s.minimum;
    if (s.maximum !== undefined) input.max = s.maximum;
    if (initial !== undefined && initial !== null) input.value = String(initial);
    return {
      element: input,
      get(errors, p) {
        if (input.value === '') return { set: false };
        const n = Number(input.value);
        if (Number.isNaN(n) || (type === 'integer' && !Number.isInteger(n))) { errors.push(`${p}: must be ${type === 'integer' ? 'a whole number' : 'a number'}`); return { set: false }; }
        return { set: true, value: n };
      },
    };
  }
  if (type === 'string') {
    const long = (s.maxLength || 0) > 200 || /text|content|body|code|markdown|query/i.test(path.split('.').pop() || '');
    const input = long ? h('textarea', { rows: 3, 'aria-label': label }) : h('input', { type: 'text', 'aria-label': label, spellcheck: false });
    if (Array.isArray(s.examples) && s.examples.length) input.placeholder = String(s.examples[0]);
    else if (s.format) input.placeholder = s.format;
    if (initial !== undefined && initial !== null) input.value = String(initial);
    return { element: input, get: () => (input.value === '' && !required ? { set: false } : { set: input.value !== '', value: input.value }) };
  }
  if (type === 'object' && s.properties && Object.keys(s.properties).length) return objectEditor(s, root, initial, path, depth);
  if (type === 'array' && s.items && !Array.isArray(s.items)) return arrayEditor(s, root, initial, path, depth, label);
  return jsonEditor(s, initial, label);
}

function objectEditor(s, root, value, path, depth) {
  const required = new Set(s.required || []);
  const children = [];
  const box = h('div', { class: 'object' });
  for (const [key, prop] of Object.entries(s.properties || {})) {
    const r = resolve(prop, root);
    // Labelled by the argument's name (what the tool takes); a schema title is help beside its description.
    const label = key;
    const childPath = path ? `${path}.${key}` : key;
    const ed = editor(prop, root, value?.[key], childPath, depth + 1, label, required.has(key));
    const isGroup = ed.element.classList?.contains('object') || ed.element.classList?.contains('array');
    const id = uid('arg');
    if (!isGroup) ed.element.id = ed.element.id || id;
    const mark = required.has(key) ? h('span', { class: 'req', title: 'required' }, '*') : null;
    if (required.has(key)) ed.element.setAttribute?.('aria-required', 'true');
    // A title that only restates the name (pydantic's "Kb" for kb) is left out.
    const bare = (text) => String(text).toLowerCase().replace(/[\s_-]+/g, '');
    const title = typeof r.title === 'string' && r.title.trim() && bare(r.title) !== bare(key) ? r.title.trim() : '';
    const desc = title || r.description ? h('small', { class: 'hint', id: `${id}-d` }, title ? h('strong', { class: 'arg-title' }, title) : null,
      title && r.description ? ' — ' : null, r.description || null) : null;
    const problem = h('small', { class: 'field-error', id: `${id}-e`, hidden: true });
    if (!isGroup) ed.element.setAttribute('aria-describedby', [desc ? desc.id : null, problem.id].filter(Boolean).join(' '));
    const typeNote = h('span', { class: 'muted' }, ` ${typeLabel(r)}`);
    let wrap;
    if (isGroup) {
      wrap = h('fieldset', { data: { arg: key } }, h('legend', {}, h('span', { class: 'arg-name' }, label), mark, typeNote), desc, problem, ed.element);
    } else {
      wrap = h('div', { class: 'field', data: { arg: key } }, h('label', { htmlFor: ed.element.id }, h('span', { class: 'arg-name' }, label), mark, typeNote), ed.element, desc, problem);
    }
    add(box, wrap);
    const nested = ed.element.classList?.contains('object'); // a nested object marks its own fields
    children.push([key, ed, { wrap, problem, control: isGroup ? null : ed.element, nested }]);
  }
  function mark(field, messages) {
    field.problem.hidden = !messages.length;
    field.problem.textContent = messages.join('; ');
    field.wrap.classList.toggle('invalid', messages.length > 0);
    if (field.control) {
      if (messages.length) field.control.setAttribute('aria-invalid', 'true'); else field.control.removeAttribute('aria-invalid');
    }
  }
  return {
    element: box,
    get(errors, p) {
      const out = {};
      const mine = [];
      let any = false;
      for (const [key, ed, field] of children) {
        const childPath = p ? `${p}.${key}` : key;
        const before = mine.length;
        const r = ed.get(mine, childPath);
        const own = field.nested ? [] : mine.slice(before).map((m) => (m.startsWith(`${childPath}: `) ? m.slice(childPath.length + 2) : m));
        if (r.set) { out[key] = r.value; any = true; } else if (required.has(key)) { mine.push(`${childPath} is required`); own.push('required'); }
        mark(field, own);
      }
      // A nested object left wholly empty is left out (its parent says if it was required).
      if (!any && p !== '') return { set: false };
      errors.push(...mine);
      return { set: true, value: out };
    },
  };
}

function typeLabel(s) {
  if (Array.isArray(s.enum)) return 'one of';
  const t = typeOf(s);
  if (t === 'array') return `list of ${typeOf(resolve(s.items || {}, {}))}`;
  return t === 'any' ? 'JSON' : t;
}

function arrayEditor(s, root, value, path, depth, label) {
  const items = [];
  const list = h('div', {});
  const box = h('div', { class: 'array' }, list);
  function addItem(v) {
    const idx = items.length;
    const ed = editor(s.items, root, v, `${path}[${idx}]`, depth + 1, `${label} item ${idx + 1}`, true);
    const row = h('div', { class: 'array-item' }, ed.element);
    const entry = { ed, row };
    add(row, button('Remove', () => { row.remove(); items.splice(items.indexOf(entry), 1); }, { class: 'small', 'aria-label': `Remove this ${label} item` }));
    items.push(entry);
    add(list, row);
    return ed;
  }
  for (const v of Array.isArray(value) ? value : []) addItem(v);
  add(box, button('Add item', () => { const ed = addItem(undefined); ed.element.querySelector?.('input,select,textarea')?.focus?.(); ed.element.focus?.(); }, { class: 'small', 'aria-label': `Add an item to ${label}` }));
  return {
    element: box,
    get(errors, p) {
      const out = [];
      items.forEach(({ ed }, i) => { const r = ed.get(errors, `${p}[${i}]`); if (r.set) out.push(r.value); });
      return { set: out.length > 0 || Array.isArray(value), value: out };
    },
  };
}

/** The form for `schema`, filled from `initial`. */
export function schemaForm(schema, initial = {}) {
  const root = schema || { type: 'object' };
  const s = resolve(root, root);
  if (!s.properties || !Object.keys(s.properties).length) {
    return {
      element: h('p', { class: 'muted' }, 'This tool takes no arguments.'),
      value: () => ({ value: {}, errors: [] }),
      focusError() {},
    };
  }
  const ed = objectEditor(s, root, initial, '', 0);
  ed.element.classList.add('schema-form');
  return {
    element: ed.element,
    /** The arguments and the problems found; each problem is also shown at its field. */
    value() {
      const errors = [];
      const r = ed.get(errors, '');
      return { value: r.value || {}, errors };
    },
    /** Put the focus on the first field marked with a problem. */
    focusError() {
      const bad = ed.element.querySelector('[aria-invalid=true]') || ed.element.querySelector('.invalid input, .invalid select, .invalid textarea');
      if (bad) bad.focus();
    },
  };
}
