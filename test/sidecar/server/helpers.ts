// EngineHost over the fake native engine in manual mode: steps happen only when a test asks.
import { fileURLToPath } from 'node:url';
import type { EngineEvent, ModelInfo, SamplingParams, SubmitRequest } from '../../../src/protocol/engine-client.js';
import type { Tracer } from '../../../src/protocol/trace.js';
import { FakeNativeEngine, type FakeNativeEngineOptions } from '../../doubles/fake-native-engine.js';
import type { EngineRequest } from '../../../src/sidecar/engine/native-engine.js';
import { EngineHost } from '../../../src/sidecar/server/engine-host.js';
import type { TokenizePool } from '../../../src/sidecar/server/tokenize-pool.js';
import { loadTokenizerBundle, type TokenizerBundle } from '../../../src/sidecar/tokenizer/index.js';

export const TOKENIZER_DIR = fileURLToPath(new URL('../../fixtures/golden/tokenizer/hf', import.meta.url));

export interface HostEnv {
  host: EngineHost;
  engine: FakeNativeEngine;
  bundle: TokenizerBundle;
}

export async function makeHost(
  opts: {
    maxModelLen?: number;
    maxNumSeqs?: number;
    maxNumQueuedReqs?: number;
    script?: (req: EngineRequest, choice: number) => readonly number[] | undefined;
    corpusText?: string;
    kvBlocks?: number;
    tokensPerStep?: number;
    tracer?: Tracer;
    tokenizePool?: TokenizePool;
  } = {},
): Promise<HostEnv> {
  const bundle = await loadTokenizerBundle(TOKENIZER_DIR);
  const maxModelLen = opts.maxModelLen ?? 256;
  const model: ModelInfo = {
    id: 'test-model',
    root: TOKENIZER_DIR,
    maxModelLen,
    maxNumSeqs: opts.maxNumSeqs ?? 8,
    vocabSize: 103424,
    createdAt: 1_750_000_000,
    generationDefaults: { temperature: 0.8, topP: 0.8 },
    placeholder: true,
  };
  let engine!: FakeNativeEngine;
  const fakeOpts: FakeNativeEngineOptions = {
    engine: { maxNumSeqs: opts.maxNumSeqs ?? 8, maxNumBatchedTokens: 2048, maxModelLen, enablePrefixCaching: true, seed: 0 },
    vocabSize: model.vocabSize,
    corpus: bundle.encodePrompt(opts.corpusText ?? 'Hello, world! 你好，世界。', { addSpecialTokens: false }),
    eosId: 2,
    kvBlocks: opts.kvBlocks ?? 64,
    blockSize: 4,
    manual: true,
    script: opts.script,
    tokensPerStep: opts.tokensPerStep,
  };
  const host = await EngineHost.start({ bundle, model, maxNumQueuedReqs: opts.maxNumQueuedReqs ?? 16, tracer: opts.tracer, tokenizePool: opts.tokenizePool }, (onStep) => {
    engine = new FakeNativeEngine(fakeOpts, onStep);
    return engine;
  });
  return { host, engine, bundle };
}

export function sampling(over: Partial<SamplingParams> = {}): SamplingParams {
  return {
    maxTokens: 16,
    temperature: 0,
    topP: 1,
    topK: -1,
    minP: 0,
    repetitionPenalty: 1,
    frequencyPenalty: 0,
    presencePenalty: 0,
    logitBias: {},
    seed: null,
    stop: [],
    stopTokenIds: [],
    ignoreEos: false,
    logprobs: null,
    skipSpecialTokens: true,
    ...over,
  };
}

let counter = 0;
export function request(over: Omit<Partial<SubmitRequest>, 'sampling'> & { sampling?: Partial<SamplingParams> } = {}): SubmitRequest {
  return {
    id: over.id ?? `req-${++counter}`,
    prompt: over.prompt ?? { kind: 'text', text: 'Hello' },
    n: over.n ?? 1,
    echo: over.echo ?? false,
    sampling: sampling(over.sampling),
  };
}

/** Submits, steps the engine until it is idle, then reads every event. */
export async function runToEnd(env: HostEnv, req: SubmitRequest): Promise<EngineEvent[]> {
  const it = env.host.stream(req)[Symbol.asyncIterator]();
  const events: EngineEvent[] = [];
  const first = await it.next();
  if (!first.done) events.push(first.value);
  while (env.engine.step().length > 0);
  for (;;) {
    const r = await it.next();
    if (r.done) return events;
    events.push(r.value);
  }
}

export type Delta = Extract<EngineEvent, { type: 'delta' }>;
export type Done = Extract<EngineEvent, { type: 'done' }>;
export const deltas = (events: EngineEvent[]) => events.filter((e): e is Delta => e.type === 'delta');
export const done = (events: EngineEvent[]) => events.find((e): e is Done => e.type === 'done')!;

/** Concatenated text and the final delta of choice `index`. */
export function choice(events: EngineEvent[], index = 0) {
  const parts = deltas(events).flatMap((d) => d.choices.filter((c) => c.index === index));
  return {
    text: parts.map((c) => c.text).join(''),
    pieces: parts.map((c) => c.text),
    tokenIds: parts.flatMap((c) => c.tokenIds),
    logprobs: parts.flatMap((c) => c.logprobs ?? []),
    last: parts[parts.length - 1]!,
  };
}
