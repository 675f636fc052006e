// The chat page's entry module (served as /ui/main.js): owns the conversation store and the one reply
// that may be streaming at a time, and wires the header, sidebar, settings, message list and composer.
// Contract: every state change goes through render() or MessageList.update(); the store is saved after
// each user action and when a reply ends (not per token: localStorage writes are synchronous).

import { Api } from './api.js';
import { streamReply } from './chat.js';
import { Composer } from './composer.js';
import { byId, h } from './dom.js';
import { Header, setupTheme } from './header.js';
import { Settings } from './settings.js';
import { renderSidebar } from './sidebar.js';
import { Store, type Attachment, type Conversation, type Message } from './store.js';
import { MessageList, copyText } from './view.js';

interface Generation {
  conv: Conversation;
  reply: Message;
  ctl: AbortController;
}

const api = new Api(document.baseURI, localStorage);
const store = new Store(localStorage);
store.load();
let gen: Generation | null = null;

const app = byId('app', HTMLElement);
const messagesRoot = byId('messages', HTMLElement);
const toast = byId('toast', HTMLElement);
const header = new Header(api, () => render());
const messages = new MessageList(messagesRoot, { resend, regenerate });
const settings = new Settings(() => save());
const composer = new Composer(api, { send, stop, notify });

function save(): void {
  if (!store.save()) notify('Browser storage is full: delete old conversations to keep new messages.');
}

let toastTimer = 0;
function notify(message: string): void {
  toast.textContent = message;
  toast.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = window.setTimeout(() => (toast.hidden = true), 6000);
}

function emptyState(): HTMLElement {
  return h(
    'div',
    { class: 'empty' },
    h('h1', {}, header.modelId ?? 'ERNIE 4.5'),
    h('p', {}, '有什么可以帮您？ Ask anything — replies stream from this server.'),
    h('p', { class: 'hint' }, 'Enter sends · Shift+Enter new line · Esc stops a reply · ⚙ for system prompt and sampling'),
  );
}

function render(): void {
  const c = store.active!;
  settings.bind(c);
  renderSidebar(byId('conv-list', HTMLElement), store, gen?.conv.id ?? null, { select, changed: () => (save(), render()) });
  messages.render(c, gen !== null, emptyState());
  composer.setBusy(gen !== null);
  document.title = `${c.title} · ernie-edge`;
}

function select(id: string): void {
  store.activeId = id;
  app.classList.remove('sidebar-open');
  save();
  render();
  composer.focus();
}

function send(text: string, files: Attachment[]): void {
  const c = store.active!;
  c.messages.push({ role: 'user', content: text, ...(files.length ? { files } : {}) });
  void run(c);
}

function regenerate(): void {
  const c = store.active!;
  if (gen || c.messages.length === 0) return;
  if (c.messages[c.messages.length - 1]!.role === 'assistant') c.messages.pop();
  void run(c);
}

function resend(m: Message, text: string): void {
  const c = store.active!;
  const at = c.messages.indexOf(m);
  if (gen || at < 0) return;
  m.content = text;
  c.messages.length = at + 1; // the edited message is now the last one: its old reply is replaced
  void run(c);
}

function stop(): void {
  gen?.ctl.abort();
}

async function run(c: Conversation): Promise<void> {
  const reply: Message = { role: 'assistant', content: '', pending: true };
  c.messages.push(reply);
  store.touch(c);
  gen = { conv: c, reply, ctl: new AbortController() };
  save();
  render();
  await streamReply(api, c, reply, gen.ctl.signal, {
    onText: () => {
      if (store.activeId === c.id) messages.update(reply);
    },
    onUnauthorized: () => header.askKey('The server refused the API key.'),
  });
  gen = null;
  store.touch(c);
  save();
  render();
  composer.focus();
}

// Code blocks' copy buttons come from the Markdown renderer as markup; one delegated handler serves them.
messagesRoot.addEventListener('click', (e) => {
  const button = (e.target as Element).closest('.code-copy');
  const code = button?.closest('.code')?.querySelector('code');
  if (button instanceof HTMLElement && code) void copyText(code.textContent ?? '', button);
});

byId('new-chat', HTMLButtonElement).addEventListener('click', () => {
  const empty = store.conversations.find((c) => c.messages.length === 0);
  if (empty) store.activeId = empty.id;
  else store.create();
  select(store.activeId!);
});

const sidebarButton = byId('toggle-sidebar', HTMLButtonElement);
sidebarButton.addEventListener('click', () => {
  const open = app.classList.toggle('sidebar-open');
  sidebarButton.setAttribute('aria-expanded', String(open));
});
byId('scrim', HTMLElement).addEventListener('click', () => app.classList.remove('sidebar-open'));

const settingsPanel = byId('settings', HTMLElement);
const settingsButton = byId('toggle-settings', HTMLButtonElement);
settingsButton.addEventListener('click', () => {
  settingsPanel.hidden = !settingsPanel.hidden;
  settingsButton.setAttribute('aria-expanded', String(!settingsPanel.hidden));
  if (!settingsPanel.hidden) byId('system-prompt', HTMLTextAreaElement).focus();
});

document.addEventListener('keydown', (e) => {
  if (e.key !== 'Escape' || e.defaultPrevented) return;
  if (gen) stop();
  else app.classList.remove('sidebar-open');
});

setupTheme(byId('toggle-theme', HTMLButtonElement), localStorage);
render();
header.start();
composer.focus();
