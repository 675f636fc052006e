// The `hermes` tool-call format (vLLM's hermes parser; Qwen2.5's and NousResearch Hermes' templates):
//   <tool_call>
//   {"name": "get_weather", "arguments": {"city": "Paris"}}
//   </tool_call>
// one block per call; results go back as <tool_response>…</tool_response> in a user turn.

import type { ChatMessage, ToolDefinition } from '../../protocol/engine-client.js';
import type { BodyEvent, CallBodyScanner, TagFormat, ToolCallParser } from './parser.js';
import { JsonValueScanner } from './json-scanner.js';

const START = '<tool_call>';
const END = '</tool_call>';
/** A name longer than this is not a call (tool names are at most 64 characters). */
const MAX_NAME_CHARS = 256;

export const hermesParser: ToolCallParser = {
  name: 'hermes',
  start: START,
  end: END,
  separator: '\n',
  callTag(name: string, parameters: Record<string, unknown>): TagFormat {
    return { type: 'tag', begin: `${START}\n{"name": ${JSON.stringify(name)}, "arguments": `, content: { type: 'json_schema', json_schema: parameters }, end: `}\n${END}` };
  },
  newBodyScanner: () => new HermesBodyScanner(),
  formatCall(name: string, args: string): string {
    return `${START}\n{"name": ${JSON.stringify(name)}, "arguments": ${args}}\n${END}`;
  },
  formatResults(results: string[]): ChatMessage {
    return { role: 'user', content: results.map((r) => `<tool_response>\n${r}\n</tool_response>`).join('\n') };
  },
  systemPrompt(tools: readonly ToolDefinition[]): string {
    return [
      '# Tools',
      '',
      'You may call one or more functions to assist with the user query.',
      '',
      'You are provided with function signatures within <tools></tools> XML tags:',
      '<tools>',
      ...tools.map((t) => JSON.stringify(t)),
      '</tools>',
      '',
      'For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:',
      START,
      '{"name": <function-name>, "arguments": <args-json-object>}',
      END,
    ].join('\n');
  },
};

/**
 * The body `{"name": STRING, "arguments": OBJECT}` (whitespace anywhere between tokens), then only
 * whitespace until the end tag (the caller's). Keys in this order: the structural tag generates them so.
 */
class HermesBodyScanner implements CallBodyScanner {
  // The literal pieces around the two values; ' ' stands for optional whitespace (after a piece, the
  // value or the end skips its own).
  private static readonly PIECES = [' { "name" :', ' , "arguments" :', ' }'];
  private piece = 0;
  private at = 0; // position in PIECES[piece]
  private phase: 'literal' | 'name' | 'arguments' | 'done' = 'literal';
  private nameRaw = '';
  private nameEscape = false;
  private args: JsonValueScanner | null = null;

  push(ch: string): BodyEvent[] {
    if (this.phase === 'name') return this.pushName(ch);
    if (this.phase === 'arguments') {
      const r = this.args!.push(ch);
      if (r === 'invalid') return [{ type: 'invalid' }];
      if (r === 'skip') return [];
      if (r === 'done') this.nextPiece(2);
      return [{ type: 'arguments', text: ch }];
    }
    if (this.phase === 'done') return /\s/.test(ch) ? [] : [{ type: 'invalid' }];
    return this.pushLiteral(ch);
  }

  private nextPiece(piece: number): void {
    this.phase = 'literal';
    this.piece = piece;
    this.at = 0;
  }

  private pushLiteral(ch: string): BodyEvent[] {
    const lit = HermesBodyScanner.PIECES[this.piece]!;
    while (lit[this.at] === ' ') {
      if (/\s/.test(ch)) return [];
      this.at++;
    }
    if (ch !== lit[this.at]) return [{ type: 'invalid' }];
    this.at++;
    if (this.at < lit.length) return [];
    if (this.piece === 0) this.phase = 'name';
    else if (this.piece === 1) {
      this.phase = 'arguments';
      this.args = new JsonValueScanner();
    } else {
      this.phase = 'done';
      return [{ type: 'end' }];
    }
    return [];
  }

  private pushName(ch: string): BodyEvent[] {
    if (this.nameRaw === '') {
      if (/\s/.test(ch)) return [];
      if (ch !== '"') return [{ type: 'invalid' }];
      this.nameRaw = ch;
      return [];
    }
    this.nameRaw += ch;
    if (this.nameEscape) this.nameEscape = false;
    else if (ch === '\\') this.nameEscape = true;
    else if (ch === '"') {
      let name: unknown;
      try {
        name = JSON.parse(this.nameRaw);
      } catch {
        return [{ type: 'invalid' }];
      }
      this.nextPiece(1);
      return [{ type: 'name', name: name as string }];
    } else if (ch < ' ' || this.nameRaw.length > MAX_NAME_CHARS) return [{ type: 'invalid' }];
    return [];
  }
}
