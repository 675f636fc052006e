// A checkpoint's text side, loaded once per sidecar: tokenizer + chat template + eos ids, and the
// operations the server exposes (chat encoding, /tokenize and /detokenize in vLLM's shapes, streaming).

import { access, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EngineError, RESERVED_TEMPLATE_KWARGS, type ChatTemplateInputs } from '../../protocol/engine-client.js';
import { ChatTemplate, FALLBACK_CHAT_TEMPLATE, TemplateError } from './chat-template.js';
import { readSideConfig } from './checkpoint-config.js';
import { IncrementalDetokenizer, type DetokenizerOptions } from './detokenizer.js';
import { HfJsonTokenizer } from './hf-json.js';
import { SentencePieceTokenizer } from './sentencepiece.js';
import type { TemplateMessage, ChatOptions, Tokenizer } from './types.js';

export interface TokenizerLoadOptions {
  /** Which file to use when the directory has both (default 'json': tokenizer.json). */
  prefer?: 'json' | 'sentencepiece';
  /** The server's context length, reported by tokenize(); default: the checkpoint's (config files). */
  maxModelLen?: number;
  /** --chat-template: this template's text instead of the checkpoint's. */
  chatTemplate?: string;
  /** --trust-request-chat-template: a request may bring its own chat_template (default false: refused). */
  trustRequestChatTemplate?: boolean;
}

/** Chat encoding's options: the template's (add_generation_prompt, …) and the request's ChatTemplateInputs. */
export type ChatEncodeOptions = Omit<ChatOptions, 'tools' | 'kwargs'> & ChatTemplateInputs;

/** Request templates compiled and kept, by text (a client sends the same one each time). */
const REQUEST_TEMPLATE_CACHE = 16;

/** vLLM's POST /tokenize body, minus `model`: exactly one of prompt / messages (the engine protocol's TokenizeRequest fits). */
export interface TokenizeInput extends ChatTemplateInputs {
  prompt?: string;
  messages?: TemplateMessage[];
  /** prompt: default true; messages: default false (the template already has its markers), as vLLM. */
  addSpecialTokens?: boolean;
  /** messages only; default true. */
  addGenerationPrompt?: boolean;
}

export interface TokenizeResponse {
  count: number;
  max_model_len: number | null;
  tokens: number[];
}

export class TokenizerBundle {
  constructor(
    readonly tokenizer: Tokenizer,
    readonly template: ChatTemplate,
    /** What was loaded, for the start-up log. */
    readonly source: string,
    /** Ids that end generation: eos, `<|end_of_sentence|>` if present, generation_config's eos ids. */
    readonly eosIds: readonly number[],
    readonly maxModelLen: number | null,
    /** Ids the post-processor wraps a prompt in when add_special_tokens is on. */
    private readonly promptWrap: { before: number[]; after: number[] },
    private readonly trustRequestChatTemplate = false,
  ) {}
  private readonly requestTemplates = new Map<string, ChatTemplate>();

  renderChat(messages: readonly TemplateMessage[], opts: ChatEncodeOptions = {}): string {
    const r = this.resolveChat(messages, opts);
    return r.template.render(r.messages, r.opts);
  }

  /** Chat → ids. Template markers become control ids; message content never does (injection-safe). */
  encodeChat(messages: readonly TemplateMessage[], opts: ChatEncodeOptions = {}): number[] {
    const r = this.resolveChat(messages, opts);
    const segments = r.template.renderSegments(r.messages, r.opts);
    // continue_final_message, as transformers does it: the render is cut right after the final
    // message's content (its closing markers and anything after them dropped).
    if (opts.continueFinalMessage) {
      let last = segments.length - 1;
      while (last >= 0 && segments[last]!.parseSpecial) last--;
      segments.length = last + 1;
    }
    return this.tokenizer.encodeSegments(segments);
  }

  /**
   * Which template renders which messages with which variables: the request's template (when trusted)
   * or the server's; the tool fallback conversation when the template ignores `tools`; the kwargs
   * checked against the names the render sets itself. Bad input is an INVALID_REQUEST EngineError.
   */
  private resolveChat(messages: readonly TemplateMessage[], opts: ChatEncodeOptions): { template: ChatTemplate; messages: readonly TemplateMessage[]; opts: ChatOptions } {
    const template = opts.chatTemplate === undefined ? this.template : this.requestTemplate(opts.chatTemplate);
    const kwargs = opts.chatTemplateKwargs;
    if (kwargs) {
      const reserved = new Set([...RESERVED_TEMPLATE_KWARGS, ...template.specialTokenNames]);
      const bad = Object.keys(kwargs).find((k) => reserved.has(k));
      if (bad !== undefined) throw new EngineError('INVALID_REQUEST', `chat_template_kwargs may not set '${bad}': the server sets it`, 'chat_template_kwargs');
    }
    const base: ChatOptions = { addGenerationPrompt: opts.addGenerationPrompt, continueFinalMessage: opts.continueFinalMessage, ...(kwargs ? { kwargs } : {}) };
    if (opts.toolFallback && !template.rendersTools) return { template, messages: opts.toolFallback, opts: base };
    return { template, messages, opts: opts.tools ? { ...base, tools: opts.tools } : base };
  }

  private requestTemplate(text: string): ChatTemplate {
    if (!this.trustRequestChatTemplate) {
      throw new EngineError('INVALID_REQUEST', 'chat_template was sent with the request, but the server was not started with --trust-request-chat-template', 'chat_template');
    }
    let t = this.requestTemplates.get(text);
    if (t) this.requestTemplates.delete(text); // re-inserted below: most recently used last
    else {
      try {
        t = this.template.sibling(text, "the request's chat_template");
      } catch (e) {
        throw new EngineError('INVALID_REQUEST', (e as TemplateError).message, 'chat_template');
      }
      if (this.requestTemplates.size >= REQUEST_TEMPLATE_CACHE) this.requestTemplates.delete(this.requestTemplates.keys().next().value!);
    }
    this.requestTemplates.set(text, t);
    return t;
  }

  /** A completion prompt → ids. Special-token strings in it are parsed, as vLLM's completions do. */
  encodePrompt(prompt: string, opts: { addSpecialTokens?: boolean } = {}): number[] {
    const ids = this.tokenizer.encode(prompt, { parseSpecial: true });
    return (opts.addSpecialTokens ?? true) ? this.wrap(ids) : ids;
  }

  private wrap(ids: number[]): number[] {
    const { before, after } = this.promptWrap;
    return before.length + after.length === 0 ? ids : [...before, ...ids, ...after];
  }

  /** POST /tokenize. Bad input is an INVALID_REQUEST EngineError (never an assert). */
  tokenize(req: TokenizeInput): TokenizeResponse {
    const hasPrompt = typeof req.prompt === 'string';
    const hasMessages = Array.isArray(req.messages);
    if (hasPrompt === hasMessages) throw new EngineError('INVALID_REQUEST', 'give exactly one of prompt or messages', hasPrompt ? 'messages' : 'prompt');
    let tokens: number[];
    if (hasMessages) {
      const messages = req.messages!;
      messages.forEach((m, i) => {
        if (typeof m?.role !== 'string' || typeof m.content !== 'string') {
          throw new EngineError('INVALID_REQUEST', `messages[${i}] needs a string role and content`, `messages[${i}]`);
        }
      });
      tokens = this.encodeChat(messages, {
        addGenerationPrompt: req.addGenerationPrompt ?? true,
        tools: req.tools,
        toolFallback: req.toolFallback,
        chatTemplate: req.chatTemplate,
        chatTemplateKwargs: req.chatTemplateKwargs,
      });
      if (req.addSpecialTokens === true) tokens = this.wrap(tokens);
    } else tokens = this.encodePrompt(req.prompt!, { addSpecialTokens: req.addSpecialTokens ?? true });
    return { count: tokens.length, max_model_len: this.maxModelLen, tokens };
  }

  /** POST /detokenize: `{prompt}` as vLLM answers. Unknown ids decode to ''; non-integers are rejected. */
  detokenize(ids: readonly number[], opts: { skipSpecialTokens?: boolean } = {}): { prompt: string } {
    ids.forEach((id, i) => {
      if (!Number.isInteger(id)) throw new EngineError('INVALID_REQUEST', `tokens[${i}] is not an integer`, 'tokens');
    });
    return { prompt: this.tokenizer.decode(ids, { skipSpecialTokens: opts.skipSpecialTokens ?? false }) };
  }

  newDetokenizer(opts: DetokenizerOptions = {}): IncrementalDetokenizer {
    return new IncrementalDetokenizer(this.tokenizer, opts);
  }
}

async function exists(p: string): Promise<boolean> {
  try {
    await access(p);
    return true;
  } catch {
    return false;
  }
}

/**
 * Loads the tokenizer of a checkpoint directory: tokenizer.json (HF) or tokenizer.model (sentencepiece),
 * preferring tokenizer.json when both exist unless `prefer: 'sentencepiece'`, plus the side files.
 */
export async function loadTokenizerBundle(dir: string, opts: TokenizerLoadOptions = {}): Promise<TokenizerBundle> {
  const jsonPath = join(dir, 'tokenizer.json');
  const modelPath = join(dir, 'tokenizer.model');
  const [hasJson, hasModel] = await Promise.all([exists(jsonPath), exists(modelPath)]);
  if (!hasJson && !hasModel) throw new Error(`${dir}: no tokenizer.json or tokenizer.model`);
  const useJson = hasJson && (opts.prefer !== 'sentencepiece' || !hasModel);
  const side = await readSideConfig(dir);

  let tokenizer: Tokenizer;
  let promptWrap = { before: [] as number[], after: [] as number[] };
  if (useJson) {
    const hf = new HfJsonTokenizer(JSON.parse(await readFile(jsonPath, 'utf8')) as Record<string, unknown>, side, jsonPath);
    if (hf.template) promptWrap = hf.template;
    tokenizer = hf;
  } else {
    tokenizer = SentencePieceTokenizer.fromBytes(new Uint8Array(await readFile(modelPath)), side, modelPath);
    // The slow (sentencepiece) tokenizers add BOS/EOS per tokenizer_config; ERNIE's sets neither → none.
    if (side.addBosToken && tokenizer.bosId !== null) promptWrap.before.push(tokenizer.bosId);
    if (side.addEosToken && tokenizer.eosId !== null) promptWrap.after.push(tokenizer.eosId);
  }

  const template =
    opts.chatTemplate !== undefined
      ? new ChatTemplate(opts.chatTemplate, '--chat-template', side.namedTokens)
      : side.chatTemplate
        ? new ChatTemplate(side.chatTemplate, side.chatTemplateSource ?? 'tokenizer_config.json', side.namedTokens)
        : new ChatTemplate(FALLBACK_CHAT_TEMPLATE, 'built-in ERNIE-4.5 fallback (the checkpoint has no chat_template)', side.namedTokens);

  const eos = new Set<number>();
  const add = (id: number | null | undefined): void => {
    if (id !== null && id !== undefined && id >= 0 && id < tokenizer.size && tokenizer.idToToken(id) !== null) eos.add(id);
  };
  add(tokenizer.eosId);
  add(tokenizer.tokenToId('<|end_of_sentence|>'));
  for (const id of side.generationEosIds) add(id);

  const maxModelLen = opts.maxModelLen ?? side.modelMaxLength;
  const source =
    `${tokenizer.description}${hasJson && hasModel ? ` [both files present; picked ${useJson ? 'tokenizer.json' : 'tokenizer.model'}]` : ''}; ` +
    `chat template: ${template.source}; side files: ${side.filesRead.join(', ') || 'none'}; eos ids: ${[...eos].join(', ')}`;
  return new TokenizerBundle(tokenizer, template, source, [...eos], maxModelLen, promptWrap, opts.trustRequestChatTemplate ?? false);
}
