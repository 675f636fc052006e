// POST /v1/completions — OpenAI (legacy) completions. `prompt` may be a string, a list of strings, a
// list of token ids or a list of such lists; token-id prompts go to the engine exactly as given. Each
// prompt is its own engine request; choices are indexed prompt-major (prompt i, choice j → i·n + j).
// Decisions: max_tokens defaults to 16 (OpenAI's documented default for this endpoint); `echo`
// together with `logprobs` is rejected (the engine contract has no prompt logprobs); `best_of` must
// equal n when given (no server-side best-of selection).

import type { Prompt, SubmitRequest } from '../../protocol/engine-client.js';
import { readJsonBody } from '../body.js';
import { resolveModel, type AppContext, type RouteDeps } from '../deps.js';
import { checkSequences } from '../sequence-limit.js';
import { startRuns, streamed, type RunGroup } from '../engine-run.js';
import { badRequest } from '../errors.js';
import { appendCompletionLogprobs, emptyCompletionLogprobs, fingerprint, head, randomId, type Envelope } from '../openai-shapes.js';
import { Progress, type OpenAIFinish } from '../progress.js';
import { buildSampling, streamPlan, type StreamPlan } from '../sampling.js';
import { completionRequestSchema, type CompletionRequest } from '../schemas.js';
import { sseResponse, stallGuard } from '../sse.js';

export const COMPLETIONS_DEFAULT_MAX_TOKENS = 16;

function prompts(p: CompletionRequest['prompt']): Prompt[] {
  if (typeof p === 'string') return [{ kind: 'text', text: p }];
  if (typeof p[0] === 'number') return [{ kind: 'tokens', ids: p as number[] }];
  if (typeof p[0] === 'string') return (p as string[]).map((text) => ({ kind: 'text', text }));
  return (p as number[][]).map((ids) => ({ kind: 'tokens', ids }));
}

interface Opts {
  env: Envelope;
  n: number;
  echo: boolean;
  logprobs: boolean;
  asIds: boolean;
}

export function completionsHandler(deps: RouteDeps) {
  return async (c: AppContext): Promise<Response> => {
    const rec = c.get('rec');
    const json = await readJsonBody(c.req.raw, deps.maxBodyBytes);
    rec.mark('gw.body');
    const body = completionRequestSchema.parse(json);
    const { info, name } = await resolveModel(c.var.engine, deps, body.model);
    const plan = streamPlan(body);
    const n = body.n ?? 1; // 1..MAX_N (the schema)
    if (body.best_of != null && body.best_of !== n) throw badRequest('best_of must equal n when given', 'best_of');
    const echo = body.echo === true;
    if (echo && body.logprobs != null) throw badRequest('echo together with logprobs is not supported', 'echo');
    const sampling = buildSampling(body, info, {
      maxTokens: body.max_tokens ?? COMPLETIONS_DEFAULT_MAX_TOKENS,
      logprobs: body.logprobs ?? null,
    });
    const env: Envelope = { id: `cmpl-${randomId()}`, created: Math.floor(deps.now() / 1000), model: name, system_fingerprint: fingerprint(name) };
    const list = prompts(body.prompt);
    checkSequences(list.length, n, info);
    const reqs: SubmitRequest[] = list.map((prompt, i) => ({ id: list.length === 1 ? env.id : `${env.id}-${i}`, prompt, sampling, n, echo }));
    rec.traceAs(env.id);
    rec.mark('gw.parsed');
    rec.generation = true;
    const group = await startRuns(c.var.engine, reqs, c.req.raw.signal);
    const progress = new Progress(group.runs, n, rec);
    const opts: Opts = { env, n, echo, logprobs: sampling.logprobs !== null, asIds: body.return_tokens_as_token_ids === true };
    if (plan.stream) {
      rec.streaming = true;
      const usage = plan.includeUsage ? () => ({ ...head(opts.env, 'text_completion'), choices: [], usage: progress.usage() }) : null;
      return sseResponse(streamed(group, completionChunks(opts, group, progress, plan), usage, rec.end.bind(rec)), group.cancel, {}, () => rec.sent(), stallGuard(deps, rec.id));
    }
    try {
      const choices = Array.from({ length: progress.choiceCount }, (_, index) => {
        const text = echo ? (group.runs[Math.floor(index / n)]!.accepted.promptText ?? '') : '';
        return { index, text, logprobs: emptyCompletionLogprobs(), offset: text.length, finish: null as OpenAIFinish | null };
      });
      for await (const { run, event } of group.events()) {
        for (const u of progress.apply(run, event)) {
          const ch = choices[u.index]!;
          ch.offset = appendCompletionLogprobs(ch.logprobs, u.logprobs, opts.asIds, ch.offset);
          ch.text += u.text;
          ch.finish = u.finishReason ?? ch.finish;
        }
      }
      return c.json({
        ...head(env, 'text_completion'),
        choices: choices.map((ch) => ({
          index: ch.index,
          text: ch.text,
          logprobs: opts.logprobs ? ch.logprobs : null,
          finish_reason: ch.finish ?? 'stop',
        })),
        usage: progress.usage(),
      });
    } finally {
      group.cancel();
    }
  };
}

async function* completionChunks(
  o: Opts,
  group: RunGroup,
  progress: Progress,
  plan: StreamPlan,
): AsyncGenerator<unknown, void, undefined> {
  const chunk = (choice: unknown) => ({
    ...head(o.env, 'text_completion'),
    choices: [choice],
    ...(plan.continuousUsage ? { usage: progress.usage() } : plan.includeUsage ? { usage: null } : {}),
  });
  const offsets = new Array<number>(progress.choiceCount).fill(0);
  if (o.echo) {
    for (let index = 0; index < progress.choiceCount; index++) {
      const text = group.runs[Math.floor(index / o.n)]!.accepted.promptText ?? '';
      offsets[index] = text.length;
      yield chunk({ index, text, logprobs: null, finish_reason: null });
    }
  }
  for await (const { run, event } of group.events()) {
    for (const u of progress.apply(run, event)) {
      // A step's tokens always make a chunk, also when their text is still held back (an incomplete
      // UTF-8 character, a possible stop string) or decodes to nothing (special tokens): as vLLM, the
      // client sees each token when the engine made it, and time to first token is the engine's.
      if (u.tokenIds.length === 0 && !u.finishReason) continue;
      let logprobs = null;
      if (o.logprobs) {
        logprobs = emptyCompletionLogprobs();
        offsets[u.index] = appendCompletionLogprobs(logprobs, u.logprobs, o.asIds, offsets[u.index]!);
      }
      yield chunk({ index: u.index, text: u.text, logprobs, finish_reason: u.finishReason });
    }
  }
}
