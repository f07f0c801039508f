// MCP content from servers, shown safely: text as text, images and audio only as data: URLs
// of allowed types built from the base64 the server sent, links shown with their URL and
// never followed by themselves, structured content as a collapsible tree.
import { add, h } from './dom.js';

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
  const n = Math.floor((base64 || '').length * 3 / 4);
  return n > 1024 * 1024 ? `${(n / 1048576).toFixed(1)} MB` : n > 1024 ? `${(n / 1024).toFixed(1)} kB` : `${n} bytes`;
}

/** A resource's contents (text, or an image or audio blob of an allowed type). */
export function resourceBody(resource) {
  if (typeof resource.text === 'string') return h('pre', {}, resource.text);
  if (typeof resource.blob === 'string') {
    const img = dataUrl(resource.mimeType, resource.blob, IMAGE_TYPES);
    if (img) return h('div', { class: 'content-image' }, h('img', { src: img, alt: `${resource.uri} (${resource.mimeType})` }));
    const audio = dataUrl(resource.mimeType, resource.blob, AUDIO_TYPES);
    if (audio) return h('audio', { controls: true, src: audio });
    return h('p', { class: 'muted' }, `Binary data, ${resource.mimeType || 'unknown type'}, ${sizeOf(resource.blob)} (not shown).`);
  }
  return h('p', { class: 'muted' }, '(empty)');
}

/** One content block (text, image, audio, resource_link, resource). */
export function contentBlock(block) {
  switch (block.type) {
    case 'text':
      return h('pre', { class: 'content-text' }, block.text ?? '');
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

/** A JSON value as a collapsible tree (<details> per object and array). */
export function tree(value, { open = 2 } = {}) {
  const root = h('ul', { class: 'tree' });
  add(root, node(null, value, 0, open));
  return root;
}

function node(key, value, depth, open) {
  const label = key === null ? null : h('span', { class: 'key' }, `${key}: `);
  if (value !== null && typeof value === 'object') {
    const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
    const kind = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
    const list = h('ul', {}, entries.map(([k, v]) => node(k, v, depth + 1, open)));
    return h('li', {}, h('details', { open: depth < open }, h('summary', {}, label, h('span', { class: 'muted' }, kind)), list));
  }
  let cls = 'null';
  let text = 'null';
  if (typeof value === 'string') { cls = 'str'; text = JSON.stringify(value); }
  else if (typeof value === 'number') { cls = 'num'; text = String(value); }
  else if (typeof value === 'boolean') { cls = 'bool'; text = String(value); }
  return h('li', {}, label, h('span', { class: cls }, text));
}

/** A tool result (the API's ToolResultOut). */
export function toolResult(result) {
  const box = h('section', { class: `result ${result.isError ? 'is-error' : ''}`, 'aria-label': 'Result' },
    h('div', { class: 'result-head' }, h('strong', {}, result.isError ? 'The tool reported an error' : 'Result'),
      h('span', {}, `${Math.round((result.duration || 0) * 1000)} ms`)));
  for (const block of result.content || []) add(box, contentBlock(block));
  if (result.structuredContent !== null && result.structuredContent !== undefined) {
    add(box, h('h3', {}, 'Structured content'), tree(result.structuredContent));
  }
  if (!(result.content || []).length && result.structuredContent == null) add(box, h('p', { class: 'muted' }, '(no content)'));
  return box;
}

/** Prompt messages (role + content). */
export function messages(list) {
  return h('div', { class: 'messages' }, list.map((m) => h('div', { class: 'message' },
    h('div', { class: 'role' }, m.role), Array.isArray(m.content) ? m.content.map(contentBlock) : contentBlock(m.content || {}))));
}
