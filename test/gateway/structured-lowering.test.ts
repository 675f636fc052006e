// The structured-output request surface (#24 item 2): each way of asking for structured output on chat,
// completions and /v1/responses becomes exactly the protocol Constraint the sidecar compiles, with `param`
// naming the field; conflicting or unenforceable requests are 400s naming the field.
import { describe, expect, it } from 'vitest';
import type { Constraint } from '../../src/protocol/engine-client.js';
import { EngineError } from '../../src/protocol/engine-client.js';
import { MAX_CHOICES, MAX_SCHEMA_CHARS } from '../../src/gateway/structured-output.js';
import { expectError, MODEL, setup, sse } from './helpers.js';

type Any = any; // eslint-disable-line @typescript-eslint/no-explicit-any
const CHAT = '/v1/chat/completions';
const COMPLETIONS = '/v1/completions';
const msgs = [{ role: 'user', content: 'Give me JSON' }];
const schema = { type: 'object', properties: { name: { type: 'string', maxLength: 8 }, age: { type: 'integer', minimum: 0 } }, required: ['name', 'age'], additionalProperties: false };
// What the engine receives: the schema's JSON text (the sidecar rewrites its length-bounded strings: src/sidecar/grammar/source.ts).
const schemaText = JSON.stringify(schema);

/** Posts `extra` on a route and returns the Constraint the engine received (undefined: none). */
async function lowered(path: string, extra: Record<string, unknown>): Promise<Constraint | undefined> {
  const { post, engine } = setup();
  const base = path === CHAT ? { messages: msgs } : path === COMPLETIONS ? { prompt: 'p' } : { input: 'x' };
  const res = await post(path, { model: MODEL, max_tokens: 4, ...base, ...extra });
  expect(res.status, await res.clone().text()).toBe(200);
  expect(engine.submitted).toHaveLength(1);
  return engine.submitted[0]!.constraint;
}

const CASES: [string, Record<string, unknown>, Constraint | undefined][] = [
  ['response_format text', { response_format: { type: 'text' } }, undefined],
  ['response_format json_object', { response_format: { type: 'json_object' } }, { kind: 'json_object', param: 'response_format' }],
  [
    'response_format json_schema',
    { response_format: { type: 'json_schema', json_schema: { name: 'person', description: 'a person', schema, strict: true } } },
    { kind: 'json_schema', schema: schemaText, param: 'response_format.json_schema.schema' },
  ],
  ['response_format json_schema, boolean schema', { response_format: { type: 'json_schema', json_schema: { name: 'any', schema: true } } }, { kind: 'json_schema', schema: 'true', param: 'response_format.json_schema.schema' }],
  ['structured_outputs.json (object)', { structured_outputs: { json: schema } }, { kind: 'json_schema', schema: schemaText, param: 'structured_outputs.json' }],
  ['structured_outputs.json (JSON text)', { structured_outputs: { json: schemaText } }, { kind: 'json_schema', schema: schemaText, param: 'structured_outputs.json' }],
  ['structured_outputs.regex', { structured_outputs: { regex: '[a-z]{3}' } }, { kind: 'regex', pattern: '[a-z]{3}', param: 'structured_outputs.regex' }],
  ['structured_outputs.choice', { structured_outputs: { choice: ['yes', 'no'] } }, { kind: 'choice', choices: ['yes', 'no'], param: 'structured_outputs.choice' }],
  ['structured_outputs.grammar', { structured_outputs: { grammar: 'root ::= "a" | "b"' } }, { kind: 'grammar', ebnf: 'root ::= "a" | "b"', param: 'structured_outputs.grammar' }],
  ['structured_outputs.json_object', { structured_outputs: { json_object: true, disable_fallback: true } }, { kind: 'json_object', param: 'structured_outputs.json_object' }],
  [
    'structured_outputs.structural_tag',
    { structured_outputs: { structural_tag: '{"type":"structural_tag","format":{"type":"const_string","value":"hi"}}' } },
    { kind: 'structural_tag', tag: '{"type":"structural_tag","format":{"type":"const_string","value":"hi"}}', param: 'structured_outputs.structural_tag' },
  ],
  ['guided_json', { guided_json: schema, guided_decoding_backend: 'xgrammar' }, { kind: 'json_schema', schema: schemaText, param: 'guided_json' }],
  ['guided_regex', { guided_regex: '\\d+' }, { kind: 'regex', pattern: '\\d+', param: 'guided_regex' }],
  ['guided_choice', { guided_choice: ['a', 'b', 'c'] }, { kind: 'choice', choices: ['a', 'b', 'c'], param: 'guided_choice' }],
  ['guided_grammar', { guided_grammar: 'root ::= "x"', guided_decoding_backend: 'auto' }, { kind: 'grammar', ebnf: 'root ::= "x"', param: 'guided_grammar' }],
  ['nothing', {}, undefined],
];

describe.each([CHAT, COMPLETIONS])('%s lowers each structured-output field to one Constraint', (path) => {
  it.each(CASES)('%s', async (_name, extra, want) => {
    expect(await lowered(path, extra)).toEqual(want);
  });

  it('streams with the same constraint', async () => {
    const { post, engine } = setup();
    const base = path === CHAT ? { messages: msgs } : { prompt: 'p' };
    const { done } = await sse(await post(path, { model: MODEL, max_tokens: 3, stream: true, ...base, guided_choice: ['x'] }));
    expect(done).toBe(true);
    expect(engine.submitted[0]!.constraint).toEqual({ kind: 'choice', choices: ['x'], param: 'guided_choice' });
  });
});

it('completions with several prompts constrain every prompt', async () => {
  const { post, engine } = setup();
  expect((await post(COMPLETIONS, { model: MODEL, prompt: ['a', 'b'], max_tokens: 2, guided_regex: 'x+' })).status).toBe(200);
  expect(engine.submitted.map((r) => r.constraint)).toEqual([
    { kind: 'regex', pattern: 'x+', param: 'guided_regex' },
    { kind: 'regex', pattern: 'x+', param: 'guided_regex' },
  ]);
});

describe('/v1/responses text.format', () => {
  it.each<[string, unknown, Constraint | undefined]>([
    ['text', { type: 'text' }, undefined],
    ['json_object', { type: 'json_object' }, { kind: 'json_object', param: 'text.format' }],
    ['json_schema', { type: 'json_schema', name: 'person', schema, strict: true, description: 'd' }, { kind: 'json_schema', schema: schemaText, param: 'text.format.schema' }],
  ])('%s', async (_name, format, want) => {
    expect(await lowered('/v1/responses', { max_tokens: undefined, max_output_tokens: 4, text: { format } })).toEqual(want);
  });

  it('echoes the requested format in the response object', async () => {
    const { post } = setup();
    const format = { type: 'json_schema', name: 'person', schema, strict: true };
    const r: Any = await (await post('/v1/responses', { model: MODEL, input: 'x', max_output_tokens: 2, text: { format } })).json();
    expect(r.text.format).toEqual(format);
  });

  it('refuses an unenforceable schema naming text.format.schema', async () => {
    const { post } = setup();
    const err = await expectError(await post('/v1/responses', { model: MODEL, input: 'x', text: { format: { type: 'json_schema', name: 'n', schema: { type: 'array', uniqueItems: true } } } }), 400);
    expect(err.param).toBe('text.format.schema');
    expect(err.message).toContain("'uniqueItems'");
    expect((await expectError(await post('/v1/responses', { model: MODEL, input: 'x', text: { format: { type: 'grammar' } } }), 400)).param).toBe('text.format.type');
  });
});

describe('bad structured-output requests are 400s naming the field', () => {
  const cases: [string, Record<string, unknown>, string, string?][] = [
    ['two sources', { response_format: { type: 'json_object' }, guided_regex: 'a' }, 'guided_regex', 'only one structured-output constraint'],
    ['two kinds in structured_outputs', { structured_outputs: { regex: 'a', choice: ['a'] } }, 'structured_outputs.choice', 'only one'],
    ['empty structured_outputs', { structured_outputs: {} }, 'structured_outputs', 'give one of'],
    ['json_object false alone', { structured_outputs: { json_object: false } }, 'structured_outputs'],
    ['unknown structured_outputs key', { structured_outputs: { lark: 'x' } }, 'structured_outputs', 'lark'],
    ['empty choice', { guided_choice: [] }, 'guided_choice', 'at least one'],
    ['empty structured_outputs.choice', { structured_outputs: { choice: [] } }, 'structured_outputs.choice'],
    ['too many choices', { guided_choice: Array.from({ length: MAX_CHOICES + 1 }, (_, i) => `c${i}`) }, 'guided_choice'],
    ['empty regex', { guided_regex: '' }, 'guided_regex'],
    ['empty grammar', { structured_outputs: { grammar: '' } }, 'structured_outputs.grammar'],
    ['unknown response_format type', { response_format: { type: 'json_xml' } }, 'response_format.type'],
    ['json_schema without schema', { response_format: { type: 'json_schema', json_schema: { name: 'x' } } }, 'response_format.json_schema.schema', 'required'],
    ['json_schema without name', { response_format: { type: 'json_schema', json_schema: { schema } } }, 'response_format.json_schema.name'],
    ['schema not a schema', { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: [1] } } }, 'response_format.json_schema.schema', 'JSON object or a boolean'],
    ['guided_json not JSON', { guided_json: '{"type": ' }, 'guided_json', 'not valid JSON'],
    ['unsupported keyword', { guided_json: { type: 'object', properties: { n: { type: 'integer', multipleOf: 3 } } } }, 'guided_json', "'multipleOf' is not enforced by the grammar engine (at /properties/n/multipleOf)"],
    ['whitespace option', { structured_outputs: { json_object: true, disable_any_whitespace: true } }, 'structured_outputs.disable_any_whitespace'],
    ['whitespace pattern', { guided_json: schema, guided_whitespace_pattern: '[ ]?' }, 'guided_whitespace_pattern'],
    ['other backend', { guided_regex: 'a', guided_decoding_backend: 'outlines' }, 'guided_decoding_backend'],
    ['ignore_eos', { guided_regex: 'a', ignore_eos: true }, 'ignore_eos'],
    ['min_tokens', { guided_regex: 'a', min_tokens: 2 }, 'min_tokens'],
    ['structural tag not JSON', { structured_outputs: { structural_tag: '{' } }, 'structured_outputs.structural_tag', 'not valid JSON'],
    [
      'structural tag with an unenforced schema',
      { structured_outputs: { structural_tag: JSON.stringify({ type: 'structural_tag', format: { type: 'json_schema', json_schema: { type: 'string', format: 'color' } } }) } },
      'structured_outputs.structural_tag',
      "'format'",
    ],
  ];
  it.each(cases)('%s', async (_name, extra, param, text) => {
    const { post, engine } = setup();
    for (const [path, base] of [[CHAT, { messages: msgs }], [COMPLETIONS, { prompt: 'p' }]] as const) {
      const err = await expectError(await post(path, { model: MODEL, ...base, ...extra }), 400);
      expect(err.param, err.message).toBe(param);
      if (text) expect(err.message).toContain(text);
    }
    expect(engine.submitted).toHaveLength(0);
  });

  it('bounds the schema size with a clear message', async () => {
    const { post } = setup();
    const big = { type: 'object', properties: Object.fromEntries(Array.from({ length: 4000 }, (_, i) => [`property_${i}`, { type: 'string' }])) };
    expect(JSON.stringify(big).length).toBeGreaterThan(MAX_SCHEMA_CHARS);
    const err = await expectError(await post(CHAT, { model: MODEL, messages: msgs, response_format: { type: 'json_schema', json_schema: { name: 'big', schema: big } } }), 400);
    expect(err.param).toBe('response_format.json_schema.schema');
    expect(err.message).toMatch(new RegExp(`the limit is ${MAX_SCHEMA_CHARS}`));
  });

  it("a compile error from the sidecar reaches the client as a 400 with the sidecar's param", async () => {
    const { post, engine } = setup();
    engine.failNext(new EngineError('INVALID_REQUEST', 'regex does not compile: unbalanced (', 'guided_regex'));
    const err = await expectError(await post(CHAT, { model: MODEL, messages: msgs, guided_regex: '(' }), 400);
    expect(err.param).toBe('guided_regex');
    expect(err.message).toContain('does not compile');
  });
});
