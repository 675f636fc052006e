// The engine protocol's messages: one zod schema per message type, used by BOTH sides' decoders, so
// the gateway (FramedEngineClient) and the sidecar (serveEngine) are checked against the same contract.
//
// Frame payloads are UTF-8 JSON (TS↔TS only: the native engine never sees them). The message type lives
// in the frame's type byte, not in the JSON. Streams are multiplexed by request id (`id`, the
// SubmitRequest id); unary calls carry a correlation id (`cid`) answered by one REPLY.
//
//   client → server: HELLO, SUBMIT, ABORT, CREDIT, STATS, HEALTH, MODEL, TOKENIZE, DETOKENIZE,
//                    RESPONSE_PUT, RESPONSE_GET, RESPONSE_DELETE (the sidecar's ResponseStore)
//   server → client: HELLO_OK | HELLO_ERR (exactly one, first), STEP, REPLY or REPLY_IDS (per cid)
//
// REPLY_IDS answers a TOKENIZE that asked for `packed` ids: the result's `tokens` travel as int32 after
// the JSON (./packed-ids.ts), not as a JSON array. A server that predates it ignores `packed` and
// answers REPLY, which clients still accept; so the protocol version is unchanged.
//
// STEP carries the events of every stream of the connection that one engine step (or one batch of
// admissions) produced, as vLLM's per-step engine outputs: one frame per step per connection, not one
// per request per step. CREDIT is the gateway's flow control (./flow.ts): per stream, the units it has
// consumed so far.
//
// Validation is where data enters: every message is checked against its schema below, except STEP,
// the per-token path, which the gateway checks structurally only (decodeMessage). It comes from the
// authenticated sidecar, whose encoder tests check against STEP's full schema.

import { z } from 'zod';
import type {
  EngineEvent,
  EngineStats,
  Health,
  ModelInfo,
  SubmitRequest,
  TokenizeRequest,
} from './engine-client.js';
import { encodeFrame, encodeFrameParts, FrameError, type Frame } from './framing.js';
import { packedIdsParts, unpackIds } from './packed-ids.js';

/**
 * Bumped on any incompatible change to a schema below. Peers with different versions refuse each other.
 * 3: SUBMIT constraint, chat tools / tool history / templates (a version-2 sidecar would drop them
 * silently and answer unconstrained), packed TOKENIZE replies.
 */
export const PROTOCOL_VERSION = 3;

export const MsgType = {
  HELLO: 0x01,
  HELLO_OK: 0x02,
  HELLO_ERR: 0x03,
  SUBMIT: 0x10,
  ABORT: 0x11,
  // 0x12 was EVENT (one request's event per frame; protocol version 1)
  STEP: 0x13,
  CREDIT: 0x14,
  STATS: 0x20,
  HEALTH: 0x21,
  MODEL: 0x22,
  TOKENIZE: 0x23,
  DETOKENIZE: 0x24,
  RESPONSE_PUT: 0x25,
  RESPONSE_GET: 0x26,
  RESPONSE_DELETE: 0x27,
  REPLY: 0x30,
  REPLY_IDS: 0x31,
} as const;
export type MsgTypeName = keyof typeof MsgType;

// ---- shared pieces (mirroring engine-client.ts; compile-time checks at the bottom keep them in sync) ----
const num = z.number().finite();
const int = z.number().int();
// NOTE: lists of token ids are checked in one loop: z.array(int) parses each element as its own
// schema, which cost about a hundred times the JSON parse of a SUBMIT with a few hundred prompt ids,
// on every request's way to its first token.
const isIntList = (v: unknown): v is number[] => {
  if (!Array.isArray(v)) return false;
  for (const x of v) if (!Number.isInteger(x)) return false;
  return true;
};
const intList = z.custom<number[]>(isIntList, { message: 'expected a list of integers' });
export const errorCodeSchema = z.enum(['INVALID_REQUEST', 'QUEUE_FULL', 'NOT_READY', 'ENGINE_DEAD', 'INTERNAL']);
export const wireErrorSchema = z.object({ code: errorCodeSchema, message: z.string(), param: z.string().nullable() });
const finishReason = z.enum(['stop', 'length', 'abort', 'error']);
const toolCall = z.object({ id: z.string(), type: z.literal('function'), function: z.object({ name: z.string(), arguments: z.string() }) });
const chatMessage = z.object({
  role: z.enum(['system', 'user', 'assistant', 'developer', 'tool']),
  content: z.string(),
  name: z.string().optional(),
  tool_calls: z.array(toolCall).optional(),
  tool_call_id: z.string().optional(),
});
const toolDefinition = z.object({
  type: z.literal('function'),
  function: z.object({ name: z.string(), description: z.string().optional(), parameters: z.record(z.string(), z.unknown()).optional(), strict: z.boolean().optional() }),
});
const chatTemplateInputs = {
  tools: z.array(toolDefinition).optional(),
  toolFallback: z.array(chatMessage).optional(),
  chatTemplate: z.string().optional(),
  chatTemplateKwargs: z.record(z.string(), z.unknown()).optional(),
};
const prompt = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('text'), text: z.string() }),
  z.object({ kind: z.literal('tokens'), ids: intList }),
  z.object({ kind: z.literal('chat'), messages: z.array(chatMessage), addGenerationPrompt: z.boolean(), continueFinalMessage: z.boolean().optional(), ...chatTemplateInputs }),
]);
const sampling = z.object({
  maxTokens: int.nullable(),
  temperature: num,
  topP: num,
  topK: int,
  minP: num,
  repetitionPenalty: num,
  frequencyPenalty: num,
  presencePenalty: num,
  logitBias: z.record(z.string(), num),
  seed: int.nullable(),
  stop: z.array(z.string()),
  stopTokenIds: intList,
  ignoreEos: z.boolean(),
  minTokens: int.nonnegative().optional(),
  logprobs: int.nullable(),
  skipSpecialTokens: z.boolean(),
  promptLogprobs: int.nullable().optional(),
});
const constraint = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('json_schema'), param: z.string(), schema: z.string() }),
  z.object({ kind: z.literal('json_object'), param: z.string() }),
  z.object({ kind: z.literal('regex'), param: z.string(), pattern: z.string() }),
  z.object({ kind: z.literal('choice'), param: z.string(), choices: z.array(z.string()) }),
  z.object({ kind: z.literal('grammar'), param: z.string(), ebnf: z.string() }),
  z.object({ kind: z.literal('structural_tag'), param: z.string(), tag: z.string() }),
]);
export const submitRequestSchema = z.object({ id: z.string(), prompt, sampling, n: int, echo: z.boolean(), constraint: constraint.optional() });
const topEntry = z.object({ tokenId: int, token: z.string(), bytes: z.array(int), logprob: num });
const tokenLogprob = topEntry.extend({ top: z.array(topEntry) });
const promptLogprob = topEntry.extend({ logprob: num.nullable(), rank: int.nullable(), top: z.array(topEntry) });
const histogram = z.object({ bounds: z.array(num), counts: z.array(num), count: num, sum: num });
const engineTiming = z.object({ queue: num, prefill: num, decode: num, inference: num, preemptions: int });
const choiceDelta = z.object({
  index: int,
  text: z.string(),
  tokenIds: intList,
  logprobs: z.array(tokenLogprob).optional(),
  finishReason: finishReason.optional(),
  stopReason: z.union([z.string(), int]).nullable().optional(),
  error: z.object({ code: errorCodeSchema, message: z.string() }).optional(),
});
export const engineEventSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('accepted'),
    promptTokens: int,
    promptTokenIds: intList.optional(),
    promptText: z.string().optional(),
  }),
  z.object({ type: z.literal('delta'), choices: z.array(choiceDelta), promptLogprobs: z.array(promptLogprob).optional() }),
  z.object({
    type: z.literal('done'),
    usage: z.object({ promptTokens: int, completionTokens: int, cachedTokens: int }),
    timing: z.object({ queued: num, ttft: num.nullable(), e2e: num, engine: engineTiming.optional() }),
    maxTokens: int.optional(),
  }),
]);
/** On the wire a stream may also end with an error event: the request failed as a whole (EngineError). */
const wireEvent = z.union([engineEventSchema, wireErrorSchema.extend({ type: z.literal('error') })]);

export const statsSchema = z.object({
  running: int,
  waiting: int,
  kvBlocksTotal: int,
  kvBlocksFree: int,
  kvUsage: num,
  preemptions: int,
  prefixCacheQueries: int,
  prefixCacheHits: int,
  promptTokens: int,
  generationTokens: int,
  stepTimeMs: num,
  maxRunning: int,
  maxWaiting: int,
  fairPreemptions: int,
  paused: int.optional(),
  iterationTokens: histogram.optional(),
  cacheConfig: z.record(z.string(), z.string()).optional(),
});
export const healthSchema = z.object({
  ready: z.boolean(),
  loading: z.boolean(),
  draining: z.boolean(),
  message: z.string().optional(),
});
export const modelInfoSchema = z.object({
  id: z.string(),
  root: z.string(),
  maxModelLen: int,
  maxNumSeqs: int,
  vocabSize: int,
  createdAt: num,
  generationDefaults: z.object({ temperature: num, topP: num, topK: int, repetitionPenalty: num }).partial(),
  placeholder: z.boolean(),
});
export const tokenizeRequestSchema = z.object({
  ...chatTemplateInputs,
  prompt: z.string().optional(),
  messages: z.array(chatMessage).optional(),
  addSpecialTokens: z.boolean(),
  addGenerationPrompt: z.boolean(),
  returnTokenStrs: z.boolean().optional(),
});
export const tokenizeResultSchema = z.object({ tokens: intList, maxModelLen: int, tokenStrs: z.array(z.string()).optional() });
export const detokenizeResultSchema = z.object({ prompt: z.string() });

// ---- the messages, keyed by type name ----
const cid = int.nonnegative();
export const messageSchemas = {
  HELLO: z.object({ version: int, secret: z.string().optional() }),
  HELLO_OK: z.object({ version: int, model: modelInfoSchema }),
  HELLO_ERR: z.object({ version: int, code: errorCodeSchema, message: z.string() }),
  SUBMIT: z.object({ req: submitRequestSchema }),
  ABORT: z.object({ id: z.string(), cid }),
  STEP: z.object({ events: z.array(z.tuple([z.string(), wireEvent])) }),
  CREDIT: z.object({ consumed: z.array(z.tuple([z.string(), int.nonnegative()])) }),
  STATS: z.object({ cid }),
  HEALTH: z.object({ cid }),
  MODEL: z.object({ cid }),
  TOKENIZE: z.object({ cid, req: tokenizeRequestSchema, packed: z.boolean().optional() }),
  DETOKENIZE: z.object({ cid, tokens: intList }),
  RESPONSE_PUT: z.object({ cid, id: z.string(), value: z.string() }),
  RESPONSE_GET: z.object({ cid, id: z.string() }),
  RESPONSE_DELETE: z.object({ cid, id: z.string() }),
  REPLY: z.union([
    z.object({ cid, ok: z.literal(true), result: z.unknown() }),
    z.object({ cid, ok: z.literal(false), error: wireErrorSchema }),
  ]),
  // `ids` is the packed tail of the frame, not part of its JSON.
  REPLY_IDS: z.object({ cid, ok: z.literal(true), result: z.record(z.string(), z.unknown()), ids: z.custom<Int32Array>((v) => v instanceof Int32Array) }),
} satisfies Record<MsgTypeName, z.ZodType>;

export type MessageBody<T extends MsgTypeName> = z.infer<(typeof messageSchemas)[T]>;
export type Message = { [T in MsgTypeName]: { type: T; body: MessageBody<T> } }[MsgTypeName];
export type WireEvent = z.infer<typeof wireEvent>;
export type WireError = z.infer<typeof wireErrorSchema>;
/** The unary calls and the result schema each one's REPLY is checked against. */
export const callResultSchemas = {
  ABORT: z.null(),
  STATS: statsSchema,
  HEALTH: healthSchema,
  MODEL: modelInfoSchema,
  TOKENIZE: tokenizeResultSchema,
  DETOKENIZE: detokenizeResultSchema,
  RESPONSE_PUT: z.null(),
  RESPONSE_GET: z.string().nullable(),
  RESPONSE_DELETE: z.boolean(),
} as const;
/** A REPLY_IDS result: its call's result schema without `tokens`, which travel packed. Only TOKENIZE asks for it. */
export const packedResultSchemas = { TOKENIZE: tokenizeResultSchema.omit({ tokens: true }) } as const;

const typeByByte = new Map<number, MsgTypeName>(
  (Object.entries(MsgType) as [MsgTypeName, number][]).map(([name, byte]) => [byte, name]),
);
const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

export function encodeMessage<T extends MsgTypeName>(type: T, body: MessageBody<T>, maxFrameBytes?: number): Uint8Array {
  const parts = payloadParts(type, body);
  return encodeFrame(MsgType[type], parts.length === 1 ? parts[0]! : concatBytes(parts), maxFrameBytes);
}

/** The message as the buffers to write in order (framing.ts's encodeFrameParts: large payloads are not copied). */
export function encodeMessageParts<T extends MsgTypeName>(type: T, body: MessageBody<T>, maxFrameBytes?: number): Uint8Array[] {
  return encodeFrameParts(MsgType[type], payloadParts(type, body), maxFrameBytes);
}

/** The payload as buffers in order; REPLY_IDS's ids are a view of the body's own Int32Array (./packed-ids.ts). */
function payloadParts<T extends MsgTypeName>(type: T, body: MessageBody<T>): Uint8Array[] {
  if (type === 'REPLY_IDS') {
    const { ids, ...rest } = body as MessageBody<'REPLY_IDS'>;
    return packedIdsParts(utf8Encoder.encode(JSON.stringify(rest)), ids);
  }
  return [utf8Encoder.encode(JSON.stringify(body))];
}

/** The parts, back to back, in one array (the tests assemble frames with it too). */
export function concatBytes(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

// ---- large inputs: which messages a runtime with threads encodes and decodes off its serving thread ----
// (issue #26: a multi-megabyte prompt is a few whole-payload passes, stringify and encode on one side,
// decode, parse and check on the other; each held the event loop that serves every stream.)

/** A SUBMIT or TOKENIZE whose text is estimated past this many bytes is a large input (./frame-codec.ts). */
export const LARGE_INPUT_BYTES = 64 * 1024;
/** What one chat message costs the estimate besides its content (role, keys, punctuation). */
const MESSAGE_OVERHEAD_BYTES = 48;

/**
 * A cheap lower-bound estimate of the payload a message's inputs make: string lengths and list sizes are
 * read, never a string's contents (so it costs nothing next to the pass it decides about). 0 for the
 * messages that carry no client input.
 */
export function inputBytes(type: MsgTypeName, body: unknown): number {
  if (type === 'SUBMIT') {
    const p = (body as MessageBody<'SUBMIT'>).req.prompt;
    if (p.kind === 'text') return p.text.length;
    if (p.kind === 'tokens') return p.ids.length * 4;
    return messagesBytes(p.messages) + messagesBytes(p.toolFallback);
  }
  if (type === 'TOKENIZE') {
    const { req } = body as MessageBody<'TOKENIZE'>;
    return (req.prompt?.length ?? 0) + messagesBytes(req.messages);
  }
  return 0;
}

function messagesBytes(messages: readonly { content: string }[] | undefined): number {
  let n = 0;
  for (const m of messages ?? []) n += MESSAGE_OVERHEAD_BYTES + m.content.length;
  return n;
}

/** Decodes and validates one frame. Throws ProtocolError for unknown types, bad UTF-8/JSON or schema misses. */
export function decodeMessage(frame: Frame): Message {
  const type = typeByByte.get(frame.type);
  if (type === undefined) throw new ProtocolError(`unknown message type 0x${frame.type.toString(16)}`);
  const packed = type === 'REPLY_IDS' ? unpackIds(frame.payload) : null;
  let json: unknown;
  try {
    json = JSON.parse(utf8Decoder.decode(packed ? packed.json : frame.payload));
  } catch {
    throw new ProtocolError(`${type}: payload is not UTF-8 JSON`);
  }
  if (type === 'STEP') return { type, body: checkStep(json) };
  if (packed) json = { ...(json as object), ids: packed.ids };
  const parsed = messageSchemas[type].safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ProtocolError(`${type}: ${issue?.path.join('.') ?? ''} ${issue?.message ?? 'invalid'}`);
  }
  return { type, body: parsed.data } as Message;
}

/**
 * STEP's check: a request's once-only events (accepted, done, error) against their full schema; deltas,
 * the per-token path, structurally (choices with a numeric index, text and token ids, a known finish).
 */
function checkStep(json: unknown): MessageBody<'STEP'> {
  const events = (json as { events?: unknown } | null)?.events;
  if (!Array.isArray(events)) throw new ProtocolError('STEP: events is not an array');
  for (const e of events) {
    if (!Array.isArray(e) || e.length !== 2 || typeof e[0] !== 'string') throw new ProtocolError('STEP: an event is not an [id, event] pair');
    const ev = e[1] as { type?: unknown; choices?: unknown } | null;
    if (ev?.type !== 'delta') {
      if (!wireEvent.safeParse(ev).success) throw new ProtocolError(`STEP: malformed ${String(ev?.type)} event`);
    } else if (!Array.isArray(ev.choices) || !ev.choices.every(isChoiceDelta)) {
      throw new ProtocolError('STEP: malformed delta');
    }
  }
  return json as MessageBody<'STEP'>;
}

const FINISH_REASONS: ReadonlySet<unknown> = new Set(finishReason.options);
function isChoiceDelta(c: unknown): boolean {
  const d = c as Partial<Record<keyof z.infer<typeof choiceDelta>, unknown>> | null;
  return (
    typeof d?.index === 'number' &&
    typeof d.text === 'string' &&
    Array.isArray(d.tokenIds) &&
    (d.logprobs === undefined || Array.isArray(d.logprobs)) &&
    (d.finishReason === undefined || FINISH_REASONS.has(d.finishReason))
  );
}

export class ProtocolError extends FrameError {
  constructor(message: string) {
    super(message);
    this.name = 'ProtocolError';
  }
}

/** Constant-time string comparison (no node:crypto here): time depends only on the lengths. */
export function constantTimeEqual(a: string, b: string): boolean {
  const x = utf8Encoder.encode(a);
  const y = utf8Encoder.encode(b);
  let diff = x.length ^ y.length;
  const len = Math.max(x.length, y.length);
  for (let i = 0; i < len; i++) diff |= (x[i % (x.length || 1)] ?? 0) ^ (y[i % (y.length || 1)] ?? 0);
  return diff === 0;
}

// ---- compile-time proof that the schemas and engine-client.ts describe the same shapes ----
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
function assertSame<T extends true>(): T | void {}
assertSame<Same<z.infer<typeof submitRequestSchema>['prompt'], SubmitRequest['prompt']>>();
assertSame<Same<z.infer<typeof submitRequestSchema>['constraint'], SubmitRequest['constraint']>>();
assertSame<Same<Omit<z.infer<typeof submitRequestSchema>['sampling'], 'logitBias'>, Omit<SubmitRequest['sampling'], 'logitBias'>>>();
assertSame<Same<z.infer<typeof engineEventSchema>, EngineEvent>>();
assertSame<Same<z.infer<typeof statsSchema>, EngineStats>>();
assertSame<Same<z.infer<typeof healthSchema>, Health>>();
assertSame<Same<z.infer<typeof modelInfoSchema>, ModelInfo>>();
assertSame<Same<z.infer<typeof tokenizeRequestSchema>, TokenizeRequest>>();
