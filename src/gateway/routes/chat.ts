// POST /v1/chat/completions — OpenAI chat completions over the engine, JSON or SSE.
// Tool calling: ../tools/ (the constraint, the prompt's tools, calls read back from the text).
// response_format / structured_outputs / guided_* become the request's grammar constraint
// (../structured-output.ts); a request cannot have both. vLLM extensions:
//  - `echo`: the reply starts with the last message's content when that message has the reply's role
//    (assistant, or with add_generation_prompt false the last message's own role);
//  - `continue_final_message`: the final message is rendered open and the reply continues it (the
//    generation prompt is then off; asking for both is a 400, as vLLM);
//  - `prompt_logprobs` (not with stream, as vLLM) and `return_token_ids` (`prompt_token_ids` at the
//    top, `token_ids` per choice).

import type { PromptLogprob, SubmitRequest } from '../../protocol/engine-client.js';
import { readValidBody } from '../body.js';
import { toEngineMessage } from '../chat-messages.js';
import { resolveModel, type AppContext, type RouteDeps } from '../deps.js';
import { checkSequences } from '../sequence-limit.js';
import { startRuns, streamed, type RunGroup } from '../engine-run.js';
import { badRequest } from '../errors.js';
import { chatLogprobContent, fingerprint, head, randomId, type Envelope } from '../openai-shapes.js';
import { vllmPromptLogprobs } from '../prompt-logprobs.js';
import { Progress, type OpenAIFinish } from '../progress.js';
import { buildSampling, streamPlan, type StreamPlan } from '../sampling.js';
import { type ChatMessageIn } from '../schemas.js';
import { sseResponse, stallGuard } from '../sse.js';
import { finishWithCalls, newCallStream, pieceDelta, toolMessage } from '../tools/message.js';
import { toolPlan, type ToolPlan } from '../tools/plan.js';
import { chatTemplateInputs } from '../tools/prompt.js';
import { structuredConstraint } from '../structured-output.js';

export function chatHandler(deps: RouteDeps) {
  return async (c: AppContext): Promise<Response> => {
    const rec = c.get('rec');
    const body = await readValidBody(c.req.raw, deps.maxBodyBytes, 'chat', deps.parseLargeBody);
    rec.mark('gw.body');
    const { info, name } = await resolveModel(c.var.engine, deps, body.model);
    const plan = streamPlan(body);
    const n = body.n ?? 1; // 1..MAX_N (the schema)
    checkSequences(1, n, info);
    if (body.top_logprobs != null && body.logprobs !== true) {
      throw badRequest('top_logprobs requires logprobs to be true', 'top_logprobs');
    }
    const continueFinal = body.continue_final_message === true;
    if (continueFinal && body.add_generation_prompt === true) {
      throw badRequest('continue_final_message and add_generation_prompt cannot both be true', 'continue_final_message');
    }
    const addGenerationPrompt = continueFinal ? false : (body.add_generation_prompt ?? true);
    const tools = toolPlan(body, deps.tools);
    const messages = body.messages.map(toEngineMessage);
    const sampling = buildSampling(body, info, {
      maxTokens: body.max_completion_tokens ?? body.max_tokens ?? null,
      logprobs: body.logprobs === true ? (body.top_logprobs ?? 0) : null,
      promptLogprobs: body.prompt_logprobs ?? null,
    });
    const constraint = structuredConstraint(body, (body.tools?.length ?? 0) > 0 && body.tool_choice !== 'none');
    const returnTokenIds = body.return_token_ids === true;
    const echoText = body.echo === true ? echoedContent(body.messages, addGenerationPrompt) : '';
    const env: Envelope = { id: `chatcmpl-${randomId()}`, created: Math.floor(deps.now() / 1000), model: name, system_fingerprint: fingerprint(name) };
    const req: SubmitRequest = {
      id: env.id,
      prompt: {
        kind: 'chat',
        messages,
        addGenerationPrompt,
        ...(continueFinal ? { continueFinalMessage: true } : {}),
        ...chatTemplateInputs(body, messages, deps.tools.parser),
      },
      sampling,
      n,
      echo: returnTokenIds, // the prompt's ids come back on `accepted`
      ...(tools ? { constraint: tools.constraint } : constraint ? { constraint } : {}),
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
      const chunks = chatChunks(env, group, progress, plan, n, sampling.logprobs !== null, asIds, { echoText, returnTokenIds, tools });
      return sseResponse(streamed(group, chunks, usage, rec.end.bind(rec)), group.cancel, {}, () => rec.sent(), stallGuard(deps, rec.id));
    }
    try {
      const choices = Array.from({ length: n }, (_, index) => ({
        index,
        text: echoText,
        tokenIds: [] as number[],
        logprobs: [] as ReturnType<typeof chatLogprobContent>,
        finish: null as OpenAIFinish | null,
      }));
      let promptLps: PromptLogprob[] = [];
      for await (const { run, event } of group.events()) {
        if (event.type === 'delta' && event.promptLogprobs) promptLps = event.promptLogprobs;
        for (const u of progress.apply(run, event)) {
          const ch = choices[u.index]!;
          ch.text += u.text;
          ch.tokenIds.push(...u.tokenIds);
          ch.logprobs.push(...chatLogprobContent(u.logprobs, asIds));
          ch.finish = u.finishReason ?? ch.finish;
        }
      }
      return c.json({
        ...head(env, 'chat.completion'),
        choices: choices.map((ch) => {
          const m = tools ? toolMessage(tools.parser, ch.text) : { content: ch.text };
          return {
            index: ch.index,
            message: { role: 'assistant', content: m.content, refusal: null, ...(m.tool_calls ? { tool_calls: m.tool_calls } : {}) },
            logprobs: sampling.logprobs !== null ? { content: ch.logprobs, refusal: null } : null,
            finish_reason: finishWithCalls(ch.finish ?? 'stop', m.tool_calls !== undefined),
            ...(returnTokenIds ? { token_ids: ch.tokenIds } : {}),
          };
        }),
        usage: progress.usage(),
        ...(body.prompt_logprobs != null ? { prompt_logprobs: vllmPromptLogprobs(promptLps, body.prompt_logprobs, asIds) } : {}),
        ...(returnTokenIds ? { prompt_token_ids: group.runs[0]!.accepted.promptTokenIds ?? [] } : {}),
      });
    } finally {
      group.cancel();
    }
  };
}

/** vLLM's chat echo: the last message's content when it has the reply's role, else ''. */
function echoedContent(messages: ChatMessageIn[], addGenerationPrompt: boolean): string {
  const last = messages[messages.length - 1]!;
  const role = addGenerationPrompt ? 'assistant' : last.role;
  return last.role === role ? toEngineMessage(last).content : '';
}

async function* chatChunks(
  env: Envelope,
  group: RunGroup,
  progress: Progress,
  plan: StreamPlan,
  n: number,
  logprobs: boolean,
  asIds: boolean,
  extras: { echoText: string; returnTokenIds: boolean; tools: ToolPlan | null },
): AsyncGenerator<unknown, void, undefined> {
  const tools = extras.tools;
  const calls = tools ? Array.from({ length: n }, () => newCallStream(tools.parser)) : null;
  const chunk = (choices: unknown[], usage: unknown) => ({
    ...head(env, 'chat.completion.chunk'),
    choices,
    ...(plan.continuousUsage ? { usage: progress.usage() } : plan.includeUsage ? { usage } : {}),
  });
  // return_token_ids: the prompt's ids on the first chunk, each chunk's new ids on its choice.
  const promptIds = extras.returnTokenIds ? { prompt_token_ids: group.runs[0]!.accepted.promptTokenIds ?? [] } : {};
  for (let index = 0; index < n; index++) {
    const first = { index, delta: { role: 'assistant', content: extras.echoText }, logprobs: null, finish_reason: null, ...(extras.returnTokenIds ? { token_ids: [] } : {}) };
    yield { ...chunk([first], null), ...(index === 0 ? promptIds : {}) };
  }
  for await (const { run, event } of group.events()) {
    for (const u of progress.apply(run, event)) {
      // A step's tokens always make a chunk, also when their text is still held back (an incomplete
      // UTF-8 character, a possible stop string) or decodes to nothing (special tokens): as vLLM, the
      // client sees each token when the engine made it, and time to first token is the engine's.
      if (u.tokenIds.length === 0 && !u.finishReason) continue;
      let delta: object = u.text || !u.finishReason ? { content: u.text } : {};
      let finish: string | null = u.finishReason;
      const stream = calls?.[u.index];
      if (stream) {
        // Text through the choice's call reader: content and call deltas, markup held back.
        const piece = stream.push(u.text);
        if (u.finishReason) {
          const rest = stream.finish();
          piece.content += rest.content;
          finish = finishWithCalls(u.finishReason, stream.calls.length > 0);
        }
        delta = piece.content || piece.calls.length > 0 || !u.finishReason ? pieceDelta(piece) : {};
      }
      yield chunk(
        [
          {
            index: u.index,
            delta,
            logprobs: logprobs ? { content: chatLogprobContent(u.logprobs, asIds), refusal: null } : null,
            finish_reason: finish,
            ...(extras.returnTokenIds ? { token_ids: u.tokenIds } : {}),
          },
        ],
        null,
      );
    }
  }
}
