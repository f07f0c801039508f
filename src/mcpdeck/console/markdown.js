// Markdown from servers (resources of type text/markdown), rendered safely: every piece of it
// becomes elements built with h() and text nodes, never markup. Raw HTML in it stays text, links
// are made by the caller's `link(url, label)` (content.js's safeLink: http and https only, on a
// click, in a new tab, without opener), images are shown as links (the page loads nothing a
// server names). CommonMark's common part: ATX and Setext headings, paragraphs, emphasis,
// strong, inline code, fenced and indented code, block quotes, lists (nested by indent, task
// boxes shown as text), tables (GFM), rules, hard breaks.
import { add, h } from './dom.js';

const MAX_DEPTH = 8; // block quotes and lists nest at most this deep; deeper is shown as text

// The link maker of the render under way (a render is synchronous: one at a time).
let makeLink = (url) => h('span', { class: 'url' }, url);

/** The Markdown `source` as a <div class="markdown">; `link(url, label)` makes each link. */
export function markdown(source, link) {
  makeLink = link;
  const root = h('div', { class: 'markdown' });
  add(root, blocks(String(source).replace(/\r\n?/g, '\n').split('\n'), 0));
  return root;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?/;
const ITEM = /^( {0,3})([-+*]|\d{1,9}[.)])([ \t]+|$)/;
const SETEXT = /^ {0,3}(=+|-+)[ \t]*$/;
const TABLE_RULE = /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;

function blocks(lines, depth) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) { i += 1; continue; }
    let m;
    if ((m = FENCE.exec(line))) {
      const fence = m[1];
      const body = [];
      i += 1;
      while (i < lines.length && !(lines[i].trim().startsWith(fence[0].repeat(fence.length)) && !lines[i].trim().replace(new RegExp(`^\\${fence[0]}+`), '').trim())) {
        body.push(lines[i]);
        i += 1;
      }
      i += 1; // the closing fence (or the end)
      const code = h('code', {}, body.join('\n'));
      if (m[2]) code.dataset.lang = m[2];
      out.push(h('pre', { class: 'md-code' }, code));
      continue;
    }
    if (/^( {4}|\t)/.test(line)) {
      const body = [];
      while (i < lines.length && (/^( {4}|\t)/.test(lines[i]) || !lines[i].trim())) { body.push(lines[i].replace(/^( {4}|\t)/, '')); i += 1; }
      while (body.length && !body[body.length - 1].trim()) body.pop();
      out.push(h('pre', { class: 'md-code' }, h('code', {}, body.join('\n'))));
      continue;
    }
    if ((m = HEADING.exec(line))) {
      out.push(h(`h${Math.min(6, m[1].length + 1)}`, { class: 'md-h' }, inline(m[2] || '')));
      i += 1;
      continue;
    }
    if (RULE.test(line)) { out.push(h('hr', {})); i += 1; continue; }
    if (QUOTE.test(line)) {
      const body = [];
      while (i < lines.length && lines[i].trim() && (QUOTE.test(lines[i]) || body.length)) { body.push(lines[i].replace(QUOTE, '')); i += 1; }
      out.push(depth < MAX_DEPTH ? h('blockquote', {}, blocks(body, depth + 1)) : h('p', {}, body.join('\n')));
      continue;
    }
    if ((m = ITEM.exec(line))) {
      const [list, next] = listAt(lines, i, depth);
      out.push(list);
      i = next;
      continue;
    }
    if (line.includes('|') && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1]) && lines[i + 1].includes('-')) {
      const [table, next] = tableAt(lines, i);
      out.push(table);
      i = next;
      continue;
    }
    // a paragraph: up to a blank line or the start of another block
    const body = [line];
    i += 1;
    while (i < lines.length && lines[i].trim() && !FENCE.test(lines[i]) && !HEADING.test(lines[i]) && !QUOTE.test(lines[i]) && !(ITEM.test(lines[i]) && !/^\s{4}/.test(lines[i]))) {
      if (SETEXT.test(lines[i])) break;
      if (RULE.test(lines[i])) break;
      body.push(lines[i]);
      i += 1;
    }
    if (i < lines.length && SETEXT.test(lines[i]) && lines[i].trim()) {
      out.push(h(lines[i].trim()[0] === '=' ? 'h2' : 'h3', { class: 'md-h' }, inline(body.join('\n'))));
      i += 1;
      continue;
    }
    out.push(h('p', {}, inline(body.join('\n'))));
  }
  return out;
}

function listAt(lines, start, depth) {
  const first = ITEM.exec(lines[start]);
  const ordered = /\d/.test(first[2]);
  const list = h(ordered ? 'ol' : 'ul', {});
  if (ordered) {
    const n = parseInt(first[2], 10);
    if (n !== 1) list.setAttribute('start', String(n));
  }
  let i = start;
  while (i < lines.length) {
    const m = ITEM.exec(lines[i]);
    if (!m || /\d/.test(m[2]) !== ordered) break;
    const indent = m[0].length;
    const body = [lines[i].slice(indent)];
    i += 1;
    // the item goes on while lines are indented under it (or blank between such lines)
    while (i < lines.length) {
      const line = lines[i];
      if (!line.trim()) {
        if (i + 1 < lines.length && /^\s+/.test(lines[i + 1]) && lines[i + 1].search(/\S/) >= indent) { body.push(''); i += 1; continue; }
        break;
      }
      const lead = line.search(/\S/);
      if (lead >= indent || (lead >= 2 && ITEM.test(line.slice(Math.min(lead, indent))))) { body.push(line.slice(Math.min(lead, indent))); i += 1; continue; }
      if (!ITEM.test(line) && !FENCE.test(line) && !HEADING.test(line) && !QUOTE.test(line) && !RULE.test(line)) { body.push(line); i += 1; continue; } // a lazy continuation
      break;
    }
    const task = /^\[([ xX])\][ \t]+/.exec(body[0]);
    if (task) body[0] = body[0].slice(task[0].length);
    const inner = depth < MAX_DEPTH ? blocks(body, depth + 1) : [h('p', {}, body.join('\n'))];
    // a tight item is its text, not a paragraph
    const content = inner.length === 1 && inner[0].tagName === 'P' ? [...inner[0].childNodes] : inner;
    add(list, h('li', {}, task ? h('span', { class: 'md-task' }, task[1] === ' ' ? '☐ ' : '☑ ') : null, content));
  }
  return [list, i];
}

function cells(line) {
  let text = line.trim();
  if (text.startsWith('|')) text = text.slice(1);
  if (text.endsWith('|') && !text.endsWith('\\|')) text = text.slice(0, -1);
  const out = [];
  let cell = '';
  for (let i = 0; i < text.length; i += 1) {
    if (text[i] === '\\' && text[i + 1] === '|') { cell += '|'; i += 1; } else if (text[i] === '|') { out.push(cell.trim()); cell = ''; } else cell += text[i];
  }
  out.push(cell.trim());
  return out;
}

function tableAt(lines, start) {
  const head = cells(lines[start]);
  const aligns = cells(lines[start + 1]).map((c) => (c.startsWith(':') && c.endsWith(':') ? 'center' : c.endsWith(':') ? 'right' : c.startsWith(':') ? 'left' : ''));
  const cellOf = (tag, text, k) => {
    const el = h(tag, {}, inline(text));
    if (aligns[k]) el.dataset.align = aligns[k];
    return el;
  };
  const body = h('tbody', {});
  let i = start + 2;
  while (i < lines.length && lines[i].trim() && lines[i].includes('|')) {
    const row = cells(lines[i]);
    add(body, h('tr', {}, head.map((_, k) => cellOf('td', row[k] || '', k))));
    i += 1;
  }
  const table = h('table', { class: 'md-table' }, h('thead', {}, h('tr', {}, head.map((t, k) => cellOf('th', t, k)))), body);
  return [h('div', { class: 'md-table-wrap' }, table), i];
}

// ----- inline ---------------------------------------------------------------------------------

const ESCAPABLE = '\\`*_{}[]()#+-.!|<>~"\'';

/** Inline Markdown as nodes: code spans, links, autolinks, emphasis, strong, strikethrough, breaks. */
function inline(text) {
  const out = [];
  let plain = '';
  const flush = () => { if (plain) { out.push(plain); plain = ''; } };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '\\' && i + 1 < text.length && ESCAPABLE.includes(text[i + 1])) { plain += text[i + 1]; i += 2; continue; }
    if (c === '\\' && text[i + 1] === '\n') { flush(); out.push(h('br', {})); i += 2; continue; }
    if (c === '\n') {
      if (plain.endsWith('  ')) { plain = plain.replace(/ +$/, ''); flush(); out.push(h('br', {})); } else plain += '\n';
      i += 1;
      continue;
    }
    if (c === '`') {
      const run = /^`+/.exec(text.slice(i))[0];
      const end = text.indexOf(run, i + run.length);
      if (end > 0) {
        flush();
        let code = text.slice(i + run.length, end).replace(/\n/g, ' ');
        if (code.startsWith(' ') && code.endsWith(' ') && code.trim()) code = code.slice(1, -1);
        out.push(h('code', {}, code));
        i = end + run.length;
        continue;
      }
      plain += run;
      i += run.length;
      continue;
    }
    if (c === '<') {
      const auto = /^<((?:https?|mailto):[^\s<>]+)>/i.exec(text.slice(i));
      if (auto) { flush(); out.push(makeLink(auto[1], auto[1])); i += auto[0].length; continue; }
      plain += c; // raw HTML stays text
      i += 1;
      continue;
    }
    if (c === '!' && text[i + 1] === '[') {
      const link = linkAt(text, i + 1);
      if (link) { flush(); out.push(h('span', { class: 'md-image' }, '[image: ', link.label || 'no description', '] '), makeLink(link.url)); i = link.end; continue; }
    }
    if (c === '[') {
      const link = linkAt(text, i);
      if (link) {
        flush();
        const label = h('span', {}, inline(link.label));
        const made = makeLink(link.url, label);
        // A link that will not be one (not http or https) keeps its words, and shows where it pointed.
        out.push(...(made.tagName === 'A' ? [made] : [label, ' (', made, ')']));
        i = link.end;
        continue;
      }
    }
    if (c === '*' || c === '_' || c === '~') {
      const run = new RegExp(`^\\${c}+`).exec(text.slice(i))[0];
      const n = c === '~' ? 2 : Math.min(run.length, 3);
      const wordy = c === '_' && /\w/.test(text[i - 1] || '') ; // snake_case is no emphasis
      if (run.length >= (c === '~' ? 2 : 1) && !wordy && text[i + n] && !/\s/.test(text[i + n])) {
        const marker = c.repeat(n);
        const end = closing(text, i + n, marker);
        if (end > 0) {
          flush();
          const inner = inline(text.slice(i + n, end));
          if (c === '~') out.push(h('del', {}, inner));
          else if (n === 3) out.push(h('strong', {}, h('em', {}, inner)));
          else out.push(h(n === 2 ? 'strong' : 'em', {}, inner));
          i = end + n;
          continue;
        }
      }
      plain += run;
      i += run.length;
      continue;
    }
    const bare = /^https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"]/i.exec(text.slice(i));
    if (bare && !/\w/.test(text[i - 1] || '')) { flush(); out.push(makeLink(bare[0], bare[0])); i += bare[0].length; continue; }
    plain += c;
    i += 1;
  }
  flush();
  return out;
}

/** Where `marker` closes emphasis that opened before `from`: not after a space, not inside a code span. */
function closing(text, from, marker) {
  let i = from;
  while (i < text.length) {
    if (text[i] === '\\') { i += 2; continue; }
    if (text[i] === '`') {
      const run = /^`+/.exec(text.slice(i))[0];
      const end = text.indexOf(run, i + run.length);
      i = end > 0 ? end + run.length : i + run.length;
      continue;
    }
    if (text.startsWith(marker, i) && !/\s/.test(text[i - 1]) && text[i + marker.length] !== marker[0]) {
      if (marker[0] !== '_' || !/\w/.test(text[i + marker.length] || '')) return i;
    }
    i += 1;
  }
  return -1;
}

/** A link `[label](url "title")` starting at `start` (the '['), or null. */
function linkAt(text, start) {
  let depth = 0;
  let i = start;
  for (; i < text.length; i += 1) {
    if (text[i] === '\\') { i += 1; continue; }
    if (text[i] === '[') depth += 1;
    else if (text[i] === ']') { depth -= 1; if (depth === 0) break; }
  }
  if (depth !== 0 || text[i + 1] !== '(') return null;
  const rest = /^\(\s*<?([^\s()<>]*(?:\([^\s()]*\)[^\s()<>]*)*)>?(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)/.exec(text.slice(i + 1));
  if (!rest) return null;
  return { label: text.slice(start + 1, i), url: rest[1], end: i + 1 + rest[0].length };
}
