// Drives the native engine in tests: submit requests, collect per-choice tokens and finishes.
import path from 'node:path';
import { afterEach } from 'vitest';
import { readCheckpoint } from '../../src/sidecar/model/checkpoint.js';
import { nativeLoadOptions, type LoadOptions } from '../../src/sidecar/model/load.js';
import { createNativeEngine } from '../../src/sidecar/native.js';
import type { EngineOptions, EngineRequest, EngineStatsNative, NativeEngine, StepOutput } from '../../src/sidecar/engine/native-engine.js';
import { GOLDEN } from './helpers.js';

export const TINY = path.join(GOLDEN, 'tiny');

export interface Choice {
  tokens: number[];
  logprobs: number[];
  topIds: number[][];
  finish: number;
  cachedTokens: number;
  error?: string;
}

/** A request in tests: any EngineRequest fields, the prompt as a plain array or Int32Array. */
export type TestRequest = Partial<Omit<EngineRequest, 'prompt'>> & { id: number; prompt: number[] | Int32Array };

/** A request's prompt logprobs (prompt tokens 1..), concatenated over the steps that computed them. */
export interface PromptLps {
  logprobs: number[];
  ranks: number[];
  topIds: number[]; // k per token
}

export class TestEngine {
  readonly results = new Map<number, Choice[]>();
  readonly promptLogprobs = new Map<number, PromptLps>();
  readonly steps: StepOutput[][] = [];
  readonly statsAfterStep: EngineStatsNative[] = [];
  private waiters: { ids: number[]; resolve: () => void }[] = [];
  private closed = false;
  engine!: NativeEngine;
  onOutput?: (o: StepOutput) => void;

  static async create(engine: Partial<EngineOptions> = {}, load: LoadOptions = {}, dir = TINY): Promise<TestEngine> {
    const t = new TestEngine();
    const ck = await readCheckpoint(dir);
    t.engine = await createNativeEngine(nativeLoadOptions(ck, { kvBlocks: 64, threads: 2, ...load }), { maxModelLen: 1024, ...engine }, (outs) => t.onStep(outs));
    return t;
  }

  private onStep(outs: StepOutput[]): void {
    this.steps.push(outs);
    // Outputs of the last steps (aborts included) can arrive after close(), when stats() throws.
    if (!this.closed) this.statsAfterStep.push(this.engine.stats());
    for (const o of outs) {
      const choices = this.results.get(o.id) ?? [];
      this.results.set(o.id, choices);
      const c = (choices[o.index] ??= { tokens: [], logprobs: [], topIds: [], finish: 0, cachedTokens: 0 });
      c.tokens.push(...o.tokens);
      if (o.logprobs) c.logprobs.push(...o.logprobs);
      if (o.topIds && o.tokens.length) {
        const k = o.topIds.length / o.tokens.length;
        for (let i = 0; i < o.tokens.length; i++) c.topIds.push(Array.from(o.topIds.slice(i * k, (i + 1) * k)));
      }
      c.cachedTokens = o.cachedTokens;
      if (o.prompt) {
        const p = this.promptLogprobs.get(o.id) ?? { logprobs: [], ranks: [], topIds: [] };
        this.promptLogprobs.set(o.id, p);
        p.logprobs.push(...o.prompt.logprobs);
        p.ranks.push(...o.prompt.ranks);
        p.topIds.push(...o.prompt.topIds);
      }
      if (o.finish) c.finish = o.finish;
      if (o.error) c.error = o.error;
      this.onOutput?.(o);
    }
    this.waiters = this.waiters.filter((w) => {
      if (!w.ids.every((id) => this.done(id))) return true;
      w.resolve();
      return false;
    });
  }

  done(id: number): boolean {
    const cs = this.results.get(id);
    return !!cs && cs.length > 0 && cs.every((c) => c && c.finish !== 0);
  }

  submit(req: TestRequest): void {
    const err = this.engine.submit(request(req));
    if (err) throw new Error(err);
  }

  wait(ids: number[], n?: number): Promise<void> {
    return new Promise((resolve) => {
      const all = () => ids.every((id) => this.done(id) && (n === undefined || this.results.get(id)!.length === n));
      if (all()) resolve();
      else this.waiters.push({ ids, resolve });
    });
  }

  async run(reqs: (TestRequest)[]): Promise<Map<number, Choice[]>> {
    for (const r of reqs) this.submit(r);
    await this.wait(reqs.map((r) => r.id));
    return this.results;
  }

  close(): Promise<void> {
    this.closed = true;
    return this.engine.close();
  }
}

/**
 * The engines a test file opens, each closed after its test: `const engine = engineFixture();` at the
 * top of a file or describe (it registers that scope's afterEach), then `await engine(engineOpts, load)`.
 * `load` is merged over `defaults` (e.g. the CUDA device for a whole describe).
 */
export function engineFixture(defaults: LoadOptions = {}): (engine?: Partial<EngineOptions>, load?: LoadOptions, dir?: string) => Promise<TestEngine> {
  const open: TestEngine[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((e) => e.close()));
  });
  return async (engine = {}, load = {}, dir) => {
    const e = await TestEngine.create(engine, { ...defaults, ...load }, dir);
    open.push(e);
    return e;
  };
}

export function request(r: TestRequest): EngineRequest {
  return {
    maxTokens: 8,
    n: 1,
    temperature: 0,
    topP: 1,
    topK: 0,
    minP: 0,
    repetitionPenalty: 1,
    frequencyPenalty: 0,
    presencePenalty: 0,
    seed: null,
    logitBiasIds: new Int32Array(0),
    logitBiasValues: new Float32Array(0),
    stopTokenIds: new Int32Array(0),
    logprobs: -1,
    ...r,
    prompt: Int32Array.from(r.prompt),
  };
}

/** Deterministic token ids in [3, vocab). */
export function randomTokens(n: number, seed: number, vocab = 2048): number[] {
  let s = seed >>> 0;
  return Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return 3 + (s % (vocab - 3));
  });
}
