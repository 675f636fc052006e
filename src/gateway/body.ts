// Reading a JSON request body defensively: size-limited before reading (a declared content-length past
// the limit) or WHILE reading (a chunked 10 MB upload is cut off at the limit, not buffered first),
// strict UTF-8, bounded nesting depth, and an object at the top.
// Every failure is an ApiError (400/413/415); nothing here can produce a 5xx.

import { BODY_SCHEMAS, type BodyOf, type BodySchemaName } from './body-schemas.js';
import { ApiError, badRequest } from './errors.js';
import { nextTurn } from './turns.js';

export const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024;
/** Nesting beyond this is rejected before JSON.parse. Real requests nest ≤ 6 levels. */
export const MAX_JSON_DEPTH = 32;
/** Bodies past this size take each whole-body pass on an event-loop turn of its own (./turns.ts). */
export const LARGE_BODY_BYTES = 256 * 1024;

const utf8 = new TextDecoder('utf-8', { fatal: true });

const tooLarge = (max: number) =>
  new ApiError(413, `request body exceeds the ${max}-byte limit`, 'request_too_large');

/**
 * Parses a body's bytes as parseJsonBytes does, elsewhere: a runtime with threads injects one that runs it
 * in a worker (src/cli/off-thread-codec.ts), so a multi-megabyte body's passes never hold the event loop
 * that serves every stream (issue #26). It rejects with the same ApiError parseJsonBytes throws. Given
 * a schema's name (./body-schemas.ts) it also validates there and resolves to the schema's output, or
 * rejects with the ZodError the schema's parse would have thrown: validating thousands of messages is
 * tens of ms of the serving thread's time otherwise.
 */
export type BodyParser = (bytes: Uint8Array, schema?: BodySchemaName) => Promise<unknown>;
/** Bodies past this size go to the injected BodyParser; smaller ones (the common case) stay on this thread. */
export const OFF_THREAD_BODY_BYTES = 64 * 1024;

/**
 * A request body validated by the schema `name` (./body-schemas.ts): read and parsed as readJsonBody
 * does, and where the parse went to `parseOffThread`, validated there too; else validated here.
 * Throws the ApiError/ZodError the route would have thrown.
 */
export async function readValidBody<N extends BodySchemaName>(req: Request, maxBytes: number, name: N, parseOffThread?: BodyParser): Promise<BodyOf<N>> {
  const bytes = await readBodyBytes(req, maxBytes);
  if (parseOffThread && bytes.byteLength > OFF_THREAD_BODY_BYTES) return (await parseOffThread(bytes, name)) as BodyOf<N>;
  return BODY_SCHEMAS[name].parse(await parseBodyBytes(bytes)) as BodyOf<N>;
}

export async function readJsonBody(req: Request, maxBytes: number, parseOffThread?: BodyParser): Promise<Record<string, unknown>> {
  const bytes = await readBodyBytes(req, maxBytes);
  if (parseOffThread && bytes.byteLength > OFF_THREAD_BODY_BYTES) return (await parseOffThread(bytes)) as Record<string, unknown>;
  return parseBodyBytes(bytes);
}

/** The body's bytes, after the content-type and size checks. */
async function readBodyBytes(req: Request, maxBytes: number): Promise<Uint8Array> {
  const type = req.headers.get('content-type');
  // NOTE: a missing content type is accepted (curl without -H); an explicit non-JSON one is not.
  if (type !== null && !/^application\/([\w.+-]*\+)?json\s*(;|$)/i.test(type.trim())) {
    throw new ApiError(415, `unsupported content type '${type.slice(0, 100)}'; use application/json`, 'unsupported_media_type');
  }
  const declared = req.headers.get('content-length');
  if (declared !== null && Number(declared) > maxBytes) throw tooLarge(maxBytes);
  // A valid declared length is enforced by the HTTP layer (it never delivers more), so the body can
  // be taken whole: the runtime's fast path (@hono/node-server reads the IncomingMessage directly),
  // not a web stream pulled chunk by chunk, which costs measurably more per request on the serving path.
  const bytes = declared !== null && /^\d{1,10}$/.test(declared) ? await readWhole(req) : await readLimited(req, maxBytes);
  if (bytes.byteLength > maxBytes) throw tooLarge(maxBytes); // a Request built in memory may carry any header
  return bytes;
}

/** The body as a JSON object, on this thread. */
async function parseBodyBytes(bytes: Uint8Array): Promise<Record<string, unknown>> {
  if (bytes.byteLength <= LARGE_BODY_BYTES) return toObject(parseText(decodeUtf8(bytes)));
  // Without a parser elsewhere, each whole-body pass gets an event-loop turn of its own, and so does the
  // caller's (validation, then encoding for the engine).
  await nextTurn();
  const text = decodeUtf8(bytes);
  await nextTurn();
  checkDepth(text);
  await nextTurn();
  const json = parseJson(text);
  await nextTurn();
  return toObject(json);
}

/** The body's bytes as a JSON object, every check readJsonBody makes past the reading, in one go. */
export function parseJsonBytes(bytes: Uint8Array): Record<string, unknown> {
  return toObject(parseText(decodeUtf8(bytes)));
}

function decodeUtf8(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw badRequest('request body is not valid UTF-8', null, 'invalid_encoding');
  }
}

function checkDepth(text: string): void {
  if (jsonDepth(text) > MAX_JSON_DEPTH) {
    throw badRequest(`JSON nesting deeper than ${MAX_JSON_DEPTH} levels`, null, 'invalid_json');
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw badRequest(`could not parse the JSON body: ${(err as Error).message.slice(0, 200)}`, null, 'invalid_json');
  }
}

function parseText(text: string): unknown {
  checkDepth(text);
  return parseJson(text);
}

function toObject(json: unknown): Record<string, unknown> {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw badRequest('the request body must be a JSON object', null, 'invalid_json');
  }
  return json as Record<string, unknown>;
}

async function readWhole(req: Request): Promise<Uint8Array> {
  try {
    return new Uint8Array(await req.arrayBuffer());
  } catch {
    throw badRequest('could not read the request body', null, 'invalid_body');
  }
}

async function readLimited(req: Request, maxBytes: number): Promise<Uint8Array> {
  if (!req.body) return new Uint8Array(0);
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        // Stop pulling: the rest of the upload is never read into memory.
        await reader.cancel().catch(() => undefined);
        throw tooLarge(maxBytes);
      }
      chunks.push(value);
    }
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw badRequest('could not read the request body', null, 'invalid_body');
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/** Maximum bracket depth outside string literals (linear scan, no recursion). */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22) i = closingQuote(text, i);
    else if (ch === 0x7b || ch === 0x5b) max = Math.max(max, ++depth);
    else if (ch === 0x7d || ch === 0x5d) depth--;
  }
  return max;
}

/**
 * The index of the quote closing the string opened at `open` (text.length when unterminated).
 * NOTE: indexOf skips a string's contents at native speed; a character loop over a 4 MB string literal
 * was a pass of its own.
 */
function closingQuote(text: string, open: number): number {
  for (let at = open + 1; ; ) {
    const q = text.indexOf('"', at);
    if (q < 0) return text.length;
    let backslashes = 0;
    while (text.charCodeAt(q - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return q; // an odd run escapes this quote
    at = q + 1;
  }
}
