// Tool calls through HTTP over the REAL engine (tiny config, formula weights: random logits) with the
// grammar pool: every call of required, named and auto (a logit_bias on the trigger's tokens makes the
// model write the trigger's tokens) parses and validates (ajv) against its tool's parameters, whole and streamed; the
// same seed gives the same calls both ways.
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppHandle } from '../../src/gateway/app.js';
import type { TokenizerBundle } from '../../src/sidecar/tokenizer/index.js';
import { parseSSE } from './helpers.js';
import { chatCheckpoint, realGateway, REAL_MODEL, type RealGateway } from './real-engine.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed JSON, read path by path in assertions
type Any = Record<string, any>;

// Bounded schemas: with random logits an unbounded string need never close.
const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', enum: ['Paris', 'Rome', '北京'] }, days: { type: 'integer', minimum: 1, maximum: 7 } },
        required: ['city', 'days'],
        additionalProperties: false,
      },
    },
  },
  { type: 'function', function: { name: 'set_flag', parameters: { type: 'object', properties: { on: { type: 'boolean' } }, required: ['on'], additionalProperties: false } } },
  { type: 'function', function: { name: 'search', parameters: { type: 'object', properties: { q: { type: 'string', minLength: 1, maxLength: 6 } }, required: ['q'], additionalProperties: false } } },
];
const ajv = new Ajv({ strict: false });
const validators = new Map(TOOLS.map((t) => [t.function.name, ajv.compile(t.function.parameters)]));
const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];

let gw: RealGateway;
let handle: AppHandle;
let bundle: TokenizerBundle;
beforeAll(async () => {
  gw = await realGateway({ dir: await chatCheckpoint(), maxModelLen: 2048, maxNumBatchedTokens: 256, kvBlocks: 256, grammar: true, app: { enableAutoToolChoice: true } });
  handle = gw.handle;
  bundle = gw.bundle;
});
afterAll(async () => {
  await gw?.close();
});

/**
 * Byte-fallback pieces <0x80>..<0xFF> biased away, as the structured-output proof does: with random
 * logits they spell invalid UTF-8 inside strings (the client sees U+FFFD, lengths are off), a known
 * limit of byte-level masking with xgrammar 0.1.27 (structured-proof.test.ts says the same), not of tool calling.
 */
const noStrayBytes = (): Record<string, number> => {
  const out: Record<string, number> = {};
  for (let b = 0x80; b <= 0xff; b++) {
    const id = bundle.tokenizer.tokenToId(`<0x${b.toString(16).toUpperCase()}>`);
    if (id !== null) out[String(id)] = -100;
  }
  return out;
};
const post = (body: Any) =>
  Promise.resolve(
    handle.fetch(
      new Request('http://test/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: REAL_MODEL, messages, tools: TOOLS, ...body, logit_bias: { ...noStrayBytes(), ...(body.logit_bias as object) } }),
      }),
    ),
  );

interface Call {
  name: string;
  arguments: string;
}

function expectValid(calls: Call[], where: string): void {
  expect(calls.length, where).toBeGreaterThan(0);
  for (const c of calls) {
    const validate = validators.get(c.name);
    expect(validate, `${where}: unknown tool ${c.name}`).toBeDefined();
    const args: unknown = JSON.parse(c.arguments);
    expect(validate!(args), `${where}: ${c.arguments} ${JSON.stringify(validate!.errors)}`).toBe(true);
  }
}

/** The whole answer's choices: finish reason, content, calls. */
async function whole(body: Any) {
  const res = await post(body);
  expect(res.status).toBe(200);
  const json = (await res.json()) as Any;
  return (json.choices as Any[]).map((ch) => ({
    finish: ch.finish_reason as string,
    content: ch.message.content as string | null,
    calls: ((ch.message.tool_calls ?? []) as Any[]).map((c) => ({ name: c.function.name, arguments: c.function.arguments }) as Call),
  }));
}

/** The streamed answer rebuilt from its deltas, as a client does. */
async function streamed(body: Any) {
  const res = await post({ ...body, stream: true });
  expect(res.status).toBe(200);
  const out: { finish: string | null; content: string; calls: Call[] }[] = [];
  for (const ev of parseSSE(await res.text()).events as Any[]) {
    for (const ch of ev.choices as Any[]) {
      const o = (out[ch.index] ??= { finish: null, content: '', calls: [] });
      o.content += ch.delta.content ?? '';
      for (const tc of ch.delta.tool_calls ?? []) {
        if (tc.id !== undefined) o.calls.push({ name: tc.function.name, arguments: '' });
        o.calls[tc.index]!.arguments += tc.function.arguments;
      }
      o.finish = ch.finish_reason ?? o.finish;
    }
  }
  return out;
}

const triggerBias = () => Object.fromEntries(bundle.encodePrompt('<tool_call>', { addSpecialTokens: false }).map((id) => [String(id), 5]));

describe('tool calls on the real engine are always valid', () => {
  it('required: one or more valid calls, content null, whole and streamed alike (n = 2, several seeds)', async () => {
    for (const seed of [1, 2, 3]) {
      const body = { tool_choice: 'required', temperature: 1, seed, n: 2, max_tokens: 400 };
      const w = await whole(body);
      for (const [i, ch] of w.entries()) {
        expect(ch.finish, `seed ${seed} choice ${i} ${JSON.stringify(ch)}`).toBe('tool_calls');
        expect(ch.content).toBeNull();
        expectValid(ch.calls, `required seed ${seed} choice ${i}`);
      }
      const s = await streamed(body);
      expect(s.map((c) => ({ finish: c.finish, calls: c.calls }))).toEqual(w.map((c) => ({ finish: c.finish, calls: c.calls })));
      expect(s.every((c) => c.content === '')).toBe(true);
    }
  });

  it('named: exactly one call, of that tool; parallel_tool_calls false with required: exactly one', async () => {
    for (const seed of [4, 5]) {
      const named = await whole({ tool_choice: { type: 'function', function: { name: 'search' } }, temperature: 1, seed, max_tokens: 200 });
      expect(named[0]!.calls.map((c) => c.name)).toEqual(['search']);
      expectValid(named[0]!.calls, `named seed ${seed}`);
      const one = await streamed({ tool_choice: 'required', parallel_tool_calls: false, temperature: 1, seed, max_tokens: 200 });
      expect(one[0]!.calls).toHaveLength(1);
      expect(one[0]!.finish).toBe('tool_calls');
      expectValid(one[0]!.calls, `single seed ${seed}`);
    }
  });

  // NOTE: the test tokenizer writes the trigger <tool_call> as five tokens, and a static logit_bias
  // cannot make random logits write five tokens in order (biased alike, one of them repeats), so a
  // call is not forced open here; what auto guarantees is checked on whatever the model writes: with
  // the trigger's tokens favoured, any call it opens is complete and valid, and no markup is content.
  it('auto: free text; any call the model opens is valid, whole and streamed alike', async () => {
    for (const seed of [6, 7, 8]) {
      for (const logit_bias of [undefined, triggerBias()]) {
        const body = { temperature: 1, seed, n: 2, max_tokens: 80, ...(logit_bias ? { logit_bias } : {}) };
        const w = await whole(body);
        for (const ch of w) {
          expect(ch.content ?? '').not.toContain('<tool_call>');
          if (ch.finish === 'tool_calls') expectValid(ch.calls, `auto seed ${seed}`);
          else expect(ch.calls.length === 0 || ch.finish === 'length').toBe(true);
        }
        const s = await streamed(body);
        expect(s.map((c) => c.calls)).toEqual(w.map((c) => c.calls));
        expect(s.map((c) => c.content)).toEqual(w.map((c) => c.content ?? ''));
      }
    }
  });
});
