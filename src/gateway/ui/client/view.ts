// The message list: one <article> per message, the reply's stats line and the per-message actions.
// Contract: message HTML comes only from renderMarkdown (escape-first); everything else is built with
// textContent. The list is rebuilt on structural changes; while streaming only the reply's body is
// re-rendered, at most once per animation frame.

import { h, iconButton } from './dom.js';
import { renderMarkdown } from './markdown.js';
import type { Attachment, Conversation, Message, ReplyStats } from './store.js';

export interface MessageActions {
  /** Edit the last user message and send it again (everything after it is replaced). */
  resend(m: Message, text: string): void;
  /** Replace the last reply with a new one. */
  regenerate(): void;
}

export type MessageState = 'streaming' | 'done' | 'stopped' | 'error';

export function stateOf(m: Message): MessageState {
  return m.pending ? 'streaming' : m.error ? 'error' : m.stopped ? 'stopped' : 'done';
}

const fmt = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });

export function statsText(s: ReplyStats | undefined, stopped: boolean): string {
  if (!s) return '';
  const parts: string[] = [];
  if (s.ttftMs !== null) parts.push(`TTFT ${fmt.format(s.ttftMs)} ms`);
  if (s.tokensPerSec !== null) parts.push(`${fmt.format(s.tokensPerSec)} tok/s`);
  if (s.promptTokens !== null && s.completionTokens !== null) parts.push(`${s.promptTokens} prompt + ${s.completionTokens} completion tokens`);
  if (stopped) parts.push('stopped');
  return parts.join(' · ');
}

export function fileChip(f: Attachment, onRemove?: () => void, counting = false): HTMLElement {
  const tokens = counting ? 'counting…' : f.tokens === null ? 'size unknown' : `${f.tokens.toLocaleString()} tokens`;
  const chip = h('span', { class: 'chip', title: f.name }, h('span', { class: 'chip-name' }, f.name), h('span', { class: 'chip-tokens' }, tokens));
  if (onRemove) {
    const x = iconButton('close', `Remove ${f.name}`, 'chip-x');
    x.addEventListener('click', onRemove);
    chip.append(x);
  }
  return chip;
}

export class MessageList {
  private frame = 0;

  constructor(
    private readonly root: HTMLElement,
    private readonly actions: MessageActions,
  ) {}

  render(c: Conversation, busy: boolean, empty: HTMLElement): void {
    this.root.replaceChildren();
    if (c.messages.length === 0) this.root.append(empty);
    const lastUser = c.messages.map((m) => m.role).lastIndexOf('user');
    c.messages.forEach((m, i) => {
      const last = i === c.messages.length - 1;
      this.root.append(this.article(m, { edit: !busy && i === lastUser, regen: !busy && last && m.role === 'assistant' }));
    });
    this.scrollToEnd(true);
  }

  /** Re-renders the streaming reply (the list's last article) on the next frame. */
  update(m: Message): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      const el = this.root.lastElementChild;
      if (!(el instanceof HTMLElement) || !el.classList.contains('assistant')) return;
      const follow = this.nearEnd();
      el.dataset.state = stateOf(m);
      el.querySelector('.md')!.innerHTML = renderMarkdown(m.content);
      this.scrollToEnd(follow);
    });
  }

  private article(m: Message, can: { edit: boolean; regen: boolean }): HTMLElement {
    const body = h('div', { class: 'md' });
    body.innerHTML = renderMarkdown(m.content); // escape-first renderer: see markdown.ts
    const bubble = h('div', { class: 'bubble' });
    if (m.files?.length) bubble.append(h('div', { class: 'files' }, ...m.files.map((f) => fileChip(f))));
    bubble.append(body);
    if (m.error) bubble.append(h('p', { class: 'msg-error', role: 'alert' }, m.error));
    const el = h('article', { class: `msg ${m.role}`, 'data-state': stateOf(m) }, bubble);
    const meta = h('div', { class: 'meta' });
    if (m.role === 'assistant') meta.append(h('span', { class: 'stats' }, statsText(m.stats, m.stopped === true)));
    const tools = h('span', { class: 'tools' });
    if (m.content) {
      const copy = iconButton('copy', 'Copy message');
      copy.addEventListener('click', () => void copyText(m.content, copy));
      tools.append(copy);
    }
    if (can.edit) {
      const edit = iconButton('edit', 'Edit and resend', 'edit-btn');
      edit.addEventListener('click', () => this.editor(el, bubble, m));
      tools.append(edit);
    }
    if (can.regen) {
      const regen = iconButton('regen', 'Regenerate reply', 'regen-btn');
      regen.addEventListener('click', () => this.actions.regenerate());
      tools.append(regen);
    }
    meta.append(tools);
    el.append(meta);
    return el;
  }

  private editor(el: HTMLElement, bubble: HTMLElement, m: Message): void {
    const area = h('textarea', { class: 'edit-area', rows: 3, 'aria-label': 'Edit message' });
    area.value = m.content;
    const send = h('button', { type: 'button', class: 'btn primary' }, 'Send');
    const cancel = h('button', { type: 'button', class: 'btn' }, 'Cancel');
    const box = h('div', { class: 'editor' }, area, h('div', { class: 'editor-row' }, cancel, send));
    const close = () => {
      box.replaceWith(bubble);
      el.classList.remove('editing');
    };
    send.addEventListener('click', () => area.value.trim() && this.actions.resend(m, area.value));
    cancel.addEventListener('click', close);
    area.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        send.click();
      } else if (e.key === 'Escape') close();
    });
    bubble.replaceWith(box);
    el.classList.add('editing');
    area.focus();
  }

  private nearEnd(): boolean {
    return this.root.scrollHeight - this.root.scrollTop - this.root.clientHeight < 80;
  }

  private scrollToEnd(really: boolean): void {
    if (really) this.root.scrollTop = this.root.scrollHeight;
  }
}

/** Copies with visual feedback; clipboard access can be refused (plain http), which is reported. */
export async function copyText(text: string, button: HTMLElement): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
    button.setAttribute('data-done', 'copied');
  } catch {
    button.setAttribute('data-done', 'failed');
  }
  setTimeout(() => button.removeAttribute('data-done'), 1200);
}
