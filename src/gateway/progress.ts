// Folds a run group's engine events into OpenAI-level choice updates and usage. Choice indices are
// prompt-major like OpenAI: global index = run (prompt) index × n + the engine's choice index.
//
// Finish reasons: the engine's `stop`/`length` pass through. `abort` reaching a live client can only
// mean the engine gave up on the request (drain, shutdown), and `error` is a failed choice: neither is a
// valid OpenAI finish_reason, so both surface as errors (HTTP status, or an SSE error event mid-stream)
// through errors.ts — never as a bogus finish_reason.

import { EngineError, type ChoiceDelta, type EngineEvent, type TokenLogprob } from '../protocol/engine-client.js';
import type { EngineRun } from './engine-run.js';
import type { RequestRecord } from './request-record.js';

export type OpenAIFinish = 'stop' | 'length';

export interface ChoiceUpdate {
  index: number;
  text: string;
  tokenIds: number[];
  logprobs: TokenLogprob[];
  finishReason: OpenAIFinish | null;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

export class Progress {
  readonly promptTokens: number;
  private readonly counted: number[]; // completion tokens seen so far, per run
  private readonly final: (number | null)[]; // completion tokens per run from `done`
  private readonly perChoice: number[]; // tokens seen so far per (global) choice index
  private cached = 0;

  constructor(
    private readonly runs: EngineRun[],
    private readonly n: number,
    private readonly rec: RequestRecord,
  ) {
    this.promptTokens = runs.reduce((s, r) => s + r.accepted.promptTokens, 0);
    this.counted = runs.map(() => 0);
    this.final = runs.map(() => null);
    this.perChoice = new Array<number>(runs.length * n).fill(0);
    rec.promptTokens = this.promptTokens;
    rec.choices = runs.length * n;
  }

  /** Returns this event's choice updates; throws EngineError when a choice failed or was aborted. */
  apply(run: number, event: EngineEvent): ChoiceUpdate[] {
    if (event.type === 'done') {
      this.final[run] = event.usage.completionTokens;
      this.cached += event.usage.cachedTokens;
      this.rec.engineRuns.push({
        promptTokens: event.usage.promptTokens,
        generationTokens: event.usage.completionTokens,
        maxChoiceTokens: Math.max(0, ...this.perChoice.slice(run * this.n, (run + 1) * this.n)),
        cachedTokens: event.usage.cachedTokens,
        n: this.n,
        maxTokens: event.maxTokens ?? this.runs[run]!.req.sampling.maxTokens,
        ...(event.timing.engine ? { timing: event.timing.engine } : {}),
      });
      return [];
    }
    if (event.type !== 'delta') return [];
    const tokens = event.choices.reduce((s, c) => s + c.tokenIds.length, 0);
    this.counted[run]! += tokens;
    this.rec.tokens(tokens);
    return event.choices.map((c) => {
      this.perChoice[run * this.n + c.index]! += c.tokenIds.length;
      const finishReason = mapFinish(c);
      if (finishReason) this.rec.finishReasons.push(finishReason);
      return {
        index: run * this.n + c.index,
        text: c.text,
        tokenIds: c.tokenIds,
        logprobs: c.logprobs ?? [],
        finishReason,
      };
    });
  }

  usage(): Usage {
    const completion = this.final.reduce<number>((s, f, i) => s + (f ?? this.counted[i]!), 0);
    return {
      prompt_tokens: this.promptTokens,
      completion_tokens: completion,
      total_tokens: this.promptTokens + completion,
      prompt_tokens_details: { cached_tokens: this.cached },
    };
  }

  get choiceCount(): number {
    return this.runs.length * this.n;
  }
}

function mapFinish(c: ChoiceDelta): OpenAIFinish | null {
  switch (c.finishReason) {
    case undefined:
      return null;
    case 'stop':
    case 'length':
      return c.finishReason;
    case 'abort':
      throw new EngineError('NOT_READY', 'the engine aborted the request (draining or shutting down); retry');
    case 'error':
      throw new EngineError(c.error?.code ?? 'INTERNAL', c.error?.message ?? 'the engine failed this request');
  }
}
