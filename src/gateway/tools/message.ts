// A choice's text → OpenAI's message / delta with tool calls (./call-stream.ts reads the calls).

import type { OpenAIFinish } from '../progress.js';
import { randomId } from '../openai-shapes.js';
import { ToolCallStream, type CallPiece, type ParsedCall } from './call-stream.js';
import type { ToolCallParser } from './parser.js';

/** OpenAI's call ids: `call_` and 24 characters. */
export const newCallId = (): string => `call_${randomId().slice(0, 24)}`;

export function newCallStream(parser: ToolCallParser): ToolCallStream {
  return new ToolCallStream(parser, newCallId);
}

/** A choice that made calls and stopped by itself stopped for them. A cut one (length) says so. */
export function finishWithCalls(finish: OpenAIFinish, madeCalls: boolean): OpenAIFinish | 'tool_calls' {
  return madeCalls && finish === 'stop' ? 'tool_calls' : finish;
}

/** The whole answer: content (null when there are only calls) and tool_calls (left out when none). */
export function toolMessage(parser: ToolCallParser, text: string): { content: string | null; tool_calls?: ParsedCall[] } {
  const s = newCallStream(parser);
  s.push(text);
  s.finish();
  if (s.calls.length === 0) return { content: s.content };
  return { content: s.content === '' ? null : s.content, tool_calls: s.calls };
}

/** A streamed delta's fields for one step's piece (content always present while nothing else is). */
export function pieceDelta(piece: CallPiece): { content?: string; tool_calls?: CallPiece['calls'] } {
  if (piece.calls.length === 0) return { content: piece.content };
  return piece.content ? { content: piece.content, tool_calls: piece.calls } : { tool_calls: piece.calls };
}
