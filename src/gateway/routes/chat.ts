// POST /v1/chat/completions — OpenAI chat completions over the engine, JSON or SSE.
// `echo` is not part of OpenAI's chat API and is ignored here; tools/response formats other than text
// are rejected by the schema.

import type { SubmitRequest } from '../../protocol/engine-client.js';
import { readJsonBody } from '../body.js';
import { toEngineMessage } from '../chat-messages.js';
import { resolveModel, type AppContext, type RouteDeps } from '../deps.js';
import { checkSequences } from '../sequence-limit.js';
import { startRuns, streamed, type RunGroup } from '../engine-run.js';
import { badRequest } from '../errors.js';
import { chatLogprobContent, fingerprint, head, randomId, type Envelope } from '../openai-shapes.js';
import { Progress, type OpenAIFinish } from '../progress.js';
import { buildSampling, streamPlan, type StreamPlan } from '../sampling.js';
import { chatRequestSchema, type ChatMessageIn } from '../schemas.js';
import { sseResponse, stallGuard } from '../sse.js';

export function chatHandler(deps: RouteDeps) {
  return async (c: AppContext): Promise<Response> => {
    const rec = c.get('rec');
    const json = await readJsonBody(c.req.raw, deps.maxBodyBytes);
    rec.mark('gw.body');
    const body = chatRequestSchema.parse(json);
    const { info, name } = await resolveModel(c.var.engine, deps, body.model);
    const plan = streamPlan(body);
    const n = body.n ?? 1; // 1..MAX_N (the schema)
    checkSequences(1, n, info);
    if (body.top_logprobs != null && body.logprobs !== true) {
      throw badRequest('top_logprobs requires logprobs to be true', 'top_logprobs');
    }
    const sampling = buildSampling(body, info, {
      maxTokens: body.max_completion_tokens ?? body.max_tokens ?? null,
      logprobs: body.logprobs === true ? (body.top_logprobs ?? 0) : null,
    });
    const env: Envelope = { id: `chatcmpl-${randomId()}`, created: Math.floor(deps.now() / 1000), model: name, system_fingerprint: fingerprint(name) };
    const req: SubmitRequest = {
      id: env.id,
      prompt: { kind: 'chat', messages: body.messages.map(toEngineMessage), addGenerationPrompt: body.add_generation_prompt ?? true },
      sampling,
      n,
      echo: false,
    };
    rec.traceAs(env.id);
    rec.mark('gw.parsed');
    rec.generation = true;
    const group = await startRuns(c.var.engine, [req], c.req.raw.signal);
    const progress = new Progress(group.runs, n, rec);
    const asIds = body.return_tokens_as_token_ids === true;
    if (plan.stream) {
      rec.streaming = true;
      const usage = plan.includeUsage ? () => ({ ...head(env, 'chat.completion.chunk'), choices: [], usage: progress.usage() }) : null;
      const chunks = chatChunks(env, group, progress, plan, n, sampling.logprobs !== null, asIds);
      return sseResponse(streamed(group, chunks, usage, rec.end.bind(rec)), group.cancel, {}, () => rec.sent(), stallGuard(deps, rec.id));
    }
    try {
      const choices = Array.from({ length: n }, (_, index) => ({ index, text: '', logprobs: [] as ReturnType<typeof chatLogprobContent>, finish: null as OpenAIFinish | null }));
      for await (const { run, event } of group.events()) {
        for (const u of progress.apply(run, event)) {
          const ch = choices[u.index]!;
          ch.text += u.text;
          ch.logprobs.push(...chatLogprobContent(u.logprobs, asIds));
          ch.finish = u.finishReason ?? ch.finish;
        }
      }
      return c.json({
        ...head(env, 'chat.completion'),
        choices: choices.map((ch) => ({
          index: ch.index,
          message: { role: 'assistant', content: ch.text, refusal: null },
          logprobs: sampling.logprobs !== null ? { content: ch.logprobs, refusal: null } : null,
          finish_reason: ch.finish ?? 'stop',
        })),
        usage: progress.usage(),
      });
    } finally {
      group.cancel();
    }
  };
}

async function* chatChunks(
  env: Envelope,
  group: RunGroup,
  progress: Progress,
  plan: StreamPlan,
  n: number,
  logprobs: boolean,
  asIds: boolean,
): AsyncGenerator<unknown, void, undefined> {
  const chunk = (choices: unknown[], usage: unknown) => ({
    ...head(env, 'chat.completion.chunk'),
    choices,
    ...(plan.continuousUsage ? { usage: progress.usage() } : plan.includeUsage ? { usage } : {}),
  });
  for (let index = 0; index < n; index++) {
    yield chunk([{ index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }], null);
  }
  for await (const { run, event } of group.events()) {
    for (const u of progress.apply(run, event)) {
      // A step's tokens always make a chunk, also when their text is still held back (an incomplete
      // UTF-8 character, a possible stop string) or decodes to nothing (special tokens): as vLLM, the
      // client sees each token when the engine made it, and time to first token is the engine's.
      if (u.tokenIds.length === 0 && !u.finishReason) continue;
      yield chunk(
        [
          {
            index: u.index,
            delta: u.text || !u.finishReason ? { content: u.text } : {},
            logprobs: logprobs ? { content: chatLogprobContent(u.logprobs, asIds), refusal: null } : null,
            finish_reason: u.finishReason,
          },
        ],
        null,
      );
    }
  }
}
