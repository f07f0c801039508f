import { add } from './dom.js';
// The REST API client and the live event stream (/api/events).
// The page signs in with a one-time login code (`mcpdeck ui` opens /#code=CODE; the fragment
// never reaches a server), trades it for a session token, and keeps that in sessionStorage:
// this tab and this origin (port included) only. Every request sends it as an Authorization
// header, never as a cookie, which the browser would also send to every other port on
// 127.0.0.1. The browser adds the Origin header to every write, which the server checks.

const SESSION = 'mcpdeck-session';

function authorization() {
  const token = sessionStorage.getItem(SESSION);
  return token ? { authorization: `Bearer ${token}` } : {};
}

/** Sign this tab in: spend the login code in the address (then remove it), or keep the session
 * the tab has. Resolves to true when signed in, or to a message that says why not. */
export async function signIn() {
  const match = /^#code=([A-Za-z0-9_-]+)/.exec(location.hash);
  if (match) {
    history.replaceState(null, '', `${location.pathname}#/servers`); // the code leaves the address bar at once
    let response;
    try {
      response = await fetch('/api/session', {
        method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ code: match[1] }), cache: 'no-store',
      });
    } catch {
      return 'mcpdeck does not answer: is `mcpdeck serve` still running?';
    }
    const data = await response.json().catch(() => null);
    if (response.ok && data && data.token) {
      sessionStorage.setItem(SESSION, data.token);
      return true;
    }
    if (sessionStorage.getItem(SESSION)) return true; // a spent link opened again in a tab that is signed in
    return (data && data.error && data.error.message) || `HTTP ${response.status}`;
  }
  return sessionStorage.getItem(SESSION) ? true : 'This tab is not signed in.';
}

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export async function api(method, path, body, { signal } = {}) {
  const init = { method, credentials: 'omit', headers: { accept: 'application/json', ...authorization() }, signal };
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
      err.message = 'Not signed in: run `mcpdeck ui` for this config, which opens a signed-in tab.';
    }
    throw new ApiError(response.status, err.code, err.message);
  }
  return data;
}

/** GET `path` (a whole URL path) as this tab: the Response, for a body too big to read as JSON
 * (a result's whole text); an error says why when the answer is not 2xx. */
export async function fetchSigned(path) {
  let response;
  try {
    response = await fetch(path, { credentials: 'omit', headers: authorization() });
  } catch {
    throw new ApiError(0, 'offline', 'mcpdeck does not answer: is `mcpdeck serve` still running?');
  }
  if (!response.ok) {
    let message = `HTTP ${response.status}`;
    try { message = (await response.json()).error.message; } catch { /* not JSON */ }
    throw new ApiError(response.status, 'http-error', message);
  }
  return response;
}

/** Read a server-sent event stream: onEvent(name, dataText) for each event, until it ends. */
async function readEvents(response, onEvent) {
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
        if (data.length) onEvent(name, data.join('\n'));
        name = 'message';
        data = [];
      } else if (line.startsWith('event:')) name = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    buffer += value.slice(from);
  }
}

/** POST `body` to `path` and call onEvent(name, data) for each server-sent event of the answer. */
export async function streamPost(path, body, onEvent, signal) {
  const response = await fetch(`/api${path}`, {
    method: 'POST', credentials: 'omit', signal,
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...authorization() },
    body: JSON.stringify(body),
  });
  if (!response.ok) {
    let error = { code: 'http-error', message: `HTTP ${response.status}` };
    try { error = (await response.json()).error || error; } catch { /* not JSON */ }
    throw new ApiError(response.status, error.code, error.message);
  }
  await readEvents(response, (name, text) => {
    let parsed = null;
    try { parsed = JSON.parse(text); } catch { parsed = null; }
    if (parsed !== null) onEvent(name, parsed);
  });
}

/** EventSource's use (onopen, onerror, addEventListener(type, fn) with {data}, close()) over fetch,
 * so the request carries the session's Authorization header, which EventSource cannot send.
 * Like EventSource it opens again 3 s after the stream drops, until it is closed. */
export class EventStream {
  constructor(url) {
    this.url = url;
    this.onopen = null;
    this.onerror = null;
    this.listeners = new Map();
    this.closed = false;
    this.timer = null;
    this.abort = null;
    this.run();
  }

  addEventListener(type, fn) {
    if (!this.listeners.has(type)) this.listeners.set(type, new Set());
    this.listeners.get(type).add(fn);
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    if (this.abort) this.abort.abort();
  }

  async run() {
    const abort = new AbortController();
    this.abort = abort;
    try {
      const response = await fetch(this.url, {
        credentials: 'omit', cache: 'no-store', signal: abort.signal,
        headers: { accept: 'text/event-stream', ...authorization() },
      });
      if (!response.ok) throw new ApiError(response.status, 'http-error', `HTTP ${response.status}`);
      if (this.onopen) this.onopen();
      await readEvents(response, (name, data) => {
        for (const fn of this.listeners.get(name) || []) {
          try { fn({ type: name, data }); } catch (error) { console.error('event listener failed', error); }
        }
      });
    } catch { /* a drop, a refusal or close(): said below unless closed */ }
    if (this.closed) return;
    if (this.onerror) this.onerror();
    if (!this.closed) this.timer = setTimeout(() => this.run(), 3000);
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
  source = new EventStream('/api/events');
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
