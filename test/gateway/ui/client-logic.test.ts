// The chat page's DOM-free logic, run in Node: SSE parsing, request building, the conversation store,
// settings parsing, the stats line, and a whole streamed reply against the real app (fetch → app.request).
import { describe, expect, it } from 'vitest';
import { Api, KEY_STORAGE } from '../../../src/gateway/ui/client/api.js';
import { chatBody, messageText, streamReply } from '../../../src/gateway/ui/client/chat.js';
import { parseParam } from '../../../src/gateway/ui/client/settings.js';
import { sseData, takeEvents } from '../../../src/gateway/ui/client/sse.js';
import { DEFAULT_PARAMS, STORE_KEY, Store, type Conversation, type Message } from '../../../src/gateway/ui/client/store.js';
import { statsText } from '../../../src/gateway/ui/client/view.js';
import { setup } from '../helpers.js';

class MemoryStorage implements Storage {
  private m = new Map<string, string>();
  quota = Infinity;
  get length() {
    return this.m.size;
  }
  clear() {
    this.m.clear();
  }
  getItem(k: string) {
    return this.m.get(k) ?? null;
  }
  key(i: number) {
    return [...this.m.keys()][i] ?? null;
  }
  removeItem(k: string) {
    this.m.delete(k);
  }
  setItem(k: string, v: string) {
    if (v.length > this.quota) throw new DOMException('full', 'QuotaExceededError');
    this.m.set(k, v);
  }
}

describe('SSE parsing', () => {
  it('splits complete events, keeps the rest, joins multi-line data, ignores comments and CRLF', () => {
    expect(takeEvents('data: a\n\ndata: b\r\n\r\n: comment\n\ndata: x\ndata: y\n\ndata: par')).toEqual({ data: ['a', 'b', 'x\ny'], rest: 'data: par' });
    expect(takeEvents('event: e\nid: 1\n\n')).toEqual({ data: [], rest: '' });
  });

  it('reassembles events split across chunks, including a CRLF split in half and multi-byte UTF-8', async () => {
    const bytes = new TextEncoder().encode('data: {"t":"你好"}\r\n\r\ndata: [DONE]\r\n\r\n');
    const chunks = [bytes.slice(0, 12), bytes.slice(12, 21), bytes.slice(21, 22), bytes.slice(22)]; // 12 splits 你
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (const ch of chunks) c.enqueue(ch);
        c.close();
      },
    });
    const out: string[] = [];
    for await (const d of sseData(body)) out.push(d);
    expect(out).toEqual(['{"t":"你好"}', '[DONE]']);
  });
});

const conv = (messages: Message[], over: Partial<Conversation> = {}): Conversation => ({
  id: 'c', title: 't', named: false, updatedAt: 0, system: '', params: { ...DEFAULT_PARAMS }, messages, ...over,
});

describe('request building', () => {
  it('system prompt, history without failed empty replies, and only the parameters that are set', () => {
    const reply: Message = { role: 'assistant', content: '' };
    const c = conv(
      [{ role: 'user', content: 'a' }, { role: 'assistant', content: '', error: 'boom' }, { role: 'user', content: 'b' }, { role: 'assistant', content: 'partial', stopped: true }, { role: 'user', content: 'c' }, reply],
      { system: 'sys', params: { temperature: 0, top_p: null, max_tokens: 7 } },
    );
    expect(chatBody(c, reply)).toEqual({
      messages: [{ role: 'system', content: 'sys' }, { role: 'user', content: 'a' }, { role: 'user', content: 'b' }, { role: 'assistant', content: 'partial' }, { role: 'user', content: 'c' }],
      temperature: 0,
      max_tokens: 7,
    });
  });

  it('attachments go in a fence longer than any backtick run inside the file', () => {
    const m: Message = { role: 'user', content: 'explain', files: [{ name: 'a.md', text: 'x ```` y', tokens: 5 }, { name: 'noext', text: 'plain', tokens: null }] };
    expect(messageText(m)).toBe('File: a.md\n`````md\nx ```` y\n`````\n\nFile: noext\n```\nplain\n```\n\nexplain');
  });

  it('parseParam: empty is the server default; values are clamped to what the gateway accepts', () => {
    const temp = { min: 0, max: 2, int: false };
    expect(parseParam('', temp)).toBeNull();
    expect(parseParam('abc', temp)).toBeNull();
    expect(parseParam('5', temp)).toBe(2);
    expect(parseParam('-1', temp)).toBe(0);
    expect(parseParam('12.6', { min: 1, max: 100, int: true })).toBe(13);
  });

  it('statsText', () => {
    expect(statsText({ ttftMs: 12, tokensPerSec: 33.333, promptTokens: 5, completionTokens: 9 }, false)).toBe('TTFT 12 ms · 33.3 tok/s · 5 prompt + 9 completion tokens');
    expect(statsText({ ttftMs: 40, tokensPerSec: null, promptTokens: null, completionTokens: null }, true)).toBe('TTFT 40 ms · stopped');
  });
});

describe('conversation store', () => {
  it('create / rename / remove / touch, persisted and reloaded; a reply left streaming comes back stopped', () => {
    const storage = new MemoryStorage();
    const s = new Store(storage);
    s.load();
    expect(s.conversations).toHaveLength(1);
    const a = s.active!;
    a.system = 'sys';
    a.messages.push({ role: 'user', content: '  你好\n世界  ' }, { role: 'assistant', content: 'x', pending: true });
    s.touch(a);
    expect(a.title).toBe('你好 世界');
    const b = s.create();
    expect(b.system).toBe('sys'); // new conversations inherit the active one's settings
    s.rename(a.id, '  Poems  ');
    s.rename(a.id, '   '); // ignored
    expect(s.save()).toBe(true);
    const again = new Store(storage);
    again.load();
    expect(again.conversations.map((c) => c.title)).toEqual(['New chat', 'Poems']);
    expect(again.activeId).toBe(b.id);
    expect(again.conversations[1]!.messages[1]).toMatchObject({ pending: false, stopped: true });
    again.remove(b.id);
    expect(again.activeId).toBe(a.id);
    again.remove(a.id);
    expect(again.conversations).toHaveLength(1); // never empty
  });

  it('unreadable data starts fresh; a full storage is reported, not thrown', () => {
    const storage = new MemoryStorage();
    storage.setItem(STORE_KEY, '{not json');
    const s = new Store(storage);
    s.load();
    expect(s.conversations).toHaveLength(1);
    storage.quota = 10;
    expect(s.save()).toBe(false);
  });
});

describe('a streamed reply through the real app', () => {
  it('fills the reply, measures TTFT and usage, and sends the key as a Bearer token', async () => {
    const { handle, engine } = setup({ apiKey: 'sk-1' }, { corpus: 'abcdef', fixedStart: 0 });
    const origFetch = globalThis.fetch;
    globalThis.fetch = (input, init) => Promise.resolve(handle.fetch(new Request(input as string | URL, init)));
    try {
      const storage = new MemoryStorage();
      const api = new Api('http://gw.test/', storage);
      const reply: Message = { role: 'assistant', content: '' };
      const c = conv([{ role: 'user', content: 'hi' }, reply]);
      let unauthorized = 0;
      let t = 0;
      await streamReply(api, c, reply, new AbortController().signal, { onText: () => undefined, onUnauthorized: () => unauthorized++ }, () => (t += 10));
      expect(reply).toMatchObject({ error: "You didn't provide an API key. Pass it as 'Authorization: Bearer <key>'.", pending: false });
      expect(unauthorized).toBe(1);

      storage.setItem(KEY_STORAGE, 'sk-1');
      const ok: Message = { role: 'assistant', content: '' };
      const c2 = conv([{ role: 'user', content: 'hi' }, ok]);
      const texts: string[] = [];
      await streamReply(api, c2, ok, new AbortController().signal, { onText: () => texts.push(ok.content), onUnauthorized: () => unauthorized++ }, () => (t += 10));
      expect(ok.content).toBe('abcdef');
      expect(texts).toEqual(['a', 'ab', 'abc', 'abcd', 'abcde', 'abcdef']);
      expect(ok.stats).toMatchObject({ completionTokens: 7, promptTokens: expect.any(Number) }); // 6 letters + EOS
      expect(ok.stats!.ttftMs).toBeGreaterThan(0);
      expect(ok.error).toBeUndefined();
      expect(await api.countTokens('你好')).toBe(2);

      // Stop: aborting the signal ends the reply as stopped and aborts the engine request.
      const stopped: Message = { role: 'assistant', content: '' };
      const ctl = new AbortController();
      await streamReply(api, conv([{ role: 'user', content: 'again' }, stopped]), stopped, ctl.signal, { onText: () => ctl.abort(), onUnauthorized: () => undefined });
      expect(stopped).toMatchObject({ content: 'a', stopped: true, pending: false });
      expect(stopped.error).toBeUndefined();
      expect(engine.abortedIds()).toEqual([engine.submitted[1]!.id]);
    } finally {
      globalThis.fetch = origFetch;
    }
  });
});
