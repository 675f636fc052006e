// bench:serve's in-process side: one request straight into a NativeEngine, timed where the engine
// hands the first token to JavaScript (its step callback), on the same clock as the HTTP client.
import { hrtimeMs } from '../../src/cli/trace-file.js';
import type { NativeEngine, StepOutput } from '../../src/sidecar/engine/native-engine.js';
import type { BenchRequest } from '../engine/workload.js';

export interface DirectTiming {
  ttftMs: number;
  /** submit() called and the first token's step callback, host clock (ms). */
  sentAt: number;
  firstAt: number;
  /** The native duration of the step that produced the first token (engine.stats().stepTimeMs). */
  stepMs: number;
}

/** Runs `r` to completion (greedy, logprobs 1 like the HTTP client) and returns its first-token timing. */
export function directOne(
  engine: NativeEngine,
  setSink: (f: (outs: StepOutput[]) => void) => void,
  r: BenchRequest,
  id: number,
): Promise<DirectTiming> {
  // The step callback does not hold the event loop open: keep a timer while waiting.
  const keepAlive = setInterval(() => {}, 1 << 30);
  return new Promise<DirectTiming>((resolve, reject) => {
    let sentAt = NaN;
    let timing: DirectTiming | null = null;
    setSink((outs) => {
      const now = hrtimeMs();
      for (const o of outs) {
        if (o.id !== id) continue;
        if (timing === null && o.tokens.length > 0) timing = { ttftMs: now - sentAt, sentAt, firstAt: now, stepMs: engine.stats().stepTimeMs };
        if (o.finish) {
          if (timing) resolve(timing);
          else reject(new Error(`request ${id} finished without a token`));
        }
      }
    });
    sentAt = hrtimeMs();
    const err = engine.submit({
      id, prompt: r.prompt, maxTokens: r.maxTokens, n: 1, temperature: 0, topP: 1, topK: 0, minP: 0,
      repetitionPenalty: 1, frequencyPenalty: 0, presencePenalty: 0, seed: null,
      logitBiasIds: new Int32Array(0), logitBiasValues: new Float32Array(0), stopTokenIds: new Int32Array(0), logprobs: 1,
    });
    if (err) reject(new Error(err));
  }).finally(() => clearInterval(keepAlive));
}
