// `developer` messages (OpenAI's newer system role, sent by coding agents) reach the model as `system`,
// as vLLM and llama.cpp map them: ERNIE's chat template renders only system/user/assistant and would
// drop them. Proven through the real tokenizer and chat template (EngineHost over the fake native
// engine): prompt_tokens grows with a developer message and equals the same text sent as system.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/gateway/app.js';
import { makeHost, type HostEnv } from '../sidecar/server/helpers.js';

let env: HostEnv;
let app: ReturnType<typeof createApp>;
beforeAll(async () => {
  env = await makeHost();
  app = createApp({ engine: env.host });
});
afterAll(async () => {
  await env.host.close();
});

const post = async (path: string, body: unknown): Promise<Response> =>
  app.app.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** Sends a chat request and steps the manual engine until the answer is complete. */
async function chatUsage(messages: { role: string; content: string }[]): Promise<{ prompt_tokens: number }> {
  const pending = post('/v1/chat/completions', { messages, max_tokens: 1, temperature: 0 });
  let settled = false;
  void pending.finally(() => (settled = true));
  // Each round runs one engine step, then lets the host and gateway react to it.
  while (!settled) {
    env.engine.step();
    await new Promise((r) => setImmediate(r));
  }
  const res = await pending;
  expect(res.status).toBe(200);
  return ((await res.json()) as { usage: { prompt_tokens: number } }).usage;
}

const user = { role: 'user', content: 'Hello' };
const instruction = 'Answer in French, in one short sentence.';

describe('developer role', () => {
  it('chat: a developer message counts in prompt_tokens exactly as the same system message', async () => {
    const plain = await chatUsage([user]);
    const dev = await chatUsage([{ role: 'developer', content: instruction }, user]);
    const sys = await chatUsage([{ role: 'system', content: instruction }, user]);
    expect(dev.prompt_tokens).toBeGreaterThan(plain.prompt_tokens);
    expect(dev.prompt_tokens).toBe(sys.prompt_tokens);
  });

  it('/tokenize renders a developer message as the system one', async () => {
    const tokens = async (role: string) => {
      const res = await post('/tokenize', { messages: [{ role, content: instruction }, user] });
      expect(res.status).toBe(200);
      return ((await res.json()) as { tokens: number[] }).tokens;
    };
    const [dev, sys, none] = [await tokens('developer'), await tokens('system'), await tokens('user')];
    expect(dev).toEqual(sys);
    expect(dev).not.toEqual(none);
  });
});
