// Sign in to a remote server that asks for OAuth, from the console: the API hands out the
// authorization URL, which opens in a tab of this browser; the authorization server sends that
// tab back to mcpdeck's listener, the tokens are stored and the server reconnects.
import { ApiError, seg, streamPost } from './api.js';
import { button, h, openDialog, toast } from './dom.js';

/** True for a server whose error asks for a sign-in. */
export function needsSignIn(status) {
  return Boolean(status.error) && /needs authorization|oauth|authori[sz]/i.test(status.error)
    && ['failed', 'reconnecting', 'stopped'].includes(status.state);
}

function webPage(url) {
  try { return ['http:', 'https:'].includes(new URL(url).protocol); } catch { return false; }
}

/**
 * Sign in to `name`. Resolves with the `signed-in` data, or null when cancelled or failed
 * (the dialog and a toast say which). Call it from a click: the tab is opened right away,
 * so the browser does not block it.
 */
export function signIn(name) {
  let tab = window.open('about:blank', '_blank');
  if (tab) tab.opener = null;
  const abort = new AbortController();
  const text = h('p', {}, 'Asking the server where to sign in…');
  const link = h('p', { hidden: true });
  const cancel = button('Cancel', () => dialog.close());
  const dialog = openDialog({
    title: `Sign in to ${name}`,
    body: h('div', { class: 'sign-in' }, text, link,
      h('p', { class: 'hint' }, 'mcpdeck keeps the tokens (as `mcpdeck auth login` does) and reconnects the server with them.')),
    actions: [cancel],
    onClose: () => abort.abort(),
  });
  // The tab is not this page's to close (its opener link is cut, so the sign-in page cannot
  // reach back into the console); mcpdeck's page at the end of the sign-in closes it.
  const close = () => { if (dialog.open) dialog.close(); };

  const run = async () => {
    let result = null;
    await streamPost(`/servers/${seg(name)}/sign-in`, {}, (kind, data) => {
      if (kind === 'authorize') {
        if (!webPage(data.url)) throw new ApiError(0, 'bad-url', 'the server gave an authorization URL that is not a web page');
        const where = new URL(data.url).host;
        if (tab && !tab.closed) {
          tab.location.href = data.url;
          text.textContent = `A tab opened at ${where}: sign in there. The tab and this dialog close by themselves when you are done.`;
        } else {
          text.textContent = `Your browser blocked the new tab. Open the sign-in page at ${where}:`;
          link.replaceChildren(h('a', { href: data.url, target: '_blank', rel: 'noopener noreferrer' }, 'Open the sign-in page'));
          link.hidden = false;
          tab = null;
        }
      } else if (kind === 'signed-in') {
        result = data;
      } else if (kind === 'error') {
        throw new ApiError(0, data.code || 'error', data.message || 'the sign-in failed');
      }
    }, abort.signal);
    return result;
  };

  return run().then((data) => {
    close();
    if (data) {
      const scopes = data.scopes && data.scopes.length ? ` (${data.scopes.join(' ')})` : '';
      toast(data.authorized ? `Signed in to ${name}${scopes}: ${data.tools} tools.` : `${name} did not ask for a sign-in: ${data.tools} tools.`);
    }
    return data;
  }, (error) => {
    if (error.name === 'AbortError') return null;
    close();
    toast(`Sign-in to ${name} failed: ${error.message}`, 'error', 10000);
    return null;
  });
}
