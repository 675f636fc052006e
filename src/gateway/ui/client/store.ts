// Conversations, kept in the browser's localStorage under one versioned key.
// Contract: load() never throws (unreadable data starts a fresh list); save() reports quota failures
// through its return value instead of throwing, so a full store never loses the reply on screen.

export interface Params {
  /** null: the server's default (generation_config.json). */
  temperature: number | null;
  top_p: number | null;
  max_tokens: number | null;
}

export interface ReplyStats {
  ttftMs: number | null;
  tokensPerSec: number | null;
  promptTokens: number | null;
  completionTokens: number | null;
}

/** A text file attached to a user message; it is sent inside the message (see chat.ts). */
export interface Attachment {
  name: string;
  text: string;
  /** Its size in tokens by the server's tokenizer; null when counting failed. */
  tokens: number | null;
}

export interface Message {
  role: 'user' | 'assistant';
  /** What was typed (user) or generated (assistant); attachments are kept apart in `files`. */
  content: string;
  files?: Attachment[];
  stats?: ReplyStats;
  error?: string;
  stopped?: boolean;
  /** True only while streaming; a reload clears it (the reply is then marked stopped). */
  pending?: boolean;
}

export interface Conversation {
  id: string;
  title: string;
  /** Set by rename: the title then no longer follows the first message. */
  named: boolean;
  updatedAt: number;
  system: string;
  params: Params;
  messages: Message[];
}

export const STORE_KEY = 'ernie-edge.conversations.v1';
export const DEFAULT_PARAMS: Params = { temperature: null, top_p: null, max_tokens: 1024 };

interface Saved {
  activeId: string | null;
  conversations: Conversation[];
}

const newId = () => Date.now().toString(36) + Math.random().toString(36).slice(2, 10);

export class Store {
  conversations: Conversation[] = [];
  activeId: string | null = null;

  constructor(private readonly storage: Storage) {}

  load(): void {
    try {
      const saved = JSON.parse(this.storage.getItem(STORE_KEY) ?? 'null') as Saved | null;
      if (saved && Array.isArray(saved.conversations)) {
        this.conversations = saved.conversations.filter((c) => c && typeof c.id === 'string' && Array.isArray(c.messages));
        for (const c of this.conversations) {
          c.params = { ...DEFAULT_PARAMS, ...c.params };
          for (const m of c.messages) if (m.pending) [m.pending, m.stopped] = [false, true];
        }
        this.activeId = saved.activeId;
      }
    } catch {
      this.conversations = [];
    }
    if (!this.active) this.activeId = this.conversations[0]?.id ?? this.create().id;
  }

  /** false when the browser refused (quota); the in-memory state is kept either way. */
  save(): boolean {
    try {
      this.storage.setItem(STORE_KEY, JSON.stringify({ activeId: this.activeId, conversations: this.conversations } satisfies Saved));
      return true;
    } catch {
      return false;
    }
  }

  get active(): Conversation | undefined {
    return this.conversations.find((c) => c.id === this.activeId);
  }

  /** A new empty conversation, first in the list; it inherits the active one's settings. */
  create(): Conversation {
    const from = this.active;
    const c: Conversation = {
      id: newId(),
      title: 'New chat',
      named: false,
      updatedAt: Date.now(),
      system: from?.system ?? '',
      params: { ...(from?.params ?? DEFAULT_PARAMS) },
      messages: [],
    };
    this.conversations.unshift(c);
    this.activeId = c.id;
    return c;
  }

  remove(id: string): void {
    this.conversations = this.conversations.filter((c) => c.id !== id);
    if (this.activeId === id) this.activeId = this.conversations[0]?.id ?? this.create().id;
  }

  rename(id: string, title: string): void {
    const c = this.conversations.find((x) => x.id === id);
    if (!c || !title.trim()) return;
    c.title = title.trim().slice(0, 120);
    c.named = true;
  }

  /** Marks a conversation changed: it moves to the top, and an unnamed one is titled by its first message. */
  touch(c: Conversation): void {
    c.updatedAt = Date.now();
    const first = c.messages.find((m) => m.role === 'user');
    const text = first ? first.content.replace(/\s+/g, ' ').trim() || first.files?.[0]?.name : undefined;
    if (!c.named && text) c.title = text.slice(0, 48);
    this.conversations = [c, ...this.conversations.filter((x) => x !== c)];
  }
}
