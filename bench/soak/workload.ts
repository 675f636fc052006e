// The soak's mixed requests, from a seeded generator: chat or completions, streamed or not, n, prompt
// and output lengths, and client aborts (a streamed request dropped after a few chunks, a plain one
// after a few milliseconds).
export interface SoakRequest {
  route: '/v1/chat/completions' | '/v1/completions';
  body: Record<string, unknown>;
  stream: boolean;
  abortAfterChunks: number | null; // streamed: drop the connection after this many chunks
  abortAfterMs: number | null; // not streamed: abort after this long
}

const WORDS = 'the engine keeps every stream moving while prompts of many lengths arrive and leave 你好 世界'.split(' ');

export function soakRequests(count: number, model: string, seed = 26): SoakRequest[] {
  let s = seed >>> 0;
  const rnd = (n: number) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return Math.floor((s / 2 ** 32) * n); // the high bits: an LCG's low bits cycle with short periods
  };
  return Array.from({ length: count }, (_, i) => {
    const words = 5 + rnd(rnd(10) === 0 ? 1500 : 150);
    const text = Array.from({ length: words }, () => WORDS[rnd(WORDS.length)]).join(' ') + ` #${i}`;
    const chat = rnd(2) === 0;
    const stream = rnd(2) === 0;
    const n = [1, 1, 1, 2, 4][rnd(5)]!;
    const aborted = rnd(10) === 0;
    const body: Record<string, unknown> = {
      model,
      ...(chat ? { messages: [{ role: 'user', content: text }] } : { prompt: text }),
      max_tokens: 4 + rnd(125),
      n,
      temperature: rnd(3) === 0 ? 0 : 0.8,
      ignore_eos: rnd(2) === 0,
      stream,
    };
    return {
      route: chat ? '/v1/chat/completions' : '/v1/completions',
      body,
      stream,
      abortAfterChunks: aborted && stream ? 1 + rnd(8) : null,
      abortAfterMs: aborted && !stream ? 5 + rnd(50) : null,
    };
  });
}
