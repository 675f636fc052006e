// Chat templates: tokenizer_config.json's `chat_template`, rendered with @huggingface/jinja exactly as
// transformers' apply_chat_template renders it (messages, add_generation_prompt, and the special-token
// fields of the config: bos_token, eos_token, cls_token, sep_token, …).
//
// Injection safety: `renderSegments` renders once more with a per-message sentinel in place of each
// content, so the output splits into template text (trusted: its markers become control ids) and user
// content (untrusted: `<|end_of_sentence|>` typed by a user stays plain text). The sentinel render must
// reproduce the real render once contents are put back: by construction for a content-transparent
// template (./template-analysis.ts: ERNIE's is), otherwise checked against a second, real render. When
// a template transforms content (e.g. `|trim`) the contents (as given, or trimmed) are located in the
// real render in message order instead; failing both, rendering refuses (TemplateError) rather than let
// user text be parsed as markers.

import { randomUUID } from 'node:crypto';
import { Template } from '@huggingface/jinja';
import { isContentTransparent } from './template-analysis.js';
import type { TemplateMessage, ChatOptions, TextSegment } from './types.js';

/**
 * Used when a checkpoint ships no chat_template: the ERNIE-4.5 template itself (transformers'
 * `DEFAULT_CHAT_TEMPLATE` in convert_ernie4_5_tokenizer.py, identical to the 0.3B's tokenizer_config):
 *   <|begin_of_sentence|>{system}\nUser: {user}\nAssistant: {assistant}<|end_of_sentence|>…Assistant: 
 */
export const FALLBACK_CHAT_TEMPLATE =
  '{%- if not add_generation_prompt is defined -%}\n    {%- set add_generation_prompt = true -%}\n{%- endif -%}\n' +
  '{%- if not cls_token is defined -%}\n    {%- set cls_token = "<|begin_of_sentence|>" -%}\n{%- endif -%}\n' +
  '{%- if not sep_token is defined -%}\n    {%- set sep_token = "<|end_of_sentence|>" -%}\n{%- endif -%}\n' +
  '{{- cls_token -}}\n{%- for message in messages -%}\n    {%- if message["role"] == "user" -%}\n' +
  '        {{- "User: " + message["content"] + "\n" -}}\n    {%- elif message["role"] == "assistant" -%}\n' +
  '        {{- "Assistant: " + message["content"] + sep_token -}}\n    {%- elif message["role"] == "system" -%}\n' +
  '        {{- message["content"] + "\n" -}}\n    {%- endif -%}\n{%- endfor -%}\n' +
  '{%- if add_generation_prompt -%}\n    {{- "Assistant: " -}}\n{%- endif -%}';

export class TemplateError extends Error {
  override name = 'TemplateError';
}

export class ChatTemplate {
  private readonly compiled: Template;
  /** Content is only copied verbatim (./template-analysis.ts): one render per renderSegments. */
  readonly contentTransparent: boolean;

  constructor(
    readonly text: string,
    /** Where the template came from, for the start-up log. */
    readonly source: string,
    /** Special-token fields passed to every render (bos_token → "<s>", cls_token → …). */
    private readonly specialTokens: Readonly<Record<string, string>>,
  ) {
    try {
      this.compiled = new Template(text);
    } catch (e) {
      throw new TemplateError(`chat template from ${source} does not parse: ${(e as Error).message}`);
    }
    this.contentTransparent = isContentTransparent(this.compiled.parsed);
  }

  /** Another template with this one's special-token fields (a request's own chat_template). */
  sibling(text: string, source: string): ChatTemplate {
    return new ChatTemplate(text, source, this.specialTokens);
  }

  /** Special-token variable names (bos_token, …): chat_template_kwargs may not override them. */
  get specialTokenNames(): readonly string[] {
    return Object.keys(this.specialTokens);
  }

  /**
   * Whether the template renders `tools` at all: a one-message chat rendered with a probe tool and
   * without differ. A template that does not (ERNIE-4.5's) is told about tools by the caller's
   * fallback conversation instead (ChatTemplateInputs.toolFallback). A template that fails on the
   * probe does something with tools, so it counts as rendering them.
   */
  get rendersTools(): boolean {
    if (this.toolAware === null) {
      const probe = [{ role: 'user', content: 'x' }];
      const tool = { type: 'function', function: { name: 'probe', description: 'probe', parameters: { type: 'object', properties: {} } } };
      try {
        this.toolAware = this.render(probe, { tools: [tool] }) !== this.render(probe);
      } catch {
        this.toolAware = true;
      }
    }
    return this.toolAware;
  }
  private toolAware: boolean | null = null;

  render(messages: readonly TemplateMessage[], opts: ChatOptions = {}): string {
    try {
      return this.compiled.render({
        ...this.specialTokens,
        ...opts.kwargs,
        messages: messages.map(forTemplate),
        ...(opts.tools ? { tools: opts.tools } : {}),
        add_generation_prompt: opts.addGenerationPrompt ?? true,
        // raise_exception is a built-in of @huggingface/jinja (throws an Error, wrapped below).
      });
    } catch (e) {
      if (e instanceof TemplateError) throw e;
      throw new TemplateError(`chat template failed: ${(e as Error).message}`);
    }
  }

  /** The render as trusted template text and untrusted message content, in order (see the file note). */
  renderSegments(messages: readonly TemplateMessage[], opts: ChatOptions = {}): TextSegment[] {
    // A content-transparent template renders contents verbatim and nothing depends on them: the
    // sentinel render with the contents put back is the real render, so it need not be rendered.
    const real = this.contentTransparent ? null : this.render(messages, opts);
    const nonce = randomUUID();
    const sentinel = (i: number): string => `\uE000${nonce}:${i}\uE001`;
    const withSentinels = messages.map((m, i) => (typeof m.content === 'string' ? { ...m, content: sentinel(i) } : m));
    const rendered = this.render(withSentinels, opts);
    // Split at the sentinels with indexOf: a RegExp built around the nonce would be compiled anew on
    // every call, on the serving path where the caches are cold.
    const open = `\uE000${nonce}:`;
    const segments: TextSegment[] = [];
    let last = 0;
    for (let at = rendered.indexOf(open); at >= 0; at = rendered.indexOf(open, last)) {
      const close = rendered.indexOf('\uE001', at + open.length);
      const i = close < 0 ? -1 : Number(rendered.slice(at + open.length, close));
      if (!(i >= 0 && i < messages.length && Number.isInteger(i))) break; // cannot happen: the nonce is ours
      if (at > last) segments.push({ text: rendered.slice(last, at), parseSpecial: true });
      segments.push({ text: messages[i]!.content, parseSpecial: false });
      last = close + 1;
    }
    if (last < rendered.length) segments.push({ text: rendered.slice(last), parseSpecial: true });
    if (real === null) return segments;
    if (segments.map((s) => s.text).join('') === real) return segments;
    return locateContents(real, messages);
  }
}

/**
 * A message as templates expect it: tool calls' `function.arguments` as an object where they are JSON
 * (vLLM parses them before rendering: templates write `tool_call.arguments | tojson`).
 * NOTE: what a template renders from tool calls and tools is template text (its markers parsed), as in
 * transformers and vLLM; only `content` is kept untrusted (renderSegments).
 */
function forTemplate(m: TemplateMessage): TemplateMessage | Record<string, unknown> {
  if (!m.tool_calls) return m;
  return { ...m, tool_calls: m.tool_calls.map((c) => ({ ...c, function: { ...c.function, arguments: parseArguments(c.function.arguments) } })) };
}

function parseArguments(text: string): unknown {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : text;
  } catch {
    return text;
  }
}

/** Fallback: find each content (or its trimmed form) in the real render, in message order. */
function locateContents(real: string, messages: readonly TemplateMessage[]): TextSegment[] {
  const segments: TextSegment[] = [];
  let cursor = 0;
  for (const m of messages) {
    if (typeof m.content !== 'string') continue;
    // As given, or trimmed (the one rewrite chat templates commonly apply: `| trim`, `.strip()`).
    const content = real.indexOf(m.content, cursor) >= 0 ? m.content : m.content.trim();
    if (content.length === 0) continue;
    const at = real.indexOf(content, cursor);
    if (at < 0) {
      throw new TemplateError('the chat template rewrites message content; it cannot be encoded without letting user text become control tokens');
    }
    if (at > cursor) segments.push({ text: real.slice(cursor, at), parseSpecial: true });
    segments.push({ text: content, parseSpecial: false });
    cursor = at + content.length;
  }
  if (cursor < real.length) segments.push({ text: real.slice(cursor), parseSpecial: true });
  return segments;
}
