// Per-request stage timestamps along the serving path, for latency breakdowns (`npm run bench:serve`).
// Off unless a Tracer is injected (the CLI makes one when ERNIE_EDGE_TRACE_FILE is set): every hop
// then marks (request id, stage) against one clock that all processes of a host share (Node:
// process.hrtime = CLOCK_MONOTONIC), so the gateway's, the sidecar's and a client's marks line up.
// A mark is a clock read and an array push; nothing is logged per request.
//
// The id is the SubmitRequest id, which is also the OpenAI response id (`cmpl-…`, `chatcmpl-…`) for a
// request with one prompt: the id a client sees in every chunk. Runtime-agnostic: no node:* here.

/** The stages of one streamed request, in path order. First occurrence wins (later marks are dropped). */
export const TRACE_STAGES = [
  'client.send', //   the client writes the HTTP request (bench)
  'gw.recv', //       gateway: the request reaches the Hono app
  'gw.body', //       gateway: body read, UTF-8 checked, JSON.parse'd, zod-validated (one pass for a large body, in the codec worker)
  'gw.parsed', //     gateway: sampling built, the request checked against the model
  'gw.submit', //     gateway: SUBMIT frame written to the engine socket
  'sc.recv', //       sidecar: the socket chunk carrying the SUBMIT frame arrives
  'sc.decoded', //    sidecar: frame decoded and zod-validated
  'sc.tokenized', //  sidecar: prompt → token ids (chat template + tokenizer)
  'sc.submitted', //  sidecar: engine.submit returned (the step thread is woken)
  'sc.accepted', //   sidecar: the STEP frame carrying `accepted` written
  'gw.accepted', //   gateway: `accepted` arrived; the handler commits to 200 + SSE
  'eng.step', //      engine: the step that computed the first token started (sidecar's estimate: callback − step time)
  'sc.step', //       sidecar: the native step callback with the first token runs on the Node thread
  'sc.detok', //      sidecar: first token detokenized, delta queued
  'sc.delta', //      sidecar: the STEP frame carrying the first `delta` written
  'gw.delta', //      gateway: the first delta decoded out of the socket
  'gw.sse', //        gateway: the first token's SSE chunk handed to the HTTP response
  'client.first', //  the bytes of the first token's SSE chunk reach the client (bench)
] as const;
export type TraceStage = (typeof TRACE_STAGES)[number];

export interface Tracer {
  /** Milliseconds on the host-wide monotonic clock. */
  now(): number;
  /** Request `id` reached `stage` at `at` (default: now). */
  mark(id: string, stage: TraceStage, at?: number): void;
}
