// Chat: a model with every connected server's tools. The answer streams in; each tool call is a
// card with its state; approvals, elicitation forms and pages, and sampling requests are asked in
// dialogs; Stop cancels the run. Past conversations come from the history.
// Everything the model or a server says becomes text (textContent), never markup.
import { get, post, streamPost } from './api.js';
import { add, button, clear, formatDuration, formatTime, h, toast } from './dom.js';
import { askDialogs } from './asks.js';
import { navigate } from './router.js';

export default { title: 'Chat', mount };

const STATE_TEXT = {
  running: 'running', waiting: 'waiting for approval', done: 'done', error: 'error', denied: 'denied',
  stopped: 'stopped',
};

/** The readable text of a stored provider message (OpenAI, Anthropic, Gemini, Responses shapes). */
function messageText(content) {
  const parts = [];
  const walk = (item) => {
    if (item === null || item === undefined) return;
    if (typeof item === 'string') { parts.push(item); return; }
    if (Array.isArray(item)) { item.forEach(walk); return; }
    if (typeof item !== 'object') return;
    if (typeof item.text === 'string') parts.push(item.text);
    else if (typeof item.content === 'string') parts.push(item.content);
    else if (Array.isArray(item.content)) walk(item.content);
    else if (Array.isArray(item.parts)) walk(item.parts);
    for (const call of item.tool_calls || []) parts.push(`→ ${call.function ? call.function.name : call.name}`);
    if (item.type === 'tool_use' || item.type === 'function_call') parts.push(`→ ${item.name}`);
    if (item.functionCall) parts.push(`→ ${item.functionCall.name}`);
  };
  walk(content);
  return parts.join('\n');
}

function mount(root, route) {
  let chat = null; // {id, model, ...} of the open chat
  let running = false;
  let controller = null;
  const cards = new Map(); // tool call id -> card parts
  const approvals = new Map(); // ask id -> {tool, card}: approvals being asked
  let startError = null; // why the last New chat failed, shown once in the empty transcript

  // ----- the left column: model, chats, history -------------------------------------------
  const modelInput = h('input', { type: 'text', list: 'chat-models', placeholder: 'provider:model', 'aria-label': 'Model', spellcheck: false });
  const modelList = h('datalist', { id: 'chat-models' });
  const providerNote = h('p', { class: 'hint' });
  const newButton = button('New chat', () => startChat({}), { class: 'primary' });
  const chatList = h('div', { class: 'list chat-list', role: 'list', 'aria-label': 'Chats' });
  const side = h('div', { class: 'chat-side' },
    h('div', { class: 'field' }, h('label', { htmlFor: 'chat-model' }, 'Model'), modelInput, modelList),
    h('div', { class: 'toolbar' }, newButton),
    h('h2', {}, 'Conversations'), chatList,
    // The note last: it fills in when /api/chat/models answers, and must move nothing that can be clicked
    // (New chat, a conversation) under a click.
    providerNote);
  modelInput.id = 'chat-model';

  // ----- the right column: transcript and composer ----------------------------------------
  const title = h('h2', { class: 'chat-title' }, 'No chat open');
  const transcript = h('div', { class: 'transcript', role: 'log', 'aria-live': 'polite', 'aria-label': 'Conversation', tabIndex: 0 });
  const prompt = h('textarea', { rows: 3, placeholder: 'Ask something… (Enter sends, Shift+Enter for a new line)', 'aria-label': 'Message' });
  const sendButton = button('Send', () => send(), { class: 'primary' });
  const stopButton = button('Stop', () => stop(), { class: 'danger', disabled: true });
  const status = h('span', { class: 'muted', 'aria-live': 'polite' });
  const composer = h('div', { class: 'composer' }, prompt, h('div', { class: 'toolbar' }, sendButton, stopButton, status));
  const mainCol = h('div', { class: 'panel chat-main' }, title, transcript, composer);

  add(root, h('div', { class: 'page-head' }, h('h1', {}, 'Chat')), h('div', { class: 'split chat' }, side, mainCol));

  prompt.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) { event.preventDefault(); send(); }
  });

  function setRunning(value) {
    running = value;
    sendButton.disabled = value || !chat;
    stopButton.disabled = !value;
    prompt.disabled = !chat;
    status.textContent = value ? 'answering…' : '';
  }

  function scrollEnd() { transcript.scrollTop = transcript.scrollHeight; }

  function bubble(role, text = '') {
    const body = h('div', { class: 'msg-text' }, text);
    const el = h('div', { class: `msg ${role}`, data: { role } }, h('div', { class: 'msg-role' }, role === 'user' ? 'You' : role === 'assistant' ? 'Model' : role), body);
    add(transcript, el);
    scrollEnd();
    return body;
  }

  // ----- tool cards -------------------------------------------------------------------------
  function card(data) {
    const state = h('span', { class: 'card-state' });
    const progress = h('progress', { hidden: true, 'aria-label': `Progress of ${data.name}` });
    const progressText = h('span', { class: 'progress-text' });
    const result = h('pre', { class: 'card-result', hidden: true });
    const args = h('details', {}, h('summary', {}, 'Arguments'), h('pre', {}, JSON.stringify(data.arguments || {}, null, 2)));
    const el = h('div', { class: 'tool-card', role: 'group', 'aria-label': `Tool call ${data.name}`, data: { name: data.name } },
      h('div', { class: 'card-head' }, h('strong', { class: 'mono' }, data.name),
        data.server ? h('span', { class: 'badge server' }, data.server) : null, state),
      args, h('div', {}, progress, ' ', progressText), result);
    const parts = { el, state, progress, progressText, result, name: data.name };
    setCard(parts, 'running');
    const asked = [...approvals.values()].find((a) => a.tool === data.name && !a.card);
    if (asked) { asked.card = parts; setCard(parts, 'waiting'); }
    add(transcript, el);
    scrollEnd();
    return parts;
  }

  function setCard(parts, state, note = '') {
    parts.el.dataset.state = state;
    parts.state.textContent = note ? `${STATE_TEXT[state]} · ${note}` : STATE_TEXT[state];
  }

  // ----- questions (approvals, elicitation, sampling): asks.js ------------------------------
  const questions = askDialogs({
    onApproval(data) {
      // The question can come before the card (they travel apart): the card looks for it too.
      const approval = { tool: data.tool, card: [...cards.values()].reverse().find((c) => c.name === data.tool && c.el.dataset.state === 'running') };
      if (approval.card) setCard(approval.card, 'waiting');
      approvals.set(data.id, approval);
      return () => {
        approvals.delete(data.id);
        if (approval.card && approval.card.el.dataset.state === 'waiting') setCard(approval.card, 'running');
      };
    },
  });

  // ----- a run ----------------------------------------------------------------------------
  async function send() {
    const text = prompt.value.trim();
    if (!text || !chat || running) return;
    prompt.value = '';
    bubble('user', text);
    let answerText = null;
    setRunning(true);
    controller = new AbortController();
    try {
      await streamPost(`/chats/${encodeURIComponent(chat.id)}/messages`, { prompt: text }, (event, data) => {
        switch (event) {
          case 'text':
            if (!answerText) answerText = bubble('assistant');
            answerText.textContent += data.text;
            scrollEnd();
            break;
          case 'turn':
            answerText = null; // the next text is a new bubble, after the tool cards
            break;
          case 'tool-call':
            cards.set(data.id || `${data.name}-${cards.size}`, card(data));
            break;
          case 'progress': {
            const c = cards.get(data.id);
            if (!c) break;
            c.progress.hidden = false;
            if (data.total) { c.progress.max = data.total; c.progress.value = data.progress; } else c.progress.removeAttribute('value');
            c.progressText.textContent = `${data.progress}${data.total ? ` / ${data.total}` : ''} ${data.message || ''}`.trim();
            break;
          }
          case 'tool-result': {
            const c = cards.get(data.id);
            if (!c) break;
            c.progress.hidden = true;
            c.result.hidden = false;
            c.result.textContent = data.text;
            const state = data.denied ? 'denied' : data.isError ? 'error' : 'done';
            const note = [formatDuration(data.duration), data.approvedBy ? `by ${data.approvedBy}` : ''].filter(Boolean).join(' · ');
            setCard(c, state, note);
            break;
          }
          case 'tools-found':
            add(transcript, h('p', { class: 'muted note-line' }, `found tools: ${data.names.join(', ')}`));
            break;
          case 'error':
            add(transcript, h('p', { class: 'error-text', role: 'alert' }, `${data.kind === 'tool' ? 'tool error' : 'error'}: ${data.message}`));
            break;
          case 'ask':
            questions.ask(data);
            break;
          case 'ask-closed':
            questions.closed(data);
            break;
          case 'done':
            for (const c of cards.values()) if (['running', 'waiting'].includes(c.el.dataset.state)) setCard(c, 'stopped');
            if (data.reason === 'stopped') add(transcript, h('p', { class: 'muted note-line' }, 'stopped'));
            else if (data.reason === 'max_steps') add(transcript, h('p', { class: 'warn-text note-line' }, `stopped after ${data.steps} model turns; the model was still calling tools`));
            break;
          default:
            break;
        }
      }, controller.signal);
    } catch (error) {
      if (error.name !== 'AbortError') add(transcript, h('p', { class: 'error-text', role: 'alert' }, error.message));
    } finally {
      controller = null;
      setRunning(false);
      scrollEnd();
      refreshList();
    }
  }

  async function stop() {
    if (!chat) return;
    try { await post(`/chats/${encodeURIComponent(chat.id)}/stop`); } catch (error) { toast(error.message, 'error'); }
  }

  // ----- chats and past conversations ------------------------------------------------------
  async function startChat({ conversation = null }) {
    const body = { model: modelInput.value.trim() || null };
    if (conversation !== null) body.conversation = conversation;
    try {
      const made = await post('/chats', body);
      navigate('chat', [made.id]);
    } catch (error) {
      // No new chat: the page must not stay on the one that was open, or the next message
      // would go to it. The error is shown once, in the empty transcript (no toast as well).
      startError = error.message;
      if (chat) navigate('chat', []); else openChat('');
    }
  }

  // Counts what was opened (a chat, a past conversation): an opening overtaken by a later one
  // (its answers came late) stops where it is, so the page shows what was asked for last.
  let opening = 0;

  async function openChat(id) {
    const mine = ++opening;
    clear(transcript);
    cards.clear();
    chat = null;
    if (!id) {
      title.textContent = 'No chat open';
      if (startError) add(transcript, h('p', { class: 'error', role: 'alert' }, `The chat was not started: ${startError}`));
      startError = null;
      add(transcript, h('p', { class: 'muted' }, 'Pick a model and start a new chat, or open a past conversation.'));
      setRunning(false);
      return;
    }
    let chats;
    try {
      chats = await get('/chats');
    } catch (error) {
      if (mine !== opening) return;
      title.textContent = 'The chat did not open';
      add(transcript, h('p', { class: 'error', role: 'alert' }, `The chat did not open: ${error.message}`),
        h('p', { class: 'muted' }, 'Open it again from the list on the left.'));
      setRunning(false);
      return;
    }
    if (mine !== opening) return;
    chat = chats.find((c) => c.id === id) || null;
    if (!chat) {
      title.textContent = 'This chat is gone';
      add(transcript, h('p', { class: 'muted' }, 'Chats live as long as the mcpdeck process; its conversation is in the history (left).'));
      setRunning(false);
      return;
    }
    title.textContent = `${chat.title || 'New chat'} · ${chat.model}`;
    modelInput.value = chat.model;
    if (chat.conversation) await showPast(chat.conversation, false);
    if (mine !== opening) return;
    setRunning(chat.running);
    prompt.focus();
  }

  async function showPast(id, readOnly = true) {
    const mine = readOnly ? ++opening : opening;
    let found;
    try {
      found = await get(`/history/conversations/${id}`);
    } catch (error) {
      if (mine !== opening) return;
      toast(error.message, 'error');
      if (readOnly) { // not the chat that was open before any more: a message must not go to it
        chat = null;
        clear(transcript);
        title.textContent = `Conversation ${id}`;
        setRunning(false);
      }
      return;
    }
    if (mine !== opening) return;
    if (readOnly) {
      chat = null;
      clear(transcript);
      title.textContent = `Conversation ${id}`;
      setRunning(false);
      add(transcript, h('div', { class: 'toolbar' }, button('Go on with this conversation', () => startChat({ conversation: id }), { class: 'primary' })));
    }
    for (const message of found.messages) {
      if (message.role === 'error') { // why a run failed (recorded by the history, never sent to a model)
        add(transcript, h('p', { class: 'error-text past', role: 'note' }, `error: ${message.content?.message ?? ''}`));
        continue;
      }
      const text = messageText(message.content);
      if (text) add(transcript, h('div', { class: `msg ${message.role} past` }, h('div', { class: 'msg-role' }, message.role), h('div', { class: 'msg-text' }, text)));
    }
    scrollEnd();
  }

  async function refreshList() {
    let chats = [];
    let past = [];
    try { chats = await get('/chats'); } catch { chats = []; }
    try { past = (await get('/history/conversations?limit=30')).conversations; } catch { past = []; }
    const open = new Set(chats.map((c) => c.conversation).filter(Boolean));
    clear(chatList);
    for (const c of chats.slice().reverse()) {
      add(chatList, h('a', { class: 'list-item', role: 'listitem', href: `#/chat/${encodeURIComponent(c.id)}`, 'aria-current': String(chat && chat.id === c.id) },
        h('span', { class: 'title' }, c.title || 'New chat'), h('span', { class: 'desc' }, `${c.model}${c.running ? ' · answering' : ''}`)));
    }
    for (const p of past.filter((item) => !open.has(item.id))) {
      add(chatList, h('a', { class: 'list-item past', role: 'listitem', href: `#/chat/history/${p.id}` },
        h('span', { class: 'title' }, p.title || `Conversation ${p.id}`),
        h('span', { class: 'desc' }, `${p.model || ''} · ${formatTime(p.startedAt)} · ${p.messages} messages`)));
    }
    if (!chatList.childElementCount) add(chatList, h('p', { class: 'muted empty-note' }, 'No conversations yet.'));
  }

  async function loadModels() {
    try {
      const models = await get('/chat/models');
      clear(modelList);
      for (const name of models.models) add(modelList, h('option', { value: name }));
      for (const p of models.providers.filter((x) => x.ready)) add(modelList, h('option', { value: `${p.name}:` }));
      if (!modelInput.value) modelInput.value = models.default || models.models[0] || '';
      // Ready: a key where one is needed, and a local provider (Ollama …) answering (the API tries its port).
      const ready = models.providers.filter((p) => p.ready).map((p) => p.name);
      const unreachable = models.providers.filter((p) => !p.ready && p.note.startsWith('nothing answers')).map((p) => `${p.name}: ${p.note}.`);
      providerNote.textContent = ready.length ? `Ready: ${ready.join(', ')}`
        : ['No provider is ready: set OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY, start Ollama, or add "providers" to the config.', ...unreachable].join(' ');
    } catch (error) { providerNote.textContent = error.message; }
  }

  function show(r) {
    if (r.args[0] === 'history' && r.args[1]) { showPast(Number(r.args[1])); return; }
    openChat(r.args[0] || '');
  }

  loadModels();
  refreshList();
  show(route);
  return {
    update(next) { show(next); refreshList(); },
    unmount() {
      if (controller) controller.abort();
      questions.closeAll();
    },
  };
}
