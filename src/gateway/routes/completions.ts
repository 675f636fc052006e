// POST /v1/completions — OpenAI (legacy) completions. `prompt` may be a string, a list of strings, a
// list of token ids or a list of such lists; token-id prompts go to the engine exactly as given. Each
// prompt is its own engine request; choices are indexed prompt-major (prompt i, choice j → i·n + j).
// Decisions: max_tokens defaults to 16 (OpenAI's documented default for this endpoint); `best_of` must
// equal n when given (no server-side best-of selection). response_format / structured_outputs / guided_*
// constrain every prompt's choices (../structured-output.ts).
// Evaluation (lm-evaluation-harness's loglikelihood: token-id prompts, echo, logprobs, max_tokens 0):
// `echo` with `logprobs` returns the prompt's tokens and logprobs before the generated ones, computed in
// the same prefill (the engine's prompt logprobs); `max_tokens: 0` is allowed with echo (the prompt
// alone), as vLLM. vLLM extensions: `prompt_logprobs` and `return_token_ids` (`prompt_token_ids`,
// `token_ids` per choice).

import type { Prompt, PromptLogprob, SubmitRequest } from '../../protocol/engine-client.js';
import { readValidBody } from '../body.js';
import { resolveModel, type AppContext, type RouteDeps } from '../deps.js';
import { checkSequences } from '../sequence-limit.js';
import { startRuns, streamed, type RunGroup } from '../engine-run.js';
import { badRequest } from '../errors.js';
import { appendCompletionLogprobs, emptyCompletionLogprobs, fingerprint, head, randomId, type CompletionLogprobs, type Envelope } from '../openai-shapes.js';
import { Progress, type OpenAIFinish } from '../progress.js';
import { appendEchoLogprobs, vllmPromptLogprobs } from '../prompt-logprobs.js';
import { buildSampling, streamPlan, type StreamPlan } from '../sampling.js';
import { type CompletionRequest } from '../schemas.js';
import { sseResponse, stallGuard } from '../sse.js';
import { structuredConstraint } from '../structured-output.js';

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
  /** echo with logprobs: the prompt's tokens join the choice's logprobs, k alternatives each. */
  echoLogprobs: number | null;
  returnTokenIds: boolean;
  prompts: Prompt[];
}

/** A choice's prompt_token_ids: a token-id prompt's own, else the engine's echo of the tokenized text. */
const promptIds = (p: Prompt, echoed: number[] | undefined): number[] => (p.kind === 'tokens' ? p.ids : (echoed ?? []));

export function completionsHandler(deps: RouteDeps) {
  return async (c: AppContext): Promise<Response> => {
    const rec = c.get('rec');
    const body = await readValidBody(c.req.raw, deps.maxBodyBytes, 'completion', deps.parseLargeBody);
    rec.mark('gw.body');
    const { info, name } = await resolveModel(c.var.engine, deps, body.model);
    const plan = streamPlan(body);
    const n = body.n ?? 1; // 1..MAX_N (the schema)
    if (body.best_of != null && body.best_of !== n) throw badRequest('best_of must equal n when given', 'best_of');
    const echo = body.echo === true;
    const maxTokens = body.max_tokens ?? COMPLETIONS_DEFAULT_MAX_TOKENS;
    if (maxTokens === 0 && !echo) throw badRequest('max_tokens may be 0 only together with echo (the prompt alone, with its logprobs)', 'max_tokens');
    const echoLogprobs = echo ? (body.logprobs ?? null) : null;
    // One prompt-logprob computation serves both echo's and prompt_logprobs' (the larger k).
    const promptK = Math.max(echoLogprobs ?? -1, body.prompt_logprobs ?? -1);
    const sampling = buildSampling(body, info, { maxTokens, logprobs: body.logprobs ?? null, promptLogprobs: promptK >= 0 ? promptK : null });
    const returnTokenIds = body.return_token_ids === true;
    const constraint = structuredConstraint(body);
    const env: Envelope = { id: `cmpl-${randomId()}`, created: Math.floor(deps.now() / 1000), model: name, system_fingerprint: fingerprint(name) };
    const list = prompts(body.prompt);
    checkSequences(list.length, n, info);
    // return_token_ids alone needs the engine's echo only for text prompts: token-id prompts are their
    // own ids, and echo would have the sidecar decode the prompt's text for nobody.
    const reqs: SubmitRequest[] = list.map((prompt, i) => ({ id: list.length === 1 ? env.id : `${env.id}-${i}`, prompt, sampling, n, echo: echo || (returnTokenIds && prompt.kind !== 'tokens'), ...(constraint ? { constraint } : {}) }));
    rec.traceAs(env.id);
    rec.mark('gw.parsed');
    rec.generation = true;
    const group = await startRuns(c.var.engine, reqs, c.req.raw.signal);
    const progress = new Progress(group.runs, n, rec);
    const asIds = body.return_tokens_as_token_ids === true;
    const opts: Opts = { env, n, echo, logprobs: sampling.logprobs !== null, asIds, echoLogprobs, returnTokenIds, prompts: list };
    const promptLps: (PromptLogprob[] | null)[] = group.runs.map(() => null);
    if (plan.stream) {
      rec.streaming = true;
      const usage = plan.includeUsage ? () => ({ ...head(opts.env, 'text_completion'), choices: [], usage: progress.usage() }) : null;
      return sseResponse(streamed(group, completionChunks(opts, group, progress, plan), usage, rec.end.bind(rec)), group.cancel, {}, () => rec.sent(), stallGuard(deps, rec.id));
    }
    try {
      const choices = Array.from({ length: progress.choiceCount }, (_, index) => {
        const text = echo ? (group.runs[Math.floor(index / n)]!.accepted.promptText ?? '') : '';
        return { index, text, logprobs: emptyCompletionLogprobs(), offset: text.length, finish: null as OpenAIFinish | null, tokenIds: [] as number[] };
      });
      for await (const { run, event } of group.events()) {
        if (event.type === 'delta' && event.promptLogprobs) {
          promptLps[run] = event.promptLogprobs;
          // The prompt's entries go first: they come with the run's first delta, before any token.
          if (echoLogprobs !== null) for (let j = 0; j < n; j++) appendEchoLogprobs(choices[run * n + j]!.logprobs, event.promptLogprobs, echoLogprobs, asIds);
        }
        for (const u of progress.apply(run, event)) {
          const ch = choices[u.index]!;
          ch.offset = appendCompletionLogprobs(ch.logprobs, u.logprobs, opts.asIds, ch.offset);
          ch.text += u.text;
          ch.tokenIds.push(...u.tokenIds);
          ch.finish = u.finishReason ?? ch.finish;
        }
      }
      return c.json({
        ...head(env, 'text_completion'),
        choices: choices.map((ch) => {
          const run = Math.floor(ch.index / n);
          return {
            index: ch.index,
            text: ch.text,
            logprobs: opts.logprobs ? ch.logprobs : null,
            finish_reason: ch.finish ?? 'stop',
            ...(body.prompt_logprobs != null ? { prompt_logprobs: vllmPromptLogprobs(promptLps[run] ?? [], body.prompt_logprobs, asIds) } : {}),
            ...(returnTokenIds ? { prompt_token_ids: promptIds(list[run]!, group.runs[run]!.accepted.promptTokenIds), token_ids: ch.tokenIds } : {}),
          };
        }),
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
  // return_token_ids: the prompt's ids ride on each choice's first chunk.
  const promptIdsSent = new Array<boolean>(progress.choiceCount).fill(!o.returnTokenIds);
  const ids = (index: number, tokenIds: number[]) => {
    if (!o.returnTokenIds) return {};
    const first = !promptIdsSent[index];
    promptIdsSent[index] = true;
    const run = Math.floor(index / o.n);
    return { ...(first ? { prompt_token_ids: promptIds(o.prompts[run]!, group.runs[run]!.accepted.promptTokenIds) } : {}), token_ids: tokenIds };
  };
  // The echoed prompt opens each choice; with logprobs it waits for the prompt's logprobs (the run's
  // first delta), so that its chunk carries them.
  const echoChunk = (index: number, logprobs: CompletionLogprobs | null) => {
    const text = group.runs[Math.floor(index / o.n)]!.accepted.promptText ?? '';
    offsets[index] = text.length;
    return chunk({ index, text, logprobs, finish_reason: null, ...ids(index, []) });
  };
  if (o.echo && o.echoLogprobs === null) for (let index = 0; index < progress.choiceCount; index++) yield echoChunk(index, null);
  for await (const { run, event } of group.events()) {
    if (o.echoLogprobs !== null && event.type === 'delta' && event.promptLogprobs) {
      for (let j = 0; j < o.n; j++) {
        const logprobs = emptyCompletionLogprobs();
        appendEchoLogprobs(logprobs, event.promptLogprobs, o.echoLogprobs, o.asIds);
        yield echoChunk(run * o.n + j, logprobs);
      }
    }
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
      yield chunk({ index: u.index, text: u.text, logprobs, finish_reason: u.finishReason, ...ids(u.index, u.tokenIds) });
    }
  }
}
