// Generated text → content and tool calls, incrementally (one per choice; streamed and whole answers
// both run through it, so they always agree). Text outside call markup is content, except
// whitespace next to calls (what separates calls, or a newline before one): it is held back and
// dropped once a call comes, so an answer with only calls has content null. A partial `start` at the
// end of the text so far is held back too: the markup never leaks into content. A call is announced
// when its name is known (id, type, name, arguments ''), then its arguments follow as they are
// written: the OpenAI stream shape. Markup that turns out not to be a call goes out as content.

import type { ToolCallParser, CallBodyScanner } from './parser.js';

/** One choice's tool-call delta, in OpenAI's streamed shape. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

export interface CallPiece {
  content: string;
  calls: ToolCallDelta[];
}

export interface ParsedCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export class ToolCallStream {
  /** Everything emitted so far: content and calls (whole answers read these after finish()). */
  content = '';
  readonly calls: ParsedCall[] = [];
  private mode: 'text' | 'call' | 'closing' = 'text';
  private pending = ''; // text mode: a possible prefix of parser.start
  private heldWs = ''; // trailing whitespace of the content, not yet emitted
  private raw = ''; // call mode: the markup since start, for a call that turns out not to be one
  private scanner: CallBodyScanner | null = null;
  private named = false; // the current call has been announced
  private closing = ''; // closing mode: text after the body, toward parser.end

  constructor(
    private readonly parser: ToolCallParser,
    private readonly newId: () => string,
  ) {}

  push(text: string): CallPiece {
    const out: CallPiece = { content: '', calls: [] };
    for (const ch of text) this.pushChar(ch, out);
    return out;
  }

  /** The end of the text: what was held back as a possible call start is content after all. */
  finish(): CallPiece {
    const out: CallPiece = { content: '', calls: [] };
    if (this.mode === 'text') this.emitContent(this.pending, out);
    else if (this.mode === 'call' && !this.named) this.emitContent(this.raw, out);
    this.pending = '';
    this.raw = '';
    if (this.calls.length === 0 && this.heldWs) {
      out.content += this.heldWs;
      this.content += this.heldWs;
    }
    this.heldWs = '';
    return out;
  }

  private pushChar(ch: string, out: CallPiece): void {
    if (this.mode === 'call') return this.pushCall(ch, out);
    if (this.mode === 'closing') {
      this.closing += ch;
      const t = this.closing.trimStart();
      if (t === this.parser.end) {
        this.mode = 'text';
        this.closing = '';
      } else if (!this.parser.end.startsWith(t)) {
        // Not the end tag: the call stands as written; the rest is text.
        const rest = this.closing;
        this.mode = 'text';
        this.closing = '';
        for (const c of rest) this.pushChar(c, out);
      }
      return;
    }
    this.pending += ch;
    const start = this.parser.start;
    if (this.pending.endsWith(start)) {
      this.emitContent(this.pending.slice(0, -start.length), out);
      this.pending = '';
      this.heldWs = ''; // whitespace before a call is not content
      this.mode = 'call';
      this.raw = start;
      this.scanner = this.parser.newBodyScanner();
      this.named = false;
      return;
    }
    let keep = Math.min(this.pending.length, start.length - 1);
    while (keep > 0 && !start.startsWith(this.pending.slice(-keep))) keep--;
    this.emitContent(this.pending.slice(0, this.pending.length - keep), out);
    this.pending = this.pending.slice(this.pending.length - keep);
  }

  private pushCall(ch: string, out: CallPiece): void {
    this.raw += ch;
    for (const ev of this.scanner!.push(ch)) {
      if (ev.type === 'name') {
        const call: ParsedCall = { id: this.newId(), type: 'function', function: { name: ev.name, arguments: '' } };
        this.calls.push(call);
        this.named = true;
        out.calls.push({ index: this.calls.length - 1, id: call.id, type: 'function', function: { name: ev.name, arguments: '' } });
      } else if (ev.type === 'arguments') {
        const index = this.calls.length - 1;
        this.calls[index]!.function.arguments += ev.text;
        const last = out.calls[out.calls.length - 1];
        if (last?.index === index && last.id === undefined) last.function.arguments += ev.text;
        else out.calls.push({ index, function: { arguments: ev.text } });
      } else if (ev.type === 'end') {
        this.mode = 'closing';
        this.closing = '';
      } else {
        // Not a call after all. Announced: it stands as written so far (a client already has it);
        // otherwise its markup is content.
        const raw = this.raw;
        this.mode = 'text';
        this.raw = '';
        if (!this.named) this.emitContent(raw, out);
      }
    }
  }

  /** Content, with its trailing whitespace held back until more content follows. */
  private emitContent(s: string, out: CallPiece): void {
    if (!s) return;
    const all = this.heldWs + s;
    const body = all.trimEnd();
    this.heldWs = all.slice(body.length);
    if (!body) return;
    out.content += body;
    this.content += body;
  }
}
