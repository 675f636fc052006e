// A minimal OpenAI-compatible server that is not ernie-edge (node:http, no Hono, no engine): the
// "any other server" `bench serve` is tested against. It answers /v1/models, /v1/completions and
// /v1/chat/completions, streamed (SSE: one chunk per token in bursts, a usage chunk, [DONE]) or
// whole, and keeps a ledger of what it answered so a test can compare the benchmark's report with it.
// Output length: max_tokens when ignore_eos, else max_tokens minus (prompt size mod 3), so the usage
// it reports differs from what was asked. `failWith` picks requests to refuse, by their prompt (not
// by arrival order, so any interleaving fails the same requests). `return_token_ids` (vLLM's extension)
// puts each chunk's token ids on its choice; `silentTokens` makes each stream's first tokens decode to
// no text (as a held-back UTF-8 character does), so only their ids say they arrived.

import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Ledger {
  /** Requests answered, by status. */
  byStatus: Record<string, number>;
  /** Sum of usage.completion_tokens / prompt_tokens over 200 answers. */
  completionTokens: number;
  promptTokens: number;
  bodies: Record<string, unknown>[];
}

export interface ForeignServer {
  base: string;
  ledger: Ledger;
  close(): Promise<void>;
}

export type ForeignBody = {
  model?: string;
  prompt?: string | number[];
  messages?: { content: string }[];
  max_tokens?: number;
  stream?: boolean;
  ignore_eos?: boolean;
  stream_options?: { include_usage?: boolean };
  return_token_ids?: boolean;
};

const promptSize = (b: ForeignBody): number => (Array.isArray(b.prompt) ? b.prompt.length : typeof b.prompt === 'string' ? b.prompt.length : (b.messages ?? []).reduce((a, m) => a + m.content.length, 0));

export async function startForeignServer(
  opts: { model?: string; failWith?: (b: ForeignBody) => number | null; tokensPerBurst?: number; /** Never send usage (servers without stream_options). */ noUsage?: boolean; silentTokens?: number } = {},
): Promise<ForeignServer> {
  const model = opts.model ?? 'foreign-model';
  const ledger: Ledger = { byStatus: {}, completionTokens: 0, promptTokens: 0, bodies: [] };
  const count = (s: number) => (ledger.byStatus[s] = (ledger.byStatus[s] ?? 0) + 1);
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/v1/models') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [{ id: model, object: 'model' }] }));
      return;
    }
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (raw += d));
    req.on('end', () => {
      const chat = req.url === '/v1/chat/completions';
      if (req.method !== 'POST' || (!chat && req.url !== '/v1/completions')) {
        count(404);
        res.writeHead(404).end();
        return;
      }
      const b = JSON.parse(raw) as ForeignBody;
      ledger.bodies.push(b as Record<string, unknown>);
      const fail = opts.failWith?.(b) ?? null;
      if (fail !== null) {
        count(fail);
        res.writeHead(fail, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'refused by the test', type: 'test', code: fail } }));
        return;
      }
      const size = promptSize(b);
      const n = Math.max(1, (b.max_tokens ?? 16) - (b.ignore_eos ? 0 : size % 3));
      const usage = { prompt_tokens: size, completion_tokens: n, total_tokens: size + n };
      count(200);
      ledger.completionTokens += n;
      ledger.promptTokens += size;
      const finish = (i: number) => (i === n - 1 ? 'length' : null);
      const text = (i: number) => (i < (opts.silentTokens ?? 0) ? '' : `t${i} `);
      const ids = (i: number) => (b.return_token_ids ? { token_ids: [100 + i] } : {});
      const piece = (i: number) => (chat ? { index: 0, delta: { content: text(i) }, finish_reason: finish(i), ...ids(i) } : { index: 0, text: text(i), finish_reason: finish(i), ...ids(i) });
      if (!b.stream) {
        const choice = chat ? { index: 0, message: { role: 'assistant', content: 'x'.repeat(n) }, finish_reason: 'length' } : { index: 0, text: 'x'.repeat(n), finish_reason: 'length' };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 'x', object: chat ? 'chat.completion' : 'text_completion', model, choices: [choice], ...(opts.noUsage ? {} : { usage }) }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const send = (o: unknown) => res.write(`data: ${JSON.stringify(o)}\n\n`);
      const burst = opts.tokensPerBurst ?? 4;
      let i = 0;
      if (chat) send({ id: 'x', choices: [{ index: 0, delta: { role: 'assistant' }, finish_reason: null }] });
      const step = () => {
        for (const end = Math.min(n, i + burst); i < end; i++) send({ id: 'x', model, choices: [piece(i)] });
        if (i < n) {
          setImmediate(step);
          return;
        }
        if (b.stream_options?.include_usage && !opts.noUsage) send({ id: 'x', model, choices: [], usage });
        res.end('data: [DONE]\n\n');
      };
      step();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    ledger,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
