// Constrained generation end to end in one process: EngineHost (the sidecar's EngineClient) over the REAL
// native engine (tiny config, formula weights: random logits, vocabulary 3072) with the test tokenizer
// and a grammar pool. Streamed through host.stream(); every output must parse and match its constraint
// (ajv for JSON schemas), for each constraint kind, n > 1, sampled with penalties and logprobs; a cut by
// max_tokens ends with "length"; an abort mid-grammar frees the sequence; a bad constraint is a 400
// (EngineError INVALID_REQUEST) naming its param.
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError, type Constraint, type EngineEvent, type SamplingParams } from '../../../src/protocol/engine-client.js';
import { GrammarPool } from '../../../src/sidecar/grammar/pool.js';
import { grammarVocab } from '../../../src/sidecar/grammar/vocab.js';
import type { ModelInfo } from '../../../src/protocol/engine-client.js';
import { readCheckpoint } from '../../../src/sidecar/model/checkpoint.js';
import { nativeLoadOptions } from '../../../src/sidecar/model/load.js';
import { createNativeEngine } from '../../../src/sidecar/native.js';
import { EngineHost } from '../../../src/sidecar/server/engine-host.js';
import { loadTokenizerBundle, type TokenizerBundle } from '../../../src/sidecar/tokenizer/index.js';
import { chatCheckpoint } from '../../gateway/real-engine.js';
import { TOKENIZER_DIR, choice, done, request } from '../server/helpers.js';

let host: EngineHost;
let pool: GrammarPool;
let bundle: TokenizerBundle;
const ajv = new Ajv({ strict: false });

beforeAll(async () => {
  const maxModelLen = 1024;
  const dir = await chatCheckpoint();
  bundle = await loadTokenizerBundle(TOKENIZER_DIR, { maxModelLen });
  const ck = await readCheckpoint(dir);
  const vocabSize = ck.config.native.vocabSize;
  const model: ModelInfo = { id: 'tiny', root: dir, maxModelLen, maxNumSeqs: 8, vocabSize, createdAt: 1_750_000_000, generationDefaults: {}, placeholder: false };
  pool = await GrammarPool.start({ vocab: grammarVocab(bundle.tokenizer, vocabSize, bundle.eosIds), workers: 1, cacheSize: 16 });
  host = await EngineHost.start({ bundle, model, maxNumQueuedReqs: 16, grammar: pool }, (onStep) =>
    createNativeEngine(
      nativeLoadOptions(ck, { kvBlocks: 128, blockSize: 16, threads: 2 }),
      { maxModelLen, maxNumSeqs: 8, maxNumBatchedTokens: 64, enablePrefixCaching: true, seed: 0 },
      onStep,
    ),
  );
});
afterAll(async () => {
  await host?.close();
});

async function run(constraint: Constraint, sampling: Partial<SamplingParams> = {}, n = 1): Promise<EngineEvent[]> {
  const events: EngineEvent[] = [];
  const req = { ...request({ prompt: { kind: 'text', text: 'Answer:' }, n, sampling: { maxTokens: 300, temperature: 1, seed: 1, ...sampling } }), constraint };
  for await (const ev of host.stream(req)) events.push(ev);
  return events;
}

const PERSON = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 6 },
    age: { type: 'integer', minimum: 0, maximum: 120 },
    tags: { type: 'array', items: { enum: ['a', 'b', 'c'] }, minItems: 1, maxItems: 3 },
    kind: { anyOf: [{ type: 'boolean' }, { type: 'null' }] },
  },
  required: ['name', 'age', 'tags', 'kind'],
  additionalProperties: false,
};

describe('structured output through EngineHost (real engine, random logits)', () => {
  it('json_schema: every choice (n = 3, penalties, logprobs, streamed) parses and validates', async () => {
    const validate = ajv.compile(PERSON);
    const events = await run({ kind: 'json_schema', schema: JSON.stringify(PERSON), param: 'response_format.json_schema.schema' }, { repetitionPenalty: 1.2, presencePenalty: 0.5, logprobs: 2 }, 3);
    for (let i = 0; i < 3; i++) {
      const c = choice(events, i);
      expect(c.last.finishReason, c.text).toBe('stop');
      const value: unknown = JSON.parse(c.text);
      expect(validate(value), `${c.text}: ${JSON.stringify(validate.errors)}`).toBe(true);
      expect(c.logprobs.length).toBe(c.tokenIds.length);
      expect(c.logprobs.every((l) => Number.isFinite(l.logprob) && l.logprob <= 0)).toBe(true);
    }
  });

  it('regex, choice, grammar and json_object: the text matches', async () => {
    const re = await run({ kind: 'regex', pattern: '[a-c]{2,5}-[0-9]{3}', param: 'structured_outputs.regex' });
    expect(choice(re).text).toMatch(/^[a-c]{2,5}-[0-9]{3}$/);
    const choices = ['yes', 'no', 'maybe "so"', '你好\n'];
    for (const seed of [1, 2, 3, 4]) {
      const ch = await run({ kind: 'choice', choices, param: 'structured_outputs.choice' }, { seed });
      expect(choices).toContain(choice(ch).text);
    }
    const g = await run({ kind: 'grammar', ebnf: 'root ::= "(" digit digit? ")" ("," "(" digit ")")*\ndigit ::= [0-9]', param: 'structured_outputs.grammar' }, { maxTokens: 40 });
    const gc = choice(g);
    if (gc.last.finishReason === 'stop') expect(gc.text).toMatch(/^\(\d\d?\)(,\(\d\))*$/);
    else expect(`${gc.text})`.replace(/,\($/, '')).toMatch(/^\(\d\d?\)(,\(\d\))*\)?/);
    // Any JSON object: with random logits nothing bounds a string, so a bias towards '"' and '}' lets
    // the object close within max_tokens (the mask still decides what is allowed).
    const closers = ['"', '}'].map((c) => bundle.tokenizer.tokenToId(c) ?? bundle.tokenizer.tokenToId(`<0x${c.charCodeAt(0).toString(16).toUpperCase()}>`)!);
    const obj = await run({ kind: 'json_object', param: 'response_format' }, { logitBias: Object.fromEntries(closers.map((t) => [t, 6])) });
    const oc = choice(obj);
    expect(oc.last.finishReason, oc.text).toBe('stop');
    expect(typeof JSON.parse(oc.text)).toBe('object');
  });

  it('structural_tag: the text around and inside the tag follows the format', async () => {
    const tag = {
      type: 'structural_tag',
      format: {
        type: 'sequence',
        elements: [
          { type: 'const_string', value: 'call:' },
          { type: 'tag', begin: '<tool_call>', content: { type: 'json_schema', json_schema: { type: 'object', properties: { x: { type: 'integer', minimum: 0, maximum: 9 } }, required: ['x'] } }, end: '</tool_call>' },
        ],
      },
    };
    const c = choice(await run({ kind: 'structural_tag', tag: JSON.stringify(tag), param: 'tools' }, { skipSpecialTokens: false }));
    const m = /^call:<tool_call>(.*)<\/tool_call>$/s.exec(c.text);
    expect(m, c.text).not.toBeNull();
    expect(JSON.parse(m![1]!)).toMatchObject({ x: expect.any(Number) });
  });

  it('max_tokens cutting the grammar short ends with "length"', async () => {
    const events = await run({ kind: 'json_schema', schema: JSON.stringify(PERSON), param: 'response_format.json_schema.schema' }, { maxTokens: 3 });
    const c = choice(events);
    expect(c.last.finishReason).toBe('length');
    expect(c.tokenIds).toHaveLength(3);
    expect(c.text.startsWith('{')).toBe(true);
  });

  it('an abort mid-grammar frees the sequence; the next request runs', async () => {
    const ctl = new AbortController();
    const req = { ...request({ prompt: { kind: 'text', text: 'Go' }, sampling: { maxTokens: 500, temperature: 1, seed: 5, ignoreEos: true } }), constraint: { kind: 'regex', pattern: '[a-z]{400,}', param: 'p' } as Constraint };
    let tokens = 0;
    const events: EngineEvent[] = [];
    for await (const ev of host.stream(req, ctl.signal)) {
      events.push(ev);
      if (ev.type === 'delta') tokens += ev.choices.reduce((a, c) => a + c.tokenIds.length, 0);
      if (tokens >= 3) ctl.abort();
    }
    const c = choice(events);
    expect(c.last.finishReason).toBe('abort');
    expect(c.tokenIds.length).toBeLessThan(500);
    expect(done(events).usage.completionTokens).toBe(c.tokenIds.length);
    expect(host.liveRequests).toBe(0);
    const after = await run({ kind: 'choice', choices: ['ok'], param: 'p' });
    expect(choice(after).text).toBe('ok');
    const s = await host.stats();
    expect(s.running).toBe(0);
    expect(s.kvBlocksFree).toBe(s.kvBlocksTotal);
  });

  it('a grammar failure mid-stream ends that request with INTERNAL (500), not ENGINE_DEAD (503 retry)', async () => {
    // The pool reports a failed choice (a rejected token, a dead worker) through onFailed, which the host
    // installed: the key of this request's session is the one open() hands out.
    const open = pool.open.bind(pool);
    const keys: number[] = [];
    pool.open = async (...args) => {
      const s = await open(...args);
      keys.push(s.key);
      return s;
    };
    const req = { ...request({ prompt: { kind: 'text', text: 'Go' }, sampling: { maxTokens: 500, temperature: 1, seed: 6, ignoreEos: true } }), constraint: { kind: 'regex', pattern: '[a-z]{400,}', param: 'p' } as Constraint };
    const events: EngineEvent[] = [];
    let failed = false;
    try {
      for await (const ev of host.stream(req)) {
        events.push(ev);
        if (ev.type === 'delta' && !failed) {
          failed = true;
          expect(keys).toHaveLength(1);
          pool.onFailed(keys[0]!, 0, 'structured output: the grammar rejected token 7');
        }
      }
    } finally {
      pool.open = open;
    }
    const c = choice(events);
    expect(c.last.finishReason).toBe('error');
    expect(c.last.error).toEqual({ code: 'INTERNAL', message: 'structured output: the grammar rejected token 7' });
    expect(c.tokenIds.length).toBeLessThan(500);
    expect(host.liveRequests).toBe(0);
    const after = await run({ kind: 'choice', choices: ['ok'], param: 'p' });
    expect(choice(after).text).toBe('ok');
  });

  it.each([
    [{ kind: 'json_schema', schema: '{"type": "nonsense"}', param: 'response_format.json_schema.schema' }, /JSON schema does not compile: .*nonsense/],
    [{ kind: 'regex', pattern: '[a-', param: 'structured_outputs.regex' }, /regular expression does not compile: .*\[/],
    [{ kind: 'grammar', ebnf: 'root ::= (', param: 'structured_outputs.grammar' }, /grammar does not compile: EBNF parser error/],
    [{ kind: 'structural_tag', tag: '{not json', param: 'structured_outputs.structural_tag' }, /structural tag does not compile: .*not JSON/],
    // What xgrammar would not enforce is refused here too, for every client of the engine protocol.
    [{ kind: 'json_schema', schema: '{"type": "integer", "multipleOf": 2}', param: 'guided_json' }, /JSON schema does not compile: guided_json: the keyword 'multipleOf' is not enforced by the grammar engine \(at \/multipleOf\)/],
    [{ kind: 'json_schema', schema: '{"type": "number", "maximum": 1}', param: 'guided_json' }, /'maximum' is not enforced for type number/],
    [{ kind: 'structural_tag', tag: '{"type": "structural_tag", "format": {"type": "json_schema", "json_schema": {"type": "string", "pattern": "."}}}', param: 'tools' }, /structural tag does not compile: tools: the keyword 'pattern' can match/],
  ] as [Constraint, RegExp][])('a constraint that does not compile is INVALID_REQUEST naming its param (%o)', async (constraint, message) => {
    const err = await run(constraint).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(EngineError);
    expect(err).toMatchObject({ code: 'INVALID_REQUEST', param: constraint.param });
    expect((err as Error).message).toMatch(message);
    // the pool still serves after a compile error
    expect(choice(await run({ kind: 'choice', choices: ['still'], param: 'p' })).text).toBe('still');
  });
});
