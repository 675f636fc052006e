// The structured-output proof (#24): with the REAL engine on formula weights (random logits, so nothing
// but the grammar makes the output valid), 200 seeded random JSON Schemas, 50 regexes and 50 choice
// lists, each through chat and completions, streamed and not: every output ends with finish "stop" and
// parses and validates (ajv for schemas, a full-match RegExp for regexes, membership for choices).
// A max_tokens that cuts the grammar short ends with finish "length".
// Nothing is biased: the 128 byte-fallback pieces <0x80>..<0xFF> are as likely as any piece, and the
// masks keep them to well-formed UTF-8 (src/sidecar/grammar/utf8-guard.ts).
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomChoices, randomRegexes, randomSchemas } from '../doubles/random-schemas.js';
import { parseSSE } from './helpers.js';
import { chatCheckpoint, realGateway, REAL_MODEL, type RealGateway } from './real-engine.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any
type Route = 'chat' | 'completions';
const MAX_TOKENS = 900; // the tiny model's context is 1024; the generator's schemas need far fewer
const CONCURRENCY = 16;
let gw: RealGateway;

beforeAll(async () => {
  gw = await realGateway({ dir: await chatCheckpoint(), maxNumSeqs: CONCURRENCY, kvBlocks: 1024, grammar: true });
}, 120_000);
afterAll(async () => gw?.close());

/** One request; the choice's text and finish reason, from the JSON body or the assembled stream. */
async function generate(route: Route, stream: boolean, fields: Record<string, unknown>, seed: number): Promise<{ text: string; finish: string }> {
  const input = route === 'chat' ? { messages: [{ role: 'user', content: 'Answer in JSON.' }] } : { prompt: 'JSON:' };
  const res = await gw.post(route === 'chat' ? '/v1/chat/completions' : '/v1/completions', { model: REAL_MODEL, ...input, max_tokens: MAX_TOKENS, temperature: 1, seed, stream, ...fields });
  if (res.status !== 200) throw new Error(`${res.status}: ${await res.text()}`);
  if (!stream) {
    const choice = ((await res.json()) as Any).choices[0];
    return { text: route === 'chat' ? choice.message.content : choice.text, finish: choice.finish_reason };
  }
  const { events, done } = parseSSE(await res.text());
  expect(done).toBe(true);
  let text = '';
  let finish = '';
  for (const e of events as Any[]) {
    const c = e.choices?.[0];
    if (!c) continue;
    text += (route === 'chat' ? c.delta?.content : c.text) ?? '';
    finish = c.finish_reason ?? finish;
  }
  return { text, finish };
}

/** Runs `count` jobs with at most CONCURRENCY in flight (the engine batches them); returns the failures. */
async function all(count: number, job: (i: number) => Promise<string | null>): Promise<string[]> {
  const failures: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      const failure = await job(i).catch((e: unknown) => String(e));
      if (failure) failures.push(`#${i}: ${failure}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return failures;
}

const COMBOS: [Route, boolean][] = [
  ['chat', false],
  ['chat', true],
  ['completions', false],
  ['completions', true],
];
const SCHEMAS = randomSchemas(24, 200);
const REGEXES = randomRegexes(24, 50);
const CHOICES = randomChoices(24, 50);

describe.each(COMBOS)('%s (stream: %s): every constrained output is valid', (route, stream) => {
  it('200 random JSON Schemas: parses and validates (ajv)', async () => {
    const ajv = new Ajv({ strict: false });
    const validators = SCHEMAS.map((s) => ajv.compile(s));
    // The three spellings of a schema take turns; each lowers to the same constraint.
    const field = (s: object, i: number) =>
      [{ response_format: { type: 'json_schema', json_schema: { name: `s${i}`, schema: s, strict: true } } }, { structured_outputs: { json: s } }, { guided_json: s }][i % 3]!;
    const failures = await all(SCHEMAS.length, async (i) => {
      const { text, finish } = await generate(route, stream, field(SCHEMAS[i]!, i), i);
      if (finish !== 'stop') return `finish ${finish}: ${text.slice(0, 200)}`;
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        return `not JSON: ${text.slice(0, 200)}`;
      }
      return validators[i]!(value) ? null : `invalid: ${ajv.errorsText(validators[i]!.errors)} in ${text.slice(0, 200)}`;
    });
    expect(failures).toEqual([]);
  }, 600_000);

  it('50 random regexes: the whole output matches', async () => {
    const failures = await all(REGEXES.length, async (i) => {
      const fields = i % 2 ? { guided_regex: REGEXES[i] } : { structured_outputs: { regex: REGEXES[i] } };
      const { text, finish } = await generate(route, stream, fields, i);
      if (finish !== 'stop') return `finish ${finish}: ${JSON.stringify(text)}`;
      return new RegExp(`^(?:${REGEXES[i]!})$`, 'u').test(text) ? null : `${JSON.stringify(text)} does not match ${REGEXES[i]!}`;
    });
    expect(failures).toEqual([]);
  }, 300_000);

  it('50 random choice lists: the output is one of them', async () => {
    const failures = await all(CHOICES.length, async (i) => {
      const fields = i % 2 ? { guided_choice: CHOICES[i] } : { structured_outputs: { choice: CHOICES[i] } };
      const { text, finish } = await generate(route, stream, fields, i);
      if (finish !== 'stop') return `finish ${finish}: ${JSON.stringify(text)}`;
      return CHOICES[i]!.includes(text) ? null : `${JSON.stringify(text)} is not one of ${JSON.stringify(CHOICES[i])}`;
    });
    expect(failures).toEqual([]);
  }, 300_000);

  it('a max_tokens that cuts the grammar short ends with finish "length"', async () => {
    const schema = { type: 'object', properties: { a: { type: 'string', minLength: 20, maxLength: 30 } }, required: ['a'], additionalProperties: false };
    const { text, finish } = await generate(route, stream, { response_format: { type: 'json_schema', json_schema: { name: 'cut', schema } }, max_tokens: 4 }, 1);
    expect(finish).toBe('length');
    expect(text.startsWith('{')).toBe(true);
    expect(() => JSON.parse(text) as unknown).toThrow();
  });
});

describe('what the grammar engine cannot compile or would not enforce is a 400 naming the field', () => {
  it.each<[string, Record<string, unknown>, string, string?]>([
    ['a schema that is not a schema', { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: [1] } } }, 'response_format.json_schema.schema', 'JSON object or a boolean'],
    ['an unsupported keyword', { guided_json: { type: 'object', properties: { n: { type: 'integer', multipleOf: 3 } } } }, 'guided_json', "'multipleOf' is not enforced by the grammar engine (at /properties/n/multipleOf)"],
    ['bounds on type number', { structured_outputs: { json: { type: 'number', minimum: 0 } } }, 'structured_outputs.json', "'minimum' is not enforced for type number"],
    ['a pattern that can match a quote', { guided_json: { type: 'string', pattern: '.+' } }, 'guided_json', "'pattern' can match"],
    [
      'a structural tag with an unenforced schema',
      { structured_outputs: { structural_tag: JSON.stringify({ type: 'structural_tag', format: { type: 'json_schema', json_schema: { type: 'string', format: 'color' } } }) } },
      'structured_outputs.structural_tag',
      "'format'",
    ],
    ['a regex that does not compile', { guided_regex: '(ab' }, 'guided_regex'],
    ['an EBNF grammar that does not parse', { structured_outputs: { grammar: 'root ::= (' } }, 'structured_outputs.grammar'],
    ['an EBNF grammar without a root rule', { guided_grammar: 'start ::= "a"' }, 'guided_grammar'],
    ['a schema pattern that does not compile', { response_format: { type: 'json_schema', json_schema: { name: 'p', schema: { type: 'string', pattern: '[a-' } } } }, 'response_format.json_schema.schema'],
    ['a structural tag of an unknown format', { structured_outputs: { structural_tag: '{"type":"structural_tag","format":{"type":"no_such_format"}}' } }, 'structured_outputs.structural_tag'],
  ])('%s', async (_name, fields, param, text) => {
    for (const [path, input] of [['/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }] }], ['/v1/completions', { prompt: 'x' }]] as const) {
      const res = await gw.post(path, { model: REAL_MODEL, ...input, max_tokens: 4, ...fields });
      const body = (await res.json()) as Any;
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(body.error.param).toBe(param);
      expect(body.error.type).toBe('invalid_request_error');
      if (text) expect(body.error.message).toContain(text);
    }
  });
});
