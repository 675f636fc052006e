// The sidecar's warm-up: one chat request through the whole sidecar path before it reports ready —
// the framed protocol (decode, encode, over an in-memory transport pair), the chat template, the
// tokenizer, the detokenizer, logprobs, and the engine (a prefill and a decode step).
// NOTE: the first request after start is several times slower than a warm one (bench:serve's cold-start
// stages, bench/results/serve.json). The cold costs are one-time: V8 compiling the path's functions
// and zod's compiled validators, and in the engine first-use buffers and page faults. Paying them
// here, before /ready turns 200, keeps them out of the first user's TTFT.
// The warm-up's tokens count in the engine's totals (vllm:prompt_tokens_total, …), like any request.

import type { SubmitRequest } from '../../protocol/engine-client.js';
import { FramedEngineClient } from '../../protocol/framed-client.js';
import { serveEngine, type EngineBackend } from '../../protocol/serve-engine.js';
import { createTransportPair } from '../../protocol/transport.js';

export const WARM_UP_REQUEST: SubmitRequest = {
  id: 'sidecar-warm-up',
  prompt: { kind: 'chat', messages: [{ role: 'user', content: 'Hello! In one word: is the engine warm?' }], addGenerationPrompt: true },
  sampling: {
    maxTokens: 2, temperature: 0, topP: 1, topK: -1, minP: 0, repetitionPenalty: 1, frequencyPenalty: 0, presencePenalty: 0,
    logitBias: {}, seed: 0, stop: ['\n\n\n'], stopTokenIds: [], ignoreEos: true, logprobs: 1, skipSpecialTokens: true,
  },
  n: 1,
  echo: false,
};

export interface WarmUpResult {
  ms: number;
  promptTokens: number;
  outputTokens: number;
}

/** Runs WARM_UP_REQUEST against `backend` through the protocol; rejects when it fails (EngineError for a refusal). */
export async function warmUp(backend: EngineBackend, now: () => number = () => performance.now()): Promise<WarmUpResult> {
  const t0 = now();
  const [clientEnd, serverEnd] = createTransportPair();
  const served = serveEngine(serverEnd, backend);
  const client = new FramedEngineClient({ connect: async () => clientEnd, retry: { attempts: 1 } });
  let promptTokens = 0;
  let outputTokens = 0;
  try {
    for await (const ev of client.stream(WARM_UP_REQUEST)) {
      if (ev.type === 'accepted') promptTokens = ev.promptTokens;
      if (ev.type === 'done') outputTokens = ev.usage.completionTokens;
      if (ev.type !== 'delta') continue;
      const failed = ev.choices.find((c) => c.finishReason === 'error' || c.finishReason === 'abort');
      if (failed) throw new Error(`the engine ended it with '${failed.finishReason}': ${failed.error?.message ?? 'no message'}`);
    }
  } finally {
    await client.close();
    await served.done;
  }
  return { ms: now() - t0, promptTokens, outputTokens };
}
