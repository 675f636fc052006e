// One request in the sidecar's table: its per-choice incremental detokenizers, where its events go
// (`emit`, called synchronously: the connection batches one step's events into one frame) and its
// flow-control count (src/protocol/flow.ts). `apply(outputs)` turns this request's StepOutputs of one
// engine step into at most one `delta` event, and the `done` event once every choice has finished.
//
// Choice contract (what the gateway relies on):
//  - text is complete UTF-8, stop strings withheld; a stop string ends the choice with finish 'stop',
//    stopReason = the string, and tokens after the one that completed it are dropped (as vLLM);
//  - an engine stop token ends it with 'stop'; the token counts as output (usage, token ids, logprobs)
//    but its text is never added (vLLM), stopReason = the id for a request stop_token_id, null for eos;
//  - Length / Abort / Error pass through; on every end but a stop string the held-back text is flushed.
// emit never waits: a slow consumer cannot stall the step loop; it is paused by flow control instead.

import type { ChoiceDelta, EngineErrorCode, EngineEvent, EngineTiming, FinishReason } from '../../protocol/engine-client.js';
import { eventUnits, streamWindow } from '../../protocol/flow.js';
import { Finish, type StepOutput } from '../engine/native-engine.js';
import type { IncrementalDetokenizer, TokenizerBundle } from '../tokenizer/index.js';
import { tokenLogprob } from './logprobs.js';
import { PromptLogprobCollector } from './prompt-logprobs.js';

interface ChoiceState {
  detok: IncrementalDetokenizer;
  tokens: number;
  finish: FinishReason | null;
  /** The engine still generates this choice (it ended it itself, or not yet). */
  engineRunning: boolean;
}

export interface LiveRequestInit {
  id: string;
  num: number;
  n: number;
  promptTokens: number;
  stop: string[];
  /** Stop strings are not matched in the text of a choice's first minTokens tokens (vLLM). */
  minTokens: number;
  skipSpecialTokens: boolean;
  logprobs: number | null;
  /** eos ids that were stop ids for this request (stopReason null), i.e. none when ignore_eos. */
  eosStops: ReadonlySet<number>;
  submittedAt: number; // ms
  /** The request asked for prompt logprobs (k alternatives): the prompt's ids, to name each token. */
  promptLogprobs?: { ids: readonly number[]; k: number };
  /** max_tokens as the engine runs it (reported on `done`). */
  maxTokens?: number;
}

export class LiveRequest {
  private readonly choices: ChoiceState[];
  /** Units emitted, and consumed by the client as far as it reported (src/protocol/flow.ts). */
  private sent = 0;
  private consumed = 0;
  private readonly window: number;
  /** The engine was told to pause this request (its window is full). */
  paused = false;
  private cached = 0;
  private firstOutputAt: number | null = null;
  private firstToken: number | null = null;
  private ended = false;
  private engineTiming: EngineTiming | undefined;
  private readonly promptLps: PromptLogprobCollector | null;

  constructor(
    readonly init: LiveRequestInit,
    private readonly bundle: TokenizerBundle,
    private readonly emit: (ev: EngineEvent) => void,
  ) {
    this.window = streamWindow(init.n);
    this.choices = Array.from({ length: init.n }, () => ({
      detok: bundle.newDetokenizer({ stop: init.stop, skipSpecialTokens: init.skipSpecialTokens, minTokens: init.minTokens }),
      tokens: 0,
      finish: null,
      engineRunning: true,
    }));
    const p = init.promptLogprobs;
    this.promptLps = p ? new PromptLogprobCollector(p.ids, p.k, bundle.tokenizer) : null;
  }

  /** When the first token arrived (the host's clock), or null. */
  get firstTokenAt(): number | null {
    return this.firstToken;
  }

  get done(): boolean {
    return this.ended;
  }

  /** The client's window is full: the engine should not generate more for it until credit returns. */
  get windowFull(): boolean {
    return this.sent - this.consumed >= this.window;
  }

  /** The client has consumed `consumed` units in all (a report may repeat or arrive late: monotonic). */
  credit(consumed: number): void {
    if (consumed > this.consumed) this.consumed = Math.min(consumed, this.sent);
  }

  /** True when the engine may still be generating a choice that is finished for the client. */
  get needsEngineAbort(): boolean {
    return this.choices.some((c) => c.engineRunning);
  }

  /** This request's outputs of one step (in choice order as the engine gave them). */
  apply(outputs: readonly StepOutput[], now: number): void {
    if (this.ended) return;
    this.firstOutputAt ??= now;
    const deltas: ChoiceDelta[] = [];
    for (const o of outputs) {
      const c = this.choices[o.index];
      if (!c) continue; // an index we never asked for: ignore rather than crash the step
      if (o.finish !== Finish.None) c.engineRunning = false;
      this.cached = Math.max(this.cached, o.cachedTokens);
      if (o.timing) this.engineTiming = o.timing;
      if (o.prompt) this.promptLps?.add(o.prompt);
      if (o.tokens.length === 0 && o.finish === Finish.None) continue; // prompt logprobs alone
      if (c.finish !== null) continue; // finished by a stop string: the engine's late tokens are dropped
      if (o.tokens.length > 0) this.firstToken ??= now;
      deltas.push(this.step(o, c));
    }
    const promptLogprobs = this.promptLps?.take() ?? null;
    if (deltas.length > 0 || promptLogprobs) this.push(promptLogprobs ? { type: 'delta', choices: deltas, promptLogprobs } : { type: 'delta', choices: deltas });
    if (this.choices.every((c) => c.finish !== null)) this.finish(now);
  }

  /**
   * Ends every open choice with `reason` and the request with `done`. An 'error' carries `code`:
   * ENGINE_DEAD (the default) for an engine shutdown, which clients retry (503); INTERNAL for a failure
   * of this request alone, such as its grammar rejecting a token (500).
   */
  end(reason: 'abort' | 'error', now: number, message?: string, code: EngineErrorCode = 'ENGINE_DEAD'): void {
    if (this.ended) return;
    const deltas: ChoiceDelta[] = [];
    this.choices.forEach((c, index) => {
      if (c.finish !== null) return;
      c.finish = reason;
      const d: ChoiceDelta = { index, text: '', tokenIds: [], finishReason: reason, stopReason: null };
      if (reason === 'error') d.error = { code, message: message ?? 'the engine stopped' };
      deltas.push(d);
    });
    if (deltas.length > 0) this.push({ type: 'delta', choices: deltas });
    this.finish(now);
  }

  private push(ev: EngineEvent): void {
    this.sent += eventUnits(ev);
    this.emit(ev);
  }

  private step(o: StepOutput, c: ChoiceState): ChoiceDelta {
    const { logprobs } = this.init;
    const tokenIds: number[] = [];
    const lps: NonNullable<ChoiceDelta['logprobs']> = [];
    let text = '';
    let stopString: string | null = null;
    for (let t = 0; t < o.tokens.length; t++) {
      const id = o.tokens[t]!;
      tokenIds.push(id);
      if (logprobs !== null) lps.push(tokenLogprob(o, t, logprobs, this.bundle.tokenizer));
      const isStopToken = o.finish === Finish.Stop && t === o.tokens.length - 1;
      if (isStopToken) break;
      text += c.detok.pushToken(id);
      if (c.detok.stop !== null) {
        stopString = c.detok.stop;
        break;
      }
    }
    c.tokens += tokenIds.length;
    const d: ChoiceDelta = { index: o.index, text, tokenIds };
    if (logprobs !== null) d.logprobs = lps;
    if (stopString !== null) return this.close(c, d, 'stop', stopString);
    switch (o.finish) {
      case Finish.None:
        return d;
      case Finish.Stop: {
        const last = o.tokens[o.tokens.length - 1]!;
        d.text += c.detok.flush();
        return this.close(c, d, 'stop', this.init.eosStops.has(last) ? null : last);
      }
      case Finish.Length:
        d.text += c.detok.flush();
        return this.close(c, d, 'length', null);
      case Finish.Abort:
        return this.close(c, d, 'abort', null);
      default:
        d.error = { code: 'INTERNAL', message: o.error ?? 'the engine failed this request' };
        return this.close(c, d, 'error', null);
    }
  }

  private close(c: ChoiceState, d: ChoiceDelta, reason: FinishReason, stopReason: string | number | null): ChoiceDelta {
    c.finish = reason;
    d.finishReason = reason;
    d.stopReason = stopReason;
    return d;
  }

  private finish(now: number): void {
    this.ended = true;
    const s = this.init.submittedAt;
    this.push({
      type: 'done',
      usage: {
        promptTokens: this.init.promptTokens,
        completionTokens: this.choices.reduce((n, c) => n + c.tokens, 0),
        cachedTokens: this.cached,
      },
      // queued: submit → the engine's first output for it (waiting plus prefill: the native contract
      // does not report when scheduling happened). ttft: submit → first token.
      timing: {
        queued: ((this.firstOutputAt ?? now) - s) / 1000,
        ttft: this.firstToken === null ? null : (this.firstToken - s) / 1000,
        e2e: (now - s) / 1000,
        ...(this.engineTiming ? { engine: { ...this.engineTiming } } : {}),
      },
      ...(this.init.maxTokens !== undefined ? { maxTokens: this.init.maxTokens } : {}),
    });
  }
}
