// POST /v1/responses — OpenAI's Responses API over the engine, for text: string or message-item input,
// `instructions`, `max_output_tokens`, sampling (and vLLM's extensions), logprobs through `include`,
// JSON or the Responses event stream; `store` / `previous_response_id` through the sidecar's bounded
// store (EngineClient.responses), with GET and DELETE /v1/responses/{id}.
// Decisions: `store` defaults to true as in OpenAI, where the engine keeps a store (else the response
// says store: false, and an explicit store: true is a 400); a length finish is status `incomplete`
// with reason max_output_tokens; fields this server cannot honour are 400s (./responses/schema.ts).

import type { ChatMessage, ResponseStore, SubmitRequest } from '../../protocol/engine-client.js';
import { readJsonBody } from '../body.js';
import { resolveModel, type AppContext, type RouteDeps } from '../deps.js';
import { startRuns } from '../engine-run.js';
import { ApiError, badRequest } from '../errors.js';
import { randomId } from '../openai-shapes.js';
import { Progress, type OpenAIFinish } from '../progress.js';
import { buildSampling } from '../sampling.js';
import { checkInputKinds, history, inputMessages, type StoredResponse } from '../responses/conversation.js';
import { eventStreamResponse } from '../responses/event-stream.js';
import { LOGPROBS_INCLUDE, REFUSED, responsesRequestSchema } from '../responses/schema.js';
import { outputMessage, outputText, responseObject, responseUsage, toLogprobs, type OutputLogprob, type ResponseHead, type ResponseObject } from '../responses/shapes.js';
import { responseEvents } from '../responses/stream.js';
import { textFormatConstraint } from '../structured-output.js';

export function createResponseHandler(deps: RouteDeps) {
  return async (c: AppContext): Promise<Response> => {
    const rec = c.get('rec');
    const json = await readJsonBody(c.req.raw, deps.maxBodyBytes, deps.parseLargeBody);
    rec.mark('gw.body');
    refuseUnsupported(json);
    checkInputKinds(json);
    const body = responsesRequestSchema.parse(json);
    const engine = c.var.engine;
    const { info, name } = await resolveModel(engine, deps, body.model);
    if (body.stream_options && body.stream !== true) {
      throw badRequest("The 'stream_options' parameter is only allowed when 'stream' is enabled.", 'stream_options');
    }
    const logprobs = (body.include ?? []).includes(LOGPROBS_INCLUDE);
    if (!logprobs && (body.top_logprobs ?? 0) > 0) {
      throw badRequest(`top_logprobs needs include: ["${LOGPROBS_INCLUDE}"]`, 'top_logprobs');
    }
    if (body.max_output_tokens != null && body.max_output_tokens > info.maxModelLen) {
      throw badRequest(`max_output_tokens (${body.max_output_tokens}) exceeds the model's maximum context length of ${info.maxModelLen} tokens`, 'max_output_tokens');
    }
    const store = engine.responses;
    if (body.store === true && !store) throw badRequest('this server keeps no responses (store: true is not available)', 'store');
    const storing = (body.store ?? true) && store !== undefined;
    const previous = body.previous_response_id ? await loadPrevious(store, body.previous_response_id) : null;
    const sampling = buildSampling(body, info, { maxTokens: body.max_output_tokens ?? null, logprobs: logprobs ? (body.top_logprobs ?? 0) : null });
    const input = [...history(previous), ...inputMessages(body.input)];
    const messages: ChatMessage[] = body.instructions ? [{ role: 'system', content: body.instructions }, ...input] : input;
    const head: ResponseHead = {
      id: `resp_${randomId()}`,
      createdAt: Math.floor(deps.now() / 1000),
      model: name,
      messageId: `msg_${randomId()}`,
      req: body,
      temperature: sampling.temperature,
      topP: sampling.topP,
      store: storing,
      logprobs,
    };
    const constraint = textFormatConstraint(body.text?.format, body);
    const req: SubmitRequest = { id: head.id, prompt: { kind: 'chat', messages, addGenerationPrompt: true }, sampling, n: 1, echo: false, ...(constraint ? { constraint } : {}) };
    rec.traceAs(head.id);
    rec.mark('gw.parsed');
    rec.generation = true;
    const complete = async (final: ResponseObject, text: string) => {
      if (storing) await store!.put(head.id, JSON.stringify({ response: final, input, outputText: text } satisfies StoredResponse));
    };
    const group = await startRuns(engine, [req], c.req.raw.signal);
    const progress = new Progress(group.runs, 1, rec);
    if (body.stream === true) {
      rec.streaming = true;
      const events = responseEvents({ head, group, progress, now: () => Math.floor(deps.now() / 1000), complete, end: rec.end.bind(rec) });
      return eventStreamResponse(events, group.cancel, () => rec.sent());
    }
    try {
      let text = '';
      const lps: OutputLogprob[] = [];
      let finish: OpenAIFinish | null = null;
      for await (const { run, event } of group.events()) {
        for (const u of progress.apply(run, event)) {
          text += u.text;
          if (logprobs) lps.push(...toLogprobs(u.logprobs));
          finish = u.finishReason ?? finish;
        }
      }
      const status = finish === 'length' ? 'incomplete' : 'completed';
      const final = responseObject(head, {
        status,
        output: [outputMessage(head, status, [outputText(text, lps)])],
        usage: responseUsage(progress.usage()),
        completedAt: Math.floor(deps.now() / 1000),
      });
      await complete(final, text);
      return c.json(final);
    } finally {
      group.cancel();
    }
  };
}

/** GET /v1/responses/{id}: the stored response, as it was returned. */
export function retrieveResponseHandler() {
  return async (c: AppContext): Promise<Response> => {
    const stored = await loadStored(c.var.engine.responses, c.req.param('id') ?? '', 'id');
    return c.json(stored.response);
  };
}

/** DELETE /v1/responses/{id}: OpenAI's deletion object. */
export function deleteResponseHandler() {
  return async (c: AppContext): Promise<Response> => {
    const id = c.req.param('id') ?? '';
    const store = c.var.engine.responses;
    if (!store || !(await store.delete(id))) throw notFound(id, 'id');
    return c.json({ id, object: 'response', deleted: true });
  };
}

function refuseUnsupported(json: unknown): void {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return;
  for (const [field, message] of Object.entries(REFUSED)) {
    if ((json as Record<string, unknown>)[field] != null) throw badRequest(message, field);
  }
}

async function loadPrevious(store: ResponseStore | undefined, id: string): Promise<StoredResponse> {
  if (!store) throw badRequest('this server keeps no responses: previous_response_id is not available; send the conversation as input', 'previous_response_id');
  return loadStored(store, id, 'previous_response_id');
}

async function loadStored(store: ResponseStore | undefined, id: string, param: string): Promise<StoredResponse> {
  const value = store && (await store.get(id));
  if (!value) throw notFound(id, param);
  return JSON.parse(value) as StoredResponse;
}

function notFound(id: string, param: string): ApiError {
  const what = param === 'previous_response_id' ? 'Previous response' : 'Response';
  return new ApiError(404, `${what} with id '${id.slice(0, 256)}' not found.`, 'not_found', param);
}
