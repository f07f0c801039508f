// MCP content from servers, shown safely: text as text (Markdown rendered by markdown.js, which
// makes elements, never markup), images and audio only as data: URLs of allowed types built from
// the base64 the server sent, links shown with their URL and never followed by themselves,
// structured content as a collapsible tree. Big content is cut to what shows at once (the rest on
// "Show all", or downloaded), so a result of megabytes never holds the page up.
import { fetchSigned } from './api.js';
import { add, button, h } from './dom.js';
import { markdown } from './markdown.js';

const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/bmp', 'image/avif']);
const AUDIO_TYPES = new Set(['audio/wav', 'audio/x-wav', 'audio/wave', 'audio/mpeg', 'audio/mp3', 'audio/ogg', 'audio/webm', 'audio/aac', 'audio/flac', 'audio/mp4']);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** A data: URL for base64 data of an allowed type, else null. */
export function dataUrl(mime, data, allowed) {
  const type = String(mime || '').toLowerCase().split(';')[0].trim();
  if (!allowed.has(type) || typeof data !== 'string') return null;
  const clean = data.replace(/\s+/g, '');
  if (!BASE64.test(clean)) return null;
  return `data:${type};base64,${clean}`;
}

/** A link to a URL a server gave: only http(s), opened on click in a new tab without referrer or opener. */
export function safeLink(url, label) {
  let parsed = null;
  try { parsed = new URL(url); } catch { parsed = null; }
  const text = h('span', { class: 'url' }, url);
  if (!parsed || !['http:', 'https:'].includes(parsed.protocol)) return text;
  return h('a', { href: parsed.href, target: '_blank', rel: 'noopener noreferrer', title: `Opens ${parsed.href} in a new tab` }, label || text);
}

function sizeOf(base64) {
  return bytes(Math.floor((base64 || '').length * 3 / 4));
}

function bytes(n) {
  return n > 1024 * 1024 ? `${(n / 1048576).toFixed(1)} MB` : n > 1024 ? `${(n / 1024).toFixed(1)} kB` : `${n} bytes`;
}

const count = (n) => n.toLocaleString('en-US');

// ----- big text -------------------------------------------------------------------------------

const SHOWN_CHARS = 20_000; // a text longer than this, or of more lines, is cut at first
const SHOWN_LINES = 200;
const CHUNK_CHARS = 32 * 1024; // "Show all" puts the text in blocks of at most this size ...
const CHUNK_LINES = 250; // ... and this many lines,
const CHUNKS_AT_ONCE = 8; // ... this many more each time the end of its box comes near

/** Where the part of `text` shown at first ends: after SHOWN_LINES lines or SHOWN_CHARS characters. */
function cutAt(text) {
  let end = Math.min(text.length, SHOWN_CHARS);
  let at = -1;
  for (let line = 0; line < SHOWN_LINES; line += 1) {
    at = text.indexOf('\n', at + 1);
    if (at < 0 || at >= end) return end;
  }
  return at + 1;
}

function lineCount(text) {
  let n = 1;
  for (let at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1)) n += 1;
  return text.endsWith('\n') ? n - 1 : n;
}

/** Save `text` as a file named `name` (a download from a blob: URL made here; nothing leaves the page). */
export function download(name, text, type = 'text/plain') {
  const url = URL.createObjectURL(new Blob([text], { type: `${type};charset=utf-8` }));
  const link = h('a', { href: url, hidden: true });
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** Where the block of `text` that starts at `from` ends: at most CHUNK_CHARS characters and CHUNK_LINES lines, at a line's end where there is one. */
function blockEnd(text, from) {
  let end = Math.min(text.length, from + CHUNK_CHARS);
  let at = from - 1;
  for (let line = 0; line < CHUNK_LINES && at < end; line += 1) {
    at = text.indexOf('\n', at + 1);
    if (at < 0) break;
  }
  if (at >= 0 && at < end) return at + 1;
  if (end < text.length) {
    const nl = text.lastIndexOf('\n', end);
    if (nl > from) end = nl + 1;
  }
  return end;
}

/**
 * The whole of `text` in a box that scrolls: blocks of it are added as the end of the box comes into
 * view (CHUNKS_AT_ONCE at a time), and each is laid out only while in view (content-visibility: auto);
 * so megabytes show without holding the page up. `onMore(shown)` is told how many characters are in.
 */
function chunked(text, cls, onMore = () => {}) {
  const box = h('div', { class: `chunked ${cls}`, tabIndex: 0, 'aria-label': 'The whole text' });
  const end = h('div', { class: 'chunk-end', 'aria-hidden': 'true' });
  let at = 0;
  const more = () => {
    for (let n = 0; n < CHUNKS_AT_ONCE && at < text.length; n += 1) {
      const next = blockEnd(text, at);
      end.before(h('pre', { class: 'chunk' }, text.slice(at, next)));
      at = next;
    }
    onMore(at);
    if (at >= text.length) { watch.disconnect(); end.remove(); }
  };
  const watch = new IntersectionObserver((seen) => { if (seen.some((e) => e.isIntersecting)) more(); }, { root: box, rootMargin: '0px 0px 600px 0px' });
  add(box, end);
  more();
  if (at < text.length) watch.observe(end);
  return box;
}

/** A link that saves what `href` answers as a file: fetched as this tab (the API wants its
 * Authorization header, which a plain link would not send), then saved from a blob: URL. */
function saveLink(href, name, label = 'Download') {
  const link = h('a', { href, class: 'button-link small', title: `Save it as ${name}` }, label);
  link.download = name;
  link.addEventListener('click', async (event) => {
    event.preventDefault();
    if (link.getAttribute('aria-busy') === 'true') return;
    link.setAttribute('aria-busy', 'true');
    const was = link.textContent;
    link.textContent = 'Downloading…';
    try {
      const blob = await (await fetchSigned(href)).blob();
      const url = URL.createObjectURL(blob);
      const save = h('a', { href: url, hidden: true });
      save.download = name;
      document.body.append(save);
      save.click();
      save.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
      link.textContent = was;
    } catch (error) {
      link.textContent = `${was} failed: ${error.message}`;
    } finally {
      link.removeAttribute('aria-busy');
    }
  });
  return link;
}

/**
 * Text as text: whole when short; else its first lines, with how much there is, "Show all" and
 * "Download". `name` is the file a download is saved as. `whole` is for text the API cut: its
 * `characters` and `lines`, `text()` that fetches it, and `href` that downloads it.
 */
export function textView(text, { cls = 'content-text', name = 'text.txt', type = 'text/plain', whole = null } = {}) {
  const value = String(text ?? '');
  const cut = whole ? value.length : cutAt(value);
  if (!whole && cut >= value.length) return h('pre', { class: cls }, value);
  const shown = h('pre', { class: `${cls} cut` }, value.slice(0, cut));
  const lines = whole ? whole.lines : lineCount(value);
  const characters = whole ? whole.characters : value.length;
  const note = h('span', { class: 'hint cut-note' },
    `Showing ${count(lineCount(value.slice(0, cut)))} of ${count(lines)} lines (${count(cut)} of ${count(characters)} characters).`);
  const box = h('div', { class: 'big-text' });
  const all = button('Show all', async () => {
    all.disabled = true;
    let full = value;
    if (whole) {
      note.textContent = `Fetching all ${count(characters)} characters…`;
      try { full = await whole.text(); } catch (error) { note.textContent = error.message; all.disabled = false; return; }
    }
    shown.replaceWith(chunked(full, cls, (done) => {
      note.textContent = done < full.length
        ? `All ${count(lines)} lines, ${count(characters)} characters: the rest comes as you scroll inside the box.`
        : `All ${count(lines)} lines, ${count(characters)} characters.`;
    }));
    all.remove();
  }, { class: 'small', title: 'Show the whole text (it scrolls in its own box)' });
  const save = whole ? saveLink(whole.href, name) : button('Download', () => download(name, value, type), { class: 'small', title: `Save it as ${name}` });
  add(box, h('div', { class: 'cut-bar' }, note, all, save), shown);
  return box;
}

// ----- resources ------------------------------------------------------------------------------

const TEXT_TYPES = /^(text\/|application\/(json|ld\+json|xml|yaml|x-yaml|toml|javascript|x-ndjson|csv|sql|graphql)\b|[^;]*\+(json|xml)\b)/i;

function isMarkdown(resource) {
  const type = String(resource.mimeType || '').toLowerCase().split(';')[0].trim();
  return type === 'text/markdown' || type === 'text/x-markdown' || (!type && /\.(md|markdown)$/i.test(String(resource.uri || '')));
}

/** A blob's bytes as UTF-8 text, or null when they are not (or not base64). */
function decodeText(base64) {
  const clean = String(base64 || '').replace(/\s+/g, '');
  if (!BASE64.test(clean)) return null;
  try {
    const raw = atob(clean);
    const data = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i += 1) data[i] = raw.charCodeAt(i);
    return new TextDecoder('utf-8', { fatal: true }).decode(data);
  } catch {
    return null;
  }
}

/** Markdown shown rendered, with its source a click away. */
function markdownView(text, name) {
  if (text.length > SHOWN_CHARS * 10) return textView(text, { name, type: 'text/markdown' }); // too big to lay out at once
  const rendered = markdown(text, safeLink);
  const source = textView(text, { name, type: 'text/markdown' });
  source.hidden = true;
  const toggle = button('Source', () => {
    const showSource = source.hidden;
    source.hidden = !showSource;
    rendered.hidden = showSource;
    toggle.setAttribute('aria-pressed', String(showSource));
  }, { class: 'small', 'aria-pressed': 'false', title: 'Show the Markdown as it was sent' });
  return h('div', { class: 'md-view' }, h('div', { class: 'md-bar' }, h('span', { class: 'hint' }, 'Markdown'), toggle), rendered, source);
}

function fileName(uri, fallback) {
  const last = String(uri || '').split(/[/?#]/).filter(Boolean).pop() || '';
  return /^[\w.-]{1,80}$/.test(last) ? last : fallback;
}

/** A resource's contents: text (Markdown rendered), a blob of text decoded, an image or audio blob of an allowed type. */
export function resourceBody(resource) {
  const name = fileName(resource.uri, 'resource.txt');
  if (typeof resource.text === 'string') return isMarkdown(resource) ? markdownView(resource.text, name) : textView(resource.text, { cls: '', name });
  if (typeof resource.blob === 'string') {
    const img = dataUrl(resource.mimeType, resource.blob, IMAGE_TYPES);
    if (img) return h('div', { class: 'content-image' }, h('img', { src: img, alt: `${resource.uri} (${resource.mimeType})` }));
    const audio = dataUrl(resource.mimeType, resource.blob, AUDIO_TYPES);
    if (audio) return h('audio', { controls: true, src: audio });
    const text = TEXT_TYPES.test(String(resource.mimeType || '')) || isMarkdown(resource) ? decodeText(resource.blob) : null;
    if (text !== null) {
      return h('div', {}, h('p', { class: 'hint' }, `Sent as base64 (${sizeOf(resource.blob)}), shown as text.`),
        isMarkdown(resource) ? markdownView(text, name) : textView(text, { cls: '', name }));
    }
    return h('p', { class: 'muted' }, `Binary data, ${resource.mimeType || 'unknown type'}, ${sizeOf(resource.blob)} (not shown).`);
  }
  return h('p', { class: 'muted' }, '(empty)');
}

/** One content block (text, image, audio, resource_link, resource). */
export function contentBlock(block) {
  switch (block.type) {
    case 'text':
      return textView(block.text ?? '', { name: 'text.txt' });
    case 'image': {
      const src = dataUrl(block.mimeType, block.data, IMAGE_TYPES);
      if (!src) return h('p', { class: 'muted' }, `An image of type ${block.mimeType || '?'} (not shown: only PNG, JPEG, GIF, WebP, BMP and AVIF are).`);
      return h('figure', { class: 'content-image' }, h('img', { src, alt: `Image from the tool (${block.mimeType}, ${sizeOf(block.data)})` }),
        h('figcaption', { class: 'hint' }, `${block.mimeType}, ${sizeOf(block.data)}`));
    }
    case 'audio': {
      const src = dataUrl(block.mimeType, block.data, AUDIO_TYPES);
      if (!src) return h('p', { class: 'muted' }, `Audio of type ${block.mimeType || '?'} (not played).`);
      return h('figure', {}, h('audio', { controls: true, src }), h('figcaption', { class: 'hint' }, `${block.mimeType}, ${sizeOf(block.data)}`));
    }
    case 'resource_link':
      return h('div', { class: 'link-card' },
        h('div', {}, h('strong', {}, block.title || block.name || 'Resource link'), block.mimeType ? h('span', { class: 'muted' }, ` · ${block.mimeType}`) : null),
        block.description ? h('div', { class: 'muted' }, block.description) : null,
        h('div', {}, safeLink(block.uri)));
    case 'resource':
      return h('div', { class: 'link-card' }, h('div', { class: 'url' }, block.resource?.uri || ''), resourceBody(block.resource || {}));
    default:
      return h('div', {}, h('p', { class: 'muted' }, `Content of type ${String(block.type)}:`), tree(block));
  }
}

const HINTS = [
  ['readOnlyHint', 'read-only', 'Does not change anything'],
  ['destructiveHint', 'destructive', 'May delete or overwrite things'],
  ['idempotentHint', 'idempotent', 'Calling it again with the same arguments has no further effect'],
  ['openWorldHint', 'open-world', 'Reaches outside systems (the web, other services)'],
];

/** A tool's annotations as badges: only the hints the server set (not destructive when read-only). */
export function badges(annotations) {
  const a = annotations || {};
  const out = h('span', { class: 'badges' });
  for (const [key, label, title] of HINTS) {
    if (a[key] === true && !(key === 'destructiveHint' && a.readOnlyHint === true)) add(out, h('span', { class: `badge ${label}`, title }, label));
  }
  return out;
}

/**
 * A JSON value as a collapsible tree (<details> per object and array). Only what is open is built:
 * the first `open` levels (while they are small), the rest when opened, a level's entries a page
 * at a time and a long string cut; so a value of megabytes shows at once. `cuts` says, by JSON
 * pointer, where the value itself was cut by the API (`entries`, `characters` in the whole).
 */
export function tree(value, { open = 2, cuts = null } = {}) {
  const root = h('ul', { class: 'tree' });
  const context = { nodes: TREE_BUDGET, open, cuts: cuts || {} };
  add(root, node(null, value, 0, '', context));
  return root;
}

const TREE_PAGE = 200; // entries of one object or array built at a time
const TREE_BUDGET = 600; // entries built at first; past them, levels open only on a click
const TREE_STRING = 2_000; // a string longer than this is cut (its whole is a click away)

const pointer = (path, key) => `${path}/${String(key).replace(/~/g, '~0').replace(/\//g, '~1')}`;

function entriesPage(list, entries, from, depth, path, context) {
  const end = Math.min(entries.length, from + TREE_PAGE);
  for (let i = from; i < end; i += 1) add(list, node(entries[i][0], entries[i][1], depth + 1, pointer(path, entries[i][0]), context));
  if (end < entries.length) {
    const more = h('li', {}, button(`Show ${count(Math.min(TREE_PAGE, entries.length - end))} more of ${count(entries.length - end)}`, () => {
      more.remove();
      entriesPage(list, entries, end, depth, path, { ...context, nodes: 0 });
    }, { class: 'small ghost' }));
    add(list, more);
  } else if (context.cuts[path]?.entries > entries.length) {
    add(list, h('li', { class: 'muted cut-note' }, `… ${count(context.cuts[path].entries - entries.length)} more not sent (Show all, or Download)`));
  }
}

function node(key, value, depth, path, context) {
  context.nodes -= 1;
  const label = key === null ? null : h('span', { class: 'key' }, `${key}: `);
  if (value !== null && typeof value === 'object') {
    const isArray = Array.isArray(value);
    const size = context.cuts[path]?.entries ?? (isArray ? value.length : Object.keys(value).length);
    const kind = isArray ? `[${count(size)}]` : `{${count(size)}}`;
    const list = h('ul', {});
    const details = h('details', {}, h('summary', {}, label, h('span', { class: 'muted' }, kind)), list);
    let built = false;
    const build = () => {
      if (built) return;
      built = true;
      entriesPage(list, isArray ? value.map((v, i) => [i, v]) : Object.entries(value), 0, depth, path, context);
    };
    if (depth < context.open && context.nodes > 0) {
      details.open = true;
      build();
    } else {
      details.addEventListener('toggle', () => { if (details.open) build(); });
    }
    return h('li', {}, details);
  }
  if (typeof value === 'string') {
    const sent = context.cuts[path]?.characters;
    const quoted = JSON.stringify(value);
    if (quoted.length <= TREE_STRING && !sent) return h('li', {}, label, h('span', { class: 'str' }, quoted));
    const cut = h('span', { class: 'str' }, `${quoted.slice(0, TREE_STRING)}…`);
    if (sent) return h('li', {}, label, cut, ' ', h('span', { class: 'muted cut-note' }, `(${count(sent)} characters; the rest not sent)`));
    const whole = button(`all ${count(value.length)} characters`, () => {
      whole.replaceWith(textView(value, { cls: 'str-text', name: `${key ?? 'value'}.txt` }));
      cut.remove();
    }, { class: 'small ghost', title: 'Show the whole string' });
    return h('li', {}, label, cut, ' ', whole);
  }
  let cls = 'null';
  let text = 'null';
  if (typeof value === 'number') { cls = 'num'; text = String(value); }
  else if (typeof value === 'boolean') { cls = 'bool'; text = String(value); }
  return h('li', {}, label, h('span', { class: cls }, text));
}

// ----- tool results ---------------------------------------------------------------------------

function sameJson(a, b) {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) if (!Object.prototype.hasOwnProperty.call(b, key) || !sameJson(a[key], b[key])) return false;
  return true;
}

/** Which text block only repeats the structured content, for a small result the API did not look at. */
function repeats(result) {
  const structured = result.structuredContent;
  const texts = (result.content || []).map((b, i) => [i, b]).filter(([, b]) => b.type === 'text' && typeof b.text === 'string');
  if (structured === null || structured === undefined || texts.length !== 1) return null;
  const [[index, block]] = texts;
  const keys = typeof structured === 'object' && !Array.isArray(structured) ? Object.keys(structured) : [];
  if (keys.length === 1 && structured[keys[0]] === block.text) return { block: index, as: 'wrapped', key: keys[0] };
  if (block.text.length > SHOWN_CHARS * 10 || !/^\s*[{[]/.test(block.text)) return null;
  try { return sameJson(JSON.parse(block.text), structured) ? { block: index, as: 'json' } : null; } catch { return null; }
}

/**
 * A tool result (the API's ToolResultOut), shown so that it never holds the page up: big text cut
 * (textView), big structures built as they open (tree). A call answered with `cut` says in `shown`
 * what the API cut; the rest is fetched from `/api/calls/{callId}/result` on "Show all", or saved
 * from there. The same text is shown once: a text block that repeats the structured content is
 * left out (said so), or the structured content when it only wraps the text.
 */
export function toolResult(result, { name = 'result' } = {}) {
  const shown = result.shown || null;
  const twice = shown ? shown.repeats : repeats(result);
  const base = result.callId ? `/api/calls/${encodeURIComponent(result.callId)}/result` : null;
  const head = h('div', { class: 'result-head' }, h('strong', {}, result.isError ? 'The tool reported an error' : 'Result'),
    h('span', {}, `${Math.round((result.duration || 0) * 1000)} ms`));
  if (shown && shown.kept && base) add(head, saveLink(`${base}?download=true`, `${name}-result.json`, 'Download all'));
  const box = h('section', { class: `result ${result.isError ? 'is-error' : ''}`, 'aria-label': 'Result' }, head);
  (result.content || []).forEach((block, index) => {
    if (twice && twice.block === index && twice.as === 'json') {
      add(box, h('p', { class: 'hint repeat-note' }, 'The text content is the structured content below, as JSON: shown once, as the tree.'));
      return;
    }
    if (block.type !== 'text') { add(box, contentBlock(block)); return; }
    const cut = shown && shown.content[String(index)];
    const part = base && `${base}/content/${index}`;
    const whole = cut && shown.kept && part ? { ...cut, href: `${part}?download=true`, text: () => fetchText(part) } : null;
    add(box, textView(block.text, { name: `${name}.txt`, whole }));
  });
  const structured = result.structuredContent;
  if (structured !== null && structured !== undefined) {
    if (twice && twice.as === 'wrapped') {
      add(box, h('p', { class: 'hint repeat-note' }, `Structured content: the text above, as "${twice.key}" (shown once).`));
    } else {
      const pruned = shown && shown.structuredContent;
      add(box, h('h3', {}, 'Structured content'));
      if (pruned && shown.kept && base) {
        const whole = { characters: pruned.characters, lines: null, href: `${base}/structured?download=true`, text: () => fetchText(`${base}/structured`) };
        const all = button('Show all', async () => {
          all.disabled = true;
          note.textContent = `Fetching all ${count(pruned.characters)} characters…`;
          try {
            treeBox.replaceWith(chunked(await whole.text(), 'content-text', () => {}));
          } catch (error) { all.disabled = false; note.textContent = error.message; return; }
          all.remove();
          note.textContent = 'All of it, as indented JSON: the rest comes as you scroll inside the box.';
        }, { class: 'small', title: 'Show the whole structured content as JSON text' });
        const note = h('span', { class: 'hint cut-note' }, `Large (${count(pruned.characters)} characters as JSON): long lists and strings are cut below.`);
        const treeBox = tree(structured, { cuts: pruned.cuts });
        add(box, h('div', { class: 'cut-bar' }, note, all, saveLink(whole.href, `${name}-structured.json`)), treeBox);
      } else {
        add(box, tree(structured));
      }
    }
  }
  if (!(result.content || []).length && (structured === null || structured === undefined)) add(box, h('p', { class: 'muted' }, '(no content)'));
  return box;
}

/** The text `path` answers, read as it arrives (a decode of megabytes in one go would hold the page up). */
async function fetchText(path) {
  const response = await fetchSigned(path);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const parts = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    parts.push(value);
  }
  return parts.join('');
}

/** Prompt messages (role + content). */
export function messages(list) {
  return h('div', { class: 'messages' }, list.map((m) => h('div', { class: 'message' },
    h('div', { class: 'role' }, m.role), Array.isArray(m.content) ? m.content.map(contentBlock) : contentBlock(m.content || {}))));
}
