// The shell: theme, nav, hash router, the event stream. Pages live in their own modules (pages.js).
import { connectEvents, signIn } from './api.js';
import { add, clear, h } from './dom.js';
import { PAGES } from './pages.js';
import { parseRoute } from './router.js';

// ----- theme ----------------------------------------------------------------------------

const THEMES = ['auto', 'light', 'dark'];
function applyTheme(theme) {
  if (theme === 'auto') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
  const btn = document.getElementById('theme');
  btn.textContent = { auto: '◐ Auto', light: '☀ Light', dark: '☾ Dark' }[theme];
  btn.setAttribute('aria-label', `Theme: ${theme} (change)`);
}
let theme = localStorage.getItem('mcpdeck-theme');
if (!THEMES.includes(theme)) theme = 'auto';
applyTheme(theme);
document.getElementById('theme').addEventListener('click', () => {
  theme = THEMES[(THEMES.indexOf(theme) + 1) % THEMES.length];
  localStorage.setItem('mcpdeck-theme', theme);
  applyTheme(theme);
});

// ----- nav and router -------------------------------------------------------------------

const nav = document.getElementById('nav');
for (const page of PAGES) {
  add(nav, h('li', {}, h('a', { href: `#/${page.id}`, data: { page: page.id } }, page.title)));
}

const main = document.getElementById('main');
let handle = null; // what the mounted page returned: a cleanup function, or {update(route), unmount()}
let currentPage = null;
let currentKey = null;

function notBuilt(page) {
  return {
    title: page.title,
    mount(root) {
      add(root, h('section', { class: 'empty' },
        h('h1', {}, page.title),
        h('p', {}, `The ${page.title} page is not part of this console yet.`),
        h('p', { class: 'muted' }, 'Its place in the navigation is kept for it.')));
    },
  };
}

function unmount() {
  if (!handle) return;
  try {
    if (typeof handle === 'function') handle();
    else if (typeof handle.unmount === 'function') handle.unmount();
  } catch (error) { console.error(error); }
  handle = null;
}

async function route() {
  const r = parseRoute();
  const page = PAGES.find((p) => p.id === r.page) || PAGES[0];
  const key = `${page.id}|${r.args.join('/')}|${r.query}`;
  if (key === currentKey) return;
  currentKey = key;
  for (const link of nav.querySelectorAll('a')) {
    if (link.dataset.page === page.id) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  const routeInfo = { ...r, page: page.id };
  // The same page with other arguments: let it update itself when it can (keeps its state).
  if (currentPage === page.id && handle && typeof handle.update === 'function') {
    handle.update(routeInfo);
    return;
  }
  unmount();
  currentPage = page.id;
  let module;
  try {
    module = page.module ? (await import(page.module)).default : notBuilt(page);
  } catch (error) {
    add(clear(main), h('p', { class: 'error' }, `The ${page.title} page failed to load: ${error.message}`));
    return;
  }
  if (currentKey !== key) return; // the user moved on meanwhile
  document.title = `${module.title} · mcpdeck`;
  clear(main);
  const root = h('div', { class: `page page-${page.id}` });
  add(main, root);
  handle = module.mount(root, routeInfo) || null;
}

function notSignedIn(why) {
  const conn = document.getElementById('conn');
  conn.dataset.state = 'lost';
  conn.textContent = 'not signed in';
  add(clear(main), h('section', { class: 'empty' },
    h('h1', {}, 'Not signed in'),
    h('p', {}, why),
    h('p', {}, 'Run ', h('code', {}, 'mcpdeck ui'), ' for this config: it opens a signed-in tab (also while ',
      h('code', {}, 'mcpdeck serve'), ' runs). A login link works once; ', h('code', {}, 'mcpdeck ui --no-browser'),
      ' prints a new one.')));
}

async function start() {
  const signedIn = await signIn();
  if (signedIn !== true) {
    notSignedIn(signedIn);
    window.addEventListener('hashchange', start, { once: true }); // a login link opened in this tab
    return;
  }
  window.addEventListener('hashchange', route);
  connectEvents();
  route();
}
start();

