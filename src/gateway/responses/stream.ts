// The Responses API event sequence for one text answer, as OpenAI streams it (openai-node's
// ResponseStreamEvent types): response.created, response.in_progress, response.output_item.added,
// response.content_part.added, response.output_text.delta…, response.output_text.done,
// response.content_part.done, response.output_item.done, then response.completed (or
// response.incomplete when max_output_tokens ended it). Every event carries a sequence_number from 0.
// A failure after the stream started becomes an `error` event and response.failed (the HTTP status
// was sent already). The run group is cancelled and the request record ended however the stream ends.

import type { RunGroup } from '../engine-run.js';
import { toHttpError } from '../errors.js';
import type { Progress } from '../progress.js';
import {
  outputMessage,
  outputText,
  responseObject,
  responseUsage,
  toLogprobs,
  type OutputLogprob,
  type ResponseHead,
  type ResponseObject,
} from './shapes.js';

export interface ResponseEvent {
  type: string;
  sequence_number: number;
  [key: string]: unknown;
}

export interface StreamContext {
  head: ResponseHead;
  group: RunGroup;
  progress: Progress;
  /** Seconds (completed_at). */
  now: () => number;
  /** Called with the final response before its terminal event (the store's put). */
  complete: (final: ResponseObject, text: string) => Promise<void>;
  /** The request record's end(status). */
  end: (status: number) => void;
}

export async function* responseEvents(ctx: StreamContext): AsyncGenerator<ResponseEvent, void, undefined> {
  const { head, group, progress } = ctx;
  let seq = 0;
  const ev = (type: string, fields: Record<string, unknown>): ResponseEvent => ({ type, sequence_number: seq++, ...fields });
  const at = { item_id: head.messageId, output_index: 0, content_index: 0 };
  let status = 200;
  try {
    const started = responseObject(head, { status: 'in_progress', output: [], usage: null });
    yield ev('response.created', { response: started });
    yield ev('response.in_progress', { response: started });
    yield ev('response.output_item.added', { output_index: 0, item: outputMessage(head, 'in_progress', []) });
    yield ev('response.content_part.added', { ...at, part: outputText('', []) });
    let text = '';
    const logprobs: OutputLogprob[] = [];
    let finish: string | null = null;
    try {
      for await (const { run, event } of group.events()) {
        for (const u of progress.apply(run, event)) {
          const lps = head.logprobs ? toLogprobs(u.logprobs) : [];
          finish = u.finishReason ?? finish;
          if (!u.text && lps.length === 0) continue;
          text += u.text;
          logprobs.push(...lps);
          yield ev('response.output_text.delta', { ...at, delta: u.text, logprobs: lps });
        }
      }
      const part = outputText(text, logprobs);
      const itemStatus = finish === 'length' ? 'incomplete' : 'completed';
      const item = outputMessage(head, itemStatus, [part]);
      const final = responseObject(head, { status: itemStatus, output: [item], usage: responseUsage(progress.usage()), completedAt: ctx.now() });
      await ctx.complete(final, text);
      yield ev('response.output_text.done', { ...at, text, logprobs });
      yield ev('response.content_part.done', { ...at, part });
      yield ev('response.output_item.done', { output_index: 0, item });
      yield ev(itemStatus === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: final });
    } catch (err) {
      const e = toHttpError(err);
      status = e.status;
      const { code, message, param } = e.body.error;
      yield ev('error', { code, message, param });
      const error = { code: code ?? 'server_error', message };
      yield ev('response.failed', { response: responseObject(head, { status: 'failed', output: [], usage: responseUsage(progress.usage()), error }) });
    }
  } finally {
    group.cancel();
    ctx.end(status);
  }
}
