// Seeded generator of hostile / malformed requests, shared by the in-process gateway fuzz and the
// real-process fuzz against `ernie-edge serve` on the real engine.
import { MODEL } from './helpers.js';
import { rng as mulberry32 } from '../../src/cli/bench-serve/rng.js';

type Body = Record<string, unknown>;
export interface Case {
  path: string;
  body: string | Uint8Array;
  contentType: string | null;
  method?: string;
}

export const CHAT = '/v1/chat/completions';
export const COMPLETIONS = '/v1/completions';
const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);

export function generateCases(count: number, seed: number): Case[] {
  const rnd = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  // Values invalid for EVERY numeric sampling field.
  const badNumbers = ['NaN', 'Infinity', '-1', '1e999', 1e308, -1e308, true, {}, [], [1], 'abc', { $gt: 1 }];
  const numericFields = ['temperature', 'top_p', 'top_k', 'min_p', 'frequency_penalty', 'presence_penalty', 'repetition_penalty', 'seed', 'max_tokens', 'n'];
  const fieldMutations: [string, unknown[]][] = [
    ['stop', [5, [1, 2], {}, Array.from({ length: 50 }, (_, i) => `s${i}`), [null]]],
    ['logit_bias', [{ abc: 1 }, { '1': 500 }, { '1': -1e9 }, [], 'x', { '1': 'x' }, { '-5': 1 }, { '99999999999': 1 }]],
    ['stream', ['true', 1, {}, []]],
    ['stream_options', ['x', { include_usage: 'yes' }, 5, []]],
    ['n', [0, 129, 17, 2.5, -3]],
    ['max_tokens', [0, -5, 1.5, 2 ** 40, 4096]],
    ['model', [5, {}, [], 'no-such-model', 'x'.repeat(600)]],
    ['min_tokens', [3, -1, 'x']],
    ['structured_outputs', [{}, { choice: [] }, { regex: 'a', choice: ['a'] }, { json: '{' }, 'x', { json: { oneOf: [] } }]],
    ['guided_choice', [[], 'x', [1]]],
    ['guided_json', ['{', { type: 'array', uniqueItems: true }, 5]],
  ];
  const chatOnly: [string, unknown[]][] = [
    ['messages', [[], 'hello', {}, [{ role: 'wizard', content: 'x' }], [{ role: 'user' }], [{ role: 'user', content: 5 }], [{ content: 'x' }], Array.from({ length: 5000 }, () => ({ role: 'user', content: 'x' })), [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }], [[[[['x']]]]], [null]]],
    ['logprobs', [5, 'yes', {}]],
    ['top_logprobs', [50, -1, 'x']],
    ['tools', [[{ type: 'function' }], 'x']],
    ['response_format', [{ type: 'json_xml' }, 'json', { type: 'json_schema' }, { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', minLenght: 1 } } }]],
  ];
  const completionOnly: [string, unknown[]][] = [
    ['prompt', [{}, [], [[]], [1, 'a'], [-1], [1.5], null, true, 12, Array.from({ length: 100 }, () => 'p'), [[1], ['a']], [2 ** 40]]],
    ['logprobs', [true, 50, -1, 'x']],
    ['echo', ['yes', 1]],
    ['suffix', ['tail', 5]],
    ['best_of', [7, 0, 'x']],
  ];
  const validChat = (): Body => ({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
  const validCompletion = (): Body => ({ model: MODEL, prompt: 'hi', max_tokens: 2 });
  const cases: Case[] = [];
  const utf8 = new TextEncoder();
  for (let i = 0; i < count; i++) {
    const kind = rnd();
    const chat = rnd() < 0.5;
    const path = chat ? CHAT : COMPLETIONS;
    if (kind < 0.55) {
      // structurally valid JSON with one or more definitely-invalid fields
      const body = chat ? validChat() : validCompletion();
      const rounds = 1 + Math.floor(rnd() * 3);
      for (let r = 0; r < rounds; r++) {
        if (rnd() < 0.4) body[pick(numericFields)] = pick(badNumbers);
        else {
          const [field, values] = pick([...fieldMutations, ...(chat ? chatOnly : completionOnly)]);
          body[field] = pick(values);
        }
      }
      if (body.stream_options !== undefined && rnd() < 0.5) delete body.stream; // stream_options without stream
      cases.push({ path, body: JSON.stringify(body), contentType: 'application/json' });
    } else if (kind < 0.65) {
      // a required field missing or the wrong top-level type
      const body = chat ? validChat() : validCompletion();
      delete body[chat ? 'messages' : 'prompt'];
      cases.push({ path, body: pick([JSON.stringify(body), 'null', '[]', '"str"', '123', 'true', '{}']), contentType: 'application/json' });
    } else if (kind < 0.75) {
      // invalid UTF-8 spliced into a valid body
      const bytes = utf8.encode(JSON.stringify(chat ? validChat() : validCompletion()));
      const at = 1 + Math.floor(rnd() * (bytes.length - 2));
      const junk = pick([[0xff], [0xc3], [0xe4, 0xbd], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0x80]]);
      cases.push({ path, body: new Uint8Array([...bytes.slice(0, at), ...junk, ...bytes.slice(at)]), contentType: 'application/json' });
    } else if (kind < 0.83) {
      // truncated / garbage / deeply nested JSON
      const text = JSON.stringify(chat ? validChat() : validCompletion());
      const body = pick([
        text.slice(0, Math.floor(rnd() * (text.length - 1))),
        deep(50 + Math.floor(rnd() * 50000)),
        `{"messages": ${deep(40)}}`,
        `{"prompt": ${'{"a":'.repeat(100)}1${'}'.repeat(100)}}`,
        text + '}',
        String.fromCharCode(...Array.from({ length: 40 }, () => 32 + Math.floor(rnd() * 90))),
        '',
        "{'model': 'x'}",
        '{"max_tokens": NaN}',
      ]);
      cases.push({ path, body, contentType: 'application/json' });
    } else if (kind < 0.9) {
      // wrong content types (with bodies that would otherwise be valid)
      cases.push({
        path,
        body: JSON.stringify(chat ? validChat() : validCompletion()),
        contentType: pick(['text/plain', 'multipart/form-data; boundary=x', 'application/x-www-form-urlencoded', 'application/xml', 'image/png', 'application/jsonx']),
      });
    } else if (kind < 0.95) {
      // tokenize / detokenize with bad shapes
      cases.push(
        pick([
          { path: '/tokenize', body: JSON.stringify({ prompt: pick([5, null, [], {}]) }), contentType: 'application/json' },
          { path: '/tokenize', body: JSON.stringify({ messages: [{ role: 'alien', content: 'x' }] }), contentType: 'application/json' },
          { path: '/detokenize', body: JSON.stringify({ tokens: pick([[-1], ['a'], 'x', [1.5], [2 ** 40], [10 ** 9]]) }), contentType: 'application/json' },
        ]),
      );
    } else {
      // wrong methods and unknown routes
      cases.push(pick([
        { path, body: '', contentType: null, method: pick(['GET', 'PUT', 'DELETE', 'PATCH']) },
        { path: `/v1/${pick(['engines', 'chat', 'completion', 'embeddings', '..%2f'])}`, body: '{}', contentType: 'application/json' },
      ]));
    }
  }
  return cases;
}

