// The tokenizer contracts the sidecar depends on. Two implementations: HfJsonTokenizer (tokenizer.json)
// and SentencePieceTokenizer (tokenizer.model); each reproduces its own reference library
// (HF tokenizers / sentencepiece), including where the two references disagree (see the docs below).

export type TokenizerKind = 'hf-json' | 'sentencepiece';

export interface EncodeOptions {
  /**
   * Parse special-token strings found in the text into their ids (default true, as both references do).
   * false = the text is untrusted user content: `<|end_of_sentence|>` becomes ordinary pieces.
   * Non-special added tokens are still matched (HF's split_special_tokens semantics).
   */
  parseSpecial?: boolean;
  /** Prepend bosId (when the tokenizer has one). Default false. */
  addBos?: boolean;
}

export interface DecodeOptions {
  /** Drop every id in `specialIds` before decoding (HF's skip_special_tokens). Default false. */
  skipSpecialTokens?: boolean;
}

/**
 * What one id contributes to streamed text: a raw byte (byte-fallback piece), a text surface, or nothing
 * (an id the tokenizer does not know: beyond its range, or a gap in it).
 */
export type StreamPiece = number | string | null;

export interface Tokenizer {
  readonly kind: TokenizerKind;
  /** 1 + the largest id the tokenizer knows. Ids in [0, size) may still be gaps (idToToken → null). */
  readonly size: number;
  readonly bosId: number | null;
  readonly eosId: number | null;
  /** Control / special ids: skipped by skipSpecialTokens, never produced from untrusted text. */
  readonly specialIds: ReadonlySet<number>;
  encode(text: string, opts?: EncodeOptions): number[];
  /** Text segments with per-segment trust, encoded as one text (no merge is split at a segment border
   *  unless a special token sits there). Used for injection-safe chat encoding. */
  encodeSegments(segments: readonly TextSegment[], opts?: { addBos?: boolean }): number[];
  /** The reference decoder's output. Unknown ids (out of range, gaps) decode to ''. */
  decode(ids: readonly number[], opts?: DecodeOptions): string;
  /** Raw bytes of the piece: byte-fallback resolved, '▁' → ' ', special tokens as their text; [] if unknown. */
  tokenBytes(id: number): Uint8Array;
  /** tokenBytes as text for logprobs; a piece that is not whole UTF-8 alone reads "bytes:\\xe4". */
  tokenText(id: number): string;
  idToToken(id: number): string | null;
  tokenToId(token: string): number | null;
  /** Streaming view of one id (see StreamPiece), consistent with `decode` on well-formed output. */
  streamPiece(id: number): StreamPiece;
  /** How a run of byte pieces that is not well-formed UTF-8 is replaced (see utf8.ts). */
  readonly invalidBytePolicy: 'per-byte' | 'whole-run';
  /** One line for the start-up log: file, model type, vocabulary, options. */
  readonly description: string;
}

export interface TextSegment {
  text: string;
  /** true: special-token strings in this segment become control ids (template text). */
  parseSpecial: boolean;
}

/**
 * A chat message as the template sees it. Structural, so src/protocol's ChatMessage fits; any extra
 * fields on the objects (name, tool_calls…) reach the template unchanged.
 */
export interface TemplateMessage {
  role: string;
  content: string;
  name?: string;
  tool_calls?: readonly { id: string; type: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

export interface ChatOptions {
  /** The template's `tools` (absent: the variable is undefined, as transformers leaves it). */
  tools?: readonly unknown[];
  /** Extra template variables (chat_template_kwargs); reserved names are refused before rendering. */
  kwargs?: Readonly<Record<string, unknown>>;
  /** End the render with the assistant prefix (the template's add_generation_prompt). Default true. */
  addGenerationPrompt?: boolean;
  /** End the render right after the final message's content, left open so generation continues it
   * (transformers' continue_final_message; encodeChat only). Default false. */
  continueFinalMessage?: boolean;
}
