// The page's client for the gateway's own OpenAI-compatible API. URLs are relative to the page, so the
// UI keeps working when the gateway is served under a path prefix behind a proxy.
// Contract: failures throw ApiError with the HTTP status (0: network) and the OpenAI error message.

import { sseData } from './sse.js';

export const KEY_STORAGE = 'ernie-edge.apiKey';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export interface ChatBody {
  messages: { role: 'system' | 'user' | 'assistant'; content: string }[];
  temperature?: number;
  top_p?: number;
  max_tokens?: number;
}

/** The subset of a chat.completion.chunk (or a mid-stream error event) that the page reads. */
export interface ChatChunk {
  choices?: { delta?: { content?: string }; finish_reason?: string | null }[];
  usage?: { prompt_tokens: number; completion_tokens: number } | null;
  error?: { message: string };
}

export interface ModelCard {
  id: string;
  maxModelLen: number | null;
}

export type Readiness = { ready: boolean; status: string };

export class Api {
  constructor(
    private readonly base: string,
    private readonly storage: Storage,
  ) {}

  get key(): string | null {
    return this.storage.getItem(KEY_STORAGE);
  }

  setKey(key: string | null): void {
    if (key) this.storage.setItem(KEY_STORAGE, key);
    else this.storage.removeItem(KEY_STORAGE);
  }

  async model(): Promise<ModelCard> {
    const res = await this.request('v1/models', { method: 'GET' });
    const body = (await res.json()) as { data?: { id: string; max_model_len?: number }[] };
    const card = body.data?.[0];
    if (!card) throw new ApiError(res.status, 'the server lists no model');
    return { id: card.id, maxModelLen: card.max_model_len ?? null };
  }

  /** /ready never needs the key; a network failure is reported as not ready, not thrown. */
  async readiness(): Promise<Readiness> {
    try {
      const res = await fetch(new URL('ready', this.base), { cache: 'no-store' });
      const body = (await res.json().catch(() => ({}))) as { status?: string };
      return { ready: res.ok, status: body.status ?? (res.ok ? 'ready' : `HTTP ${res.status}`) };
    } catch {
      return { ready: false, status: 'unreachable' };
    }
  }

  /** Token count of plain text (no special tokens), via the server's own tokenizer. */
  async countTokens(text: string): Promise<number> {
    const res = await this.request('tokenize', { method: 'POST', body: JSON.stringify({ prompt: text, add_special_tokens: false }) });
    return ((await res.json()) as { count: number }).count;
  }

  /** Streams chat chunks; aborting `signal` closes the connection, which aborts the engine request. */
  async *chat(body: ChatBody, signal: AbortSignal): AsyncGenerator<ChatChunk, void, undefined> {
    const payload = { ...body, stream: true, stream_options: { include_usage: true } };
    const res = await this.request('v1/chat/completions', { method: 'POST', body: JSON.stringify(payload), signal });
    if (!res.body) throw new ApiError(res.status, 'empty response');
    for await (const data of sseData(res.body)) {
      if (data === '[DONE]') return;
      yield JSON.parse(data) as ChatChunk;
    }
  }

  private async request(path: string, init: RequestInit): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (init.body) headers['content-type'] = 'application/json';
    const key = this.key;
    if (key) headers.authorization = `Bearer ${key}`;
    let res: Response;
    try {
      res = await fetch(new URL(path, this.base), { ...init, headers, cache: 'no-store' });
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err;
      throw new ApiError(0, 'the server is unreachable');
    }
    if (!res.ok) {
      const body = (await res.json().catch(() => null)) as { error?: { message?: string } } | null;
      throw new ApiError(res.status, body?.error?.message ?? `HTTP ${res.status}`);
    }
    return res;
  }
}
