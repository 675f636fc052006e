// openai-node in a real Chromium page on ANOTHER origin than the API, with --allowed-origins naming
// that page's origin: the browser's own CORS checks decide (preflights with openai-node's
// x-stainless-* headers, OpenAI-Organization, OpenAI-Project; exposed response headers). The page loads
// openai-node's ES modules as they ship (node_modules/openai/client.mjs) and calls the Responses API
// (create, JSON and streamed) and chat. A page on an origin the API does not allow is refused.
import { createReadStream, existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, HAVE_CHROMIUM, launchBrowser, startServer, watchErrors, type Browser, type TestServer } from './harness.js';

const MODEL = 'baidu/ERNIE-4.5-0.3B-PT';
const KEY = 'sk-browser';
const OPENAI_DIR = join(process.cwd(), 'node_modules', 'openai');
if (!HAVE_CHROMIUM) console.warn(`browser openai-node tests skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium)`);

// The page: imports openai-node and exposes one function that runs every call and reports back.
const PAGE = `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>openai-node in a browser</title>
<script type="module">
import { OpenAI } from '/openai/client.mjs';
window.runAll = async (baseURL, model, key) => {
  const client = new OpenAI({ apiKey: key, baseURL, dangerouslyAllowBrowser: true, maxRetries: 0, organization: 'org-test', project: 'proj-test' });
  const created = await client.responses.create({ model, input: 'Hello from a browser', instructions: 'Be brief.', max_output_tokens: 12 });
  const stream = await client.responses.create({ model, input: [{ role: 'user', content: 'Stream please' }], max_output_tokens: 12, stream: true });
  const types = [];
  let streamed = '';
  let final = null;
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === 'response.output_text.delta') streamed += ev.delta;
    if (ev.type === 'response.completed' || ev.type === 'response.incomplete') final = ev.response;
  }
  const followUp = await client.responses.create({ model, input: 'And then?', previous_response_id: created.id, max_output_tokens: 4 }).withResponse();
  const chat = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });
  return {
    created: { id: created.id, status: created.status, text: created.output_text, total: created.usage.total_tokens },
    types, streamed, finalText: final && final.output[0].content[0].text,
    followUp: { previous: followUp.data.previous_response_id, requestId: followUp.response.headers.get('x-request-id') },
    chat: chat.choices[0].message.content,
  };
};
window.ready = true;
</script>`;

/** Serves the page and openai-node's files from its own origin. */
async function pageServer(): Promise<{ origin: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
      return;
    }
    const file = normalize(join(OPENAI_DIR, path.replace(/^\/openai\//, '')));
    if (!path.startsWith('/openai/') || !file.startsWith(OPENAI_DIR) || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': extname(file) === '.mjs' ? 'text/javascript' : 'application/octet-stream' });
    createReadStream(file).pipe(res);
  });
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
  // localhost, not 127.0.0.1: another origin than the API's even apart from the port.
  return { origin: `http://localhost:${port}`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe.skipIf(!HAVE_CHROMIUM)('openai-node in Chromium on another origin', () => {
  let browser: Browser;
  let site: Awaited<ReturnType<typeof pageServer>>;
  let api: TestServer | null = null;
  let page: Page | null = null;
  let errors: string[] = [];
  beforeAll(async () => {
    [browser, site] = await Promise.all([launchBrowser(), pageServer()]);
  });
  afterAll(async () => {
    await browser?.close();
    await site?.close();
  });
  afterEach(async () => {
    await page?.close();
    await api?.close();
    [page, api] = [null, null];
  });

  async function openPage(): Promise<Page> {
    page = await browser.context.newPage();
    errors = watchErrors(page);
    await page.goto(`${site.origin}/`);
    await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);
    return page;
  }

  it('create (JSON and streamed), previous_response_id and chat all pass CORS for the allowed origin', async () => {
    api = await startServer({ allowedOrigins: [site.origin], apiKey: KEY });
    const p = await openPage();
    const base = `${api.url}v1`;
    // A failure comes back as text (a page error's stack names page URLs the test runner cannot map).
    const r = await p.evaluate(
      ([b, m, k]) => (window as unknown as { runAll: (...a: string[]) => Promise<unknown> }).runAll(b!, m!, k!).catch((e: Error) => ({ error: `${e.constructor.name}: ${e.message}` })),
      [base, MODEL, KEY],
    );
    expect((r as { error?: string }).error).toBeUndefined();
    const got = r as {
      created: { id: string; status: string; text: string; total: number };
      types: string[];
      streamed: string;
      finalText: string;
      followUp: { previous: string; requestId: string | null };
      chat: string;
    };
    expect(errors).toEqual([]);
    expect(got.created.id).toMatch(/^resp_/);
    expect(got.created.text.length).toBeGreaterThan(0);
    expect(got.created.total).toBeGreaterThan(0);
    expect(got.types.slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    expect(got.types.at(-1)).toMatch(/^response\.(completed|incomplete)$/);
    expect(got.streamed).toBe(got.finalText);
    expect(got.followUp.previous).toBe(got.created.id);
    // An exposed response header: readable from the page only because CORS exposes it.
    expect(got.followUp.requestId).toMatch(/.+/);
    expect(got.chat.length).toBeGreaterThan(0);
    expect(api.engine.submitted.map((s) => s.id.slice(0, 5))).toEqual(['resp_', 'resp_', 'resp_', 'chatc']);
  });

  it('a page on an origin the API does not allow cannot call it', async () => {
    api = await startServer({ allowedOrigins: ['https://elsewhere.example'], apiKey: KEY });
    const p = await openPage();
    const base = `${api.url}v1`;
    const err = await p.evaluate(
      ([b, m, k]) => (window as unknown as { runAll: (...a: string[]) => Promise<unknown> }).runAll(b!, m!, k!).then(() => 'no error', (e: Error) => e.constructor.name),
      [base, MODEL, KEY],
    );
    expect(err).toBe('APIConnectionError');
    expect(errors.some((e) => /CORS/.test(e))).toBe(true);
    expect(api.engine.submitted).toEqual([]);
  });
});
