// The chat page's HTML shell, served at `/`. Static: everything dynamic is built by ui/main.js.
// Asset URLs are relative (`ui/…`) so the page also works under a path prefix behind a proxy; the
// page is served with a strict Content-Security-Policy (see routes/ui.ts), hence no inline script/style.

const svg = (body: string) => `<svg class="icon" viewBox="0 0 24 24" aria-hidden="true">${body}</svg>`;

export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1, viewport-fit=cover">
<meta name="color-scheme" content="light dark">
<title>ernie-edge</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="ui/app.css">
<script type="module" src="ui/main.js"></script>
</head>
<body>
<div id="app" class="app">
  <aside id="sidebar" class="sidebar" aria-label="Conversations">
    <div class="sidebar-head">
      <span class="brand">ernie-edge</span>
      <button id="new-chat" type="button" class="btn primary">${svg('<path d="M12 5v14M5 12h14"/>')}<span>New chat</span></button>
    </div>
    <nav><ul id="conv-list" class="conv-list"></ul></nav>
  </aside>
  <div id="scrim" class="scrim"></div>
  <main class="main">
    <header class="topbar">
      <button id="toggle-sidebar" type="button" class="icon-btn only-narrow" aria-label="Conversations" aria-expanded="false">${svg('<path d="M4 6h16M4 12h16M4 18h16"/>')}</button>
      <div class="model" aria-live="polite">
        <span id="status-dot" class="dot" data-state="unknown"></span>
        <span id="model-name" class="model-name">…</span>
        <span id="status-text" class="status-text"></span>
      </div>
      <button id="toggle-settings" type="button" class="icon-btn" aria-label="Conversation settings" aria-expanded="false" aria-controls="settings">${svg('<path d="M4 6h10M18 6h2M4 12h4M12 12h8M4 18h12M20 18h0"/><circle cx="16" cy="6" r="2"/><circle cx="10" cy="12" r="2"/><circle cx="18" cy="18" r="2"/>')}</button>
      <button id="toggle-theme" type="button" class="icon-btn" aria-label="Switch theme">${svg('<circle cx="12" cy="12" r="8"/><path d="M12 4a8 8 0 0 1 0 16z" fill="currentColor"/>')}</button>
    </header>
    <section id="settings" class="settings" hidden aria-label="Conversation settings">
      <label class="field wide">System prompt
        <textarea id="system-prompt" rows="3" placeholder="You are a helpful assistant. 你是一个乐于助人的助手。"></textarea>
      </label>
      <label class="field">Temperature <input id="p-temperature" type="number" min="0" max="2" step="0.1" placeholder="default" inputmode="decimal"></label>
      <label class="field">Top p <input id="p-top-p" type="number" min="0.01" max="1" step="0.05" placeholder="default" inputmode="decimal"></label>
      <label class="field">Max tokens <input id="p-max-tokens" type="number" min="1" step="1" placeholder="default" inputmode="numeric"></label>
      <p class="settings-note">Saved with this conversation. Empty fields use the model's defaults.</p>
    </section>
    <div id="messages" class="messages" role="log" aria-label="Messages"></div>
    <div id="toast" class="toast" role="status" hidden></div>
    <form id="form" class="composer">
      <div id="attachments" class="attachments" hidden></div>
      <div class="composer-row">
        <button id="attach" type="button" class="icon-btn" aria-label="Attach text files" title="Attach text files (.txt, .md, .csv, code)">${svg('<path d="M20 11l-8.5 8.5a5 5 0 0 1-7-7L13 4a3.5 3.5 0 0 1 5 5l-8.5 8.5a2 2 0 0 1-3-3L14 7"/>')}</button>
        <input id="file-input" type="file" multiple class="visually-hidden" tabindex="-1" aria-hidden="true">
        <textarea id="prompt" rows="1" placeholder="Message… (Enter to send, Shift+Enter for a new line)" aria-label="Message"></textarea>
        <button id="send" type="submit" class="btn primary send" aria-label="Send message">Send</button>
      </div>
    </form>
  </main>
</div>
<dialog id="key-dialog" aria-labelledby="key-title">
  <form id="key-form">
    <h2 id="key-title">API key required</h2>
    <p>This server was started with <code>--api-key</code>. Enter the key to chat; it is kept in this browser only.</p>
    <input id="key-input" type="password" autocomplete="off" aria-label="API key" placeholder="sk-…">
    <p id="key-error" class="msg-error" role="alert" hidden></p>
    <div class="editor-row"><button type="submit" class="btn primary">Save key</button></div>
  </form>
</dialog>
</body>
</html>
`;
