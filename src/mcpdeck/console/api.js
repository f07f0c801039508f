import { add } from './dom.js';
// The REST API client and the live event stream (/api/events).
// The page is authenticated by the HttpOnly cookie the ?token= link set; the browser adds
// the Origin header to every write, which the server checks.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export async function api(method, path, body, { signal } = {}) {
  const init = { method, credentials: 'same-origin', headers: { accept: 'application/json' }, signal };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(`/api${path}`, init);
  } catch (error) {
    if (error.name === 'AbortError') throw error;
    throw new ApiError(0, 'offline', 'mcpdeck does not answer: is `mcpdeck serve` still running?');
  }
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!response.ok) {
    const err = data && data.error ? data.error : { code: 'http-error', message: `HTTP ${response.status}` };
    if (response.status === 401) {
      err.message = 'Not signed in: open the console with the link `mcpdeck serve` printed (it ends in ?token=…).';
    }
    throw new ApiError(response.status, err.code, err.message);
  }
  return data;
}

/** POST `body` to `path` and call onEvent(name, data) for each server-sent event of the answer. */
export async function streamPost(path, body, onEvent, signal) {
  const response = await fetch(`/api${path}`, {
    method: 'POST', credentials: 'same-origin', signal,
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify(body),
  });
  if (!response.ok) {
    let error = { code: 'http-error', message: `HTTP ${response.status}` };
    try { error = (await response.json()).error || error; } catch { /* not JSON */ }
    throw new ApiError(response.status, error.code, error.message);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = ''; // the line not ended yet: only each new chunk is searched, so a line of megabytes costs no more than once
  let name = 'message';
  let data = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    let from = 0;
    let cut;
    while ((cut = value.indexOf('\n', from)) >= 0) {
      const line = (buffer + value.slice(from, cut)).replace(/\r$/, '');
      buffer = '';
      from = cut + 1;
      if (line === '') {
        if (data.length) {
          let parsed = null;
          try { parsed = JSON.parse(data.join('\n')); } catch { parsed = null; }
          if (parsed !== null) onEvent(name, parsed);
        }
        name = 'message';
        data = [];
      } else if (line.startsWith('event:')) name = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    buffer += value.slice(from);
  }
}

export const get = (path, opts) => api('GET', path, undefined, opts);
export const post = (path, body = {}, opts) => api('POST', path, body, opts);
export const put = (path, body, opts) => api('PUT', path, body, opts);
export const del = (path, opts) => api('DELETE', path, undefined, opts);

/** A path segment: names of servers and tools go through this. */
export const seg = (text) => encodeURIComponent(text);

export function newCallId() {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return 'console-' + [...bytes].map((b) => b.toString(16).padStart(2, '0')).join('');
}

// ----- events ---------------------------------------------------------------------------

const TYPES = [
  'ServerStatusChanged', 'ToolsChanged', 'ToolCallStarted', 'ToolCallProgress', 'ToolCallFinished',
  'ResourcesChanged', 'PromptsChanged', 'ResourceUpdated', 'ServerLog', 'ServerRequestHandled',
  'ConfigChanged', 'ConfigReloaded', 'ConfigReloadFailed',
];
const listeners = new Map();
let source = null;
let retry = 0;
let timer = null;

/** Call fn(data) for each event of `type` ('*' for all; 'open' after each (re)connect). Returns an unsubscribe function. */
export function on(type, fn) {
  if (!listeners.has(type)) listeners.set(type, new Set());
  listeners.get(type).add(fn);
  return () => listeners.get(type).delete(fn);
}

function emit(type, data) {
  for (const key of [type, '*']) {
    for (const fn of listeners.get(key) || []) {
      try { fn(data); } catch (error) { console.error('event listener failed', error); }
    }
  }
}

function setState(state) {
  const el = document.getElementById('conn');
  if (!el) return;
  el.dataset.state = state;
  el.textContent = { live: 'live', connecting: 'connecting…', lost: 'reconnecting…' }[state];
  el.title = state === 'live' ? 'Receiving live events from mcpdeck' : 'The event stream dropped; reconnecting';
}

/** Open the event stream; when it drops, open it again (1 s, doubling, at most 15 s). */
export function connectEvents() {
  if (source) source.close();
  clearTimeout(timer);
  setState(retry ? 'lost' : 'connecting');
  source = new EventSource('/api/events');
  source.onopen = () => {
    const again = retry > 0;
    retry = 0;
    setState('live');
    emit('open', { again });
  };
  source.onerror = () => {
    // Close and retry ourselves: the browser gives up for good on some errors (e.g. a 401).
    source.close();
    source = null;
    retry += 1;
    setState('lost');
    timer = setTimeout(connectEvents, Math.min(1000 * 2 ** (retry - 1), 15000));
  };
  for (const type of TYPES) {
    source.addEventListener(type, (message) => {
      let data;
      try { data = JSON.parse(message.data); } catch { return; }
      emit(type, data);
    });
  }
}
