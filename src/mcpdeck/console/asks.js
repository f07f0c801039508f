// Questions for the user, each in a dialog: a model's tool call to approve (the permission gate), a
// server's form or page to open (elicitation), a server's request for a model completion (sampling).
// Chat asks them during a run, the Tools page during a call; both answer with POST /api/asks/{id}.
// Everything in them that a server or a model sent is text, never markup.
import { post } from './api.js';
import { button, h, openDialog, toast } from './dom.js';
import { badges } from './content.js';
import { schemaForm } from './schema-form.js';

/**
 * The dialogs of one page. `ask(data)` opens one for an `ask` event, `closed(data)` takes it away
 * for an `ask-closed` event (the question was withdrawn, or answered elsewhere), `closeAll()` on
 * leaving. `onApproval(data)` is told when an approval opens and may return what to do when it closes.
 */
export function askDialogs({ onApproval = null } = {}) {
  const dialogs = new Map(); // ask id -> <dialog>

  async function answer(id, body) {
    try { await post(`/asks/${encodeURIComponent(id)}`, body); } catch (error) { toast(error.message, 'error'); }
  }

  function ask(data) {
    if (dialogs.has(data.id)) return;
    let answered = false;
    let dialog;
    const reply = (body) => { answered = true; answer(data.id, body); dialog.close(); };
    // Closed with Esc or ✕: the safe answer, unless the question was withdrawn meanwhile.
    const fallback = (body) => { if (!answered && !dialog.dataset.withdrawn) answer(data.id, body); };
    if (data.kind === 'approval') {
      const shown = onApproval ? onApproval(data) : null;
      const body = h('div', { class: 'ask' },
        h('p', {}, 'The model wants to call ', h('strong', { class: 'mono' }, data.tool),
          data.server ? [' on server ', h('strong', {}, data.server)] : null, '.'),
        h('div', {}, badges(data.annotations || {})),
        data.description ? h('p', { class: 'description' }, data.description) : null,
        h('h3', {}, 'Arguments'), h('pre', { class: 'ask-args' }, JSON.stringify(data.arguments || {}, null, 2)));
      dialog = openDialog({
        title: 'Allow this tool call?', body, wide: true,
        actions: [
          button('Deny', () => reply({ answer: 'deny' }), { class: 'danger' }),
          button('Always allow', () => reply({ answer: 'always' }), { title: 'Saved as an allow rule in the config file' }),
          button('Allow for this session', () => reply({ answer: 'session' })),
          button('Allow once', () => reply({ answer: 'once' }), { class: 'primary', autofocus: true }),
        ],
        onClose: () => {
          fallback({ answer: 'deny' });
          if (shown) shown();
        },
      });
    } else if (data.kind === 'elicitation' && data.mode === 'url') {
      let safe = null;
      try { safe = new URL(data.url); } catch { safe = null; }
      const openable = safe && (safe.protocol === 'https:' || safe.protocol === 'http:');
      const body = h('div', { class: 'ask' },
        h('p', {}, h('strong', {}, data.server), ' asks you to open a page:'),
        h('p', { class: 'description' }, data.message),
        h('p', { class: 'ask-host' }, 'It leads to ', h('strong', { class: 'mono' }, data.host || '(no host)')),
        h('p', { class: 'mono url' }, data.url || ''),
        openable ? null : h('p', { class: 'error-text' }, 'This is not a web address; it will not be opened.'));
      dialog = openDialog({
        title: 'Open a page?', body,
        actions: [
          button('Cancel', () => reply({ action: 'cancel' })),
          button('Decline', () => reply({ action: 'decline' })),
          button(`Open ${data.host || 'page'}`, () => {
            window.open(safe.href, '_blank', 'noopener,noreferrer');
            reply({ action: 'accept' });
          }, { class: 'primary', disabled: !openable }),
        ],
        onClose: () => fallback({ action: 'cancel' }),
      });
    } else if (data.kind === 'elicitation') {
      const form = schemaForm(data.schema || { type: 'object' });
      const problems = h('p', { class: 'error-text', role: 'alert' });
      const body = h('div', { class: 'ask' }, h('p', {}, h('strong', {}, data.server), ' asks:'),
        h('p', { class: 'description' }, data.message), form.element, problems);
      dialog = openDialog({
        title: 'A server asks you', body, wide: true,
        actions: [
          button('Cancel', () => reply({ action: 'cancel' })),
          button('Decline', () => reply({ action: 'decline' })),
          button('Submit', () => {
            const { value, errors } = form.value();
            if (errors.length) { problems.textContent = errors.length > 1 ? `${errors.length} answers need a fix (marked above).` : 'An answer needs a fix (marked above).'; form.focusError(); return; }
            reply({ action: 'accept', content: value });
          }, { class: 'primary' }),
        ],
        onClose: () => fallback({ action: 'cancel' }),
      });
    } else if (data.kind === 'sampling') {
      const body = h('div', { class: 'ask' },
        h('p', {}, h('strong', {}, data.server), ' asks the model ', h('strong', { class: 'mono' }, data.model),
          ` for an answer${data.maxTokens ? ` (at most ${data.maxTokens} tokens)` : ''}:`),
        data.systemPrompt ? h('p', { class: 'muted' }, `System: ${data.systemPrompt}`) : null,
        (data.messages || []).map((m) => h('div', { class: `msg ${m.role}` }, h('div', { class: 'msg-role' }, m.role), h('div', { class: 'msg-text' }, m.text))));
      dialog = openDialog({
        title: 'Let a server use the model?', body, wide: true,
        actions: [
          button('Deny', () => reply({ answer: 'deny' }), { class: 'danger' }),
          button('Allow', () => reply({ answer: 'approve' }), { class: 'primary' }),
        ],
        onClose: () => fallback({ answer: 'deny' }),
      });
    } else return;
    dialog.dataset.ask = data.id;
    dialogs.set(data.id, dialog);
    dialog.addEventListener('close', () => dialogs.delete(data.id));
  }

  function closed(data) {
    const dialog = dialogs.get(data.id);
    if (!dialog) return;
    dialogs.delete(data.id);
    dialog.dataset.withdrawn = '1'; // the run stopped, or it was answered elsewhere
    dialog.close();
  }

  function closeAll() {
    for (const dialog of [...dialogs.values()]) dialog.close();
  }

  return { ask, closed, closeAll };
}
