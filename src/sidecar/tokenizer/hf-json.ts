// The tokenizer.json form (HF tokenizers; the current converted ERNIE-4.5 checkpoints). Semantics of
// tokenizers' `Tokenizer::encode` / `decode`:
//  - added tokens are split out of the raw text first (special ones only when parsing specials; see
//    added-tokens.ts), then each remaining run goes normalizer → pre-tokenizer → BPE;
//  - decode maps ids to token strings (unknown ids dropped), drops special ones if asked, runs the decoder
//    chain (ERNIE: Replace '▁'→' ', ByteFallback, Fuse). Byte runs that are not valid UTF-8 become one
//    U+FFFD per byte of the run (utf8.ts).
// Added tokens from added_tokens.json / tokenizer_config.added_tokens_decoder that tokenizer.json lacks are
// added (ERNIE's <|LOC_n|> ids 100297+ exist even when the BPE vocabulary is smaller).
// Known deviation: added tokens with normalized=true AND special=true are never parsed (none in ERNIE).

import { AddedTokenMatcher, type AddedToken, type SplitPiece } from './added-tokens.js';
import { BaseTokenizer } from './base-tokenizer.js';
import type { TokenizerSideConfig } from './checkpoint-config.js';
import { HfBpeModel } from './hf-bpe.js';
import { buildDecoder, buildNormalizer, buildPreTokenizer, type Decoder, type Normalizer, type PreTokenizer } from './hf-pipeline.js';
import type { PlainRun } from './segments.js';
import type { DecodeOptions, StreamPiece } from './types.js';
import { pacePoint } from './pace.js';

type Json = Record<string, unknown>;

const BYTE_TOKEN = /^<0x([0-9A-Fa-f]{2})>$/;

export class HfJsonTokenizer extends BaseTokenizer {
  readonly kind = 'hf-json' as const;
  readonly size: number;
  readonly bosId: number | null;
  readonly eosId: number | null;
  readonly specialIds: ReadonlySet<number>;
  readonly invalidBytePolicy = 'whole-run' as const;
  readonly description: string;
  /** tokenizer.json post_processor (TemplateProcessing `single`) as [before, after] ids; null: none. */
  readonly template: { before: number[]; after: number[] } | null;

  private readonly vocab: Map<string, number>;
  private readonly tokens: Array<string | undefined> = [];
  private readonly isAdded: Uint8Array;
  private readonly addedIds = new Map<string, number>();
  private readonly rawMarkers: AddedTokenMatcher;
  private readonly normalizedMarkers: AddedTokenMatcher;
  private readonly bpe: HfBpeModel;
  private readonly normalizer: Normalizer | null;
  private readonly preTokenize: PreTokenizer;
  private readonly decoder: Decoder | null;

  constructor(json: Json, side: TokenizerSideConfig, path: string) {
    super();
    const model = json.model as Json | undefined;
    if (!model || model.type !== 'BPE') throw new Error(`${path}: only BPE models are supported (got ${String(model?.type)})`);
    if (model.continuing_subword_prefix || model.end_of_word_suffix) {
      throw new Error(`${path}: continuing_subword_prefix / end_of_word_suffix are not supported`);
    }
    this.vocab = new Map(Object.entries(model.vocab as Record<string, number>));
    for (const [t, id] of this.vocab) this.tokens[id] = t;
    const merges = (model.merges as unknown[]).map((m): [string, string] => {
      if (Array.isArray(m) && m.length === 2) return [String(m[0]), String(m[1])];
      const parts = String(m).split(' ');
      if (parts.length !== 2) throw new Error(`${path}: bad merge ${JSON.stringify(m)}`);
      return [parts[0]!, parts[1]!];
    });
    this.bpe = new HfBpeModel({
      vocab: this.vocab,
      merges,
      unkToken: typeof model.unk_token === 'string' ? model.unk_token : null,
      byteFallback: model.byte_fallback === true,
      fuseUnk: model.fuse_unk === true,
      ignoreMerges: model.ignore_merges === true,
    });

    const added: AddedToken[] = ((json.added_tokens as Json[] | undefined) ?? []).map((t) => ({
      id: Number(t.id),
      content: String(t.content),
      special: t.special === true,
      lstrip: t.lstrip === true,
      rstrip: t.rstrip === true,
      singleWord: t.single_word === true,
      normalized: t.normalized === true,
    }));
    const addedById = new Map(added.map((a) => [a.id, a]));
    const addedContent = new Set(added.map((a) => a.content));
    const aliases: AddedToken[] = [];
    for (const a of side.addedTokens) {
      const known = addedById.get(a.id);
      if (known) {
        if (known.content !== a.content) throw new Error(`${path}: added token ${a.id} is ${known.content} here but ${a.content} in the side files`);
        continue;
      }
      if (a.id < this.tokens.length && this.tokens[a.id] !== undefined) {
        throw new Error(`${path}: added token ${a.content}=${a.id} collides with ${JSON.stringify(this.tokens[a.id])}`);
      }
      // tokenizer.json is authoritative: content it already has under another id keeps that id for
      // encoding; the side-file id stays a valid id that decodes to the same text (an alias).
      if (this.vocab.has(a.content) || addedContent.has(a.content)) aliases.push(a);
      else {
        added.push(a);
        addedContent.add(a.content);
      }
      addedById.set(a.id, a);
    }
    const special = new Set<number>();
    let maxId = this.tokens.length - 1;
    for (const a of [...added, ...aliases]) {
      this.tokens[a.id] ??= a.content;
      if (!this.addedIds.has(a.content)) this.addedIds.set(a.content, a.id);
      if (a.special) special.add(a.id);
      maxId = Math.max(maxId, a.id);
    }
    this.size = maxId + 1;
    this.isAdded = new Uint8Array(this.size);
    for (const a of [...added, ...aliases]) this.isAdded[a.id] = 1;
    for (const name of [...Object.values(side.namedTokens), ...side.additionalSpecialTokens]) {
      const id = this.tokenToId(name);
      if (id !== null) special.add(id);
    }
    this.specialIds = special;
    this.rawMarkers = new AddedTokenMatcher(added.filter((a) => !a.normalized));
    this.normalizedMarkers = new AddedTokenMatcher(added.filter((a) => a.normalized));
    this.bosId = side.namedTokens.bos_token !== undefined ? this.tokenToId(side.namedTokens.bos_token) : null;
    this.eosId = side.namedTokens.eos_token !== undefined ? this.tokenToId(side.namedTokens.eos_token) : null;

    this.normalizer = buildNormalizer(json.normalizer);
    const pre = buildPreTokenizer(json.pre_tokenizer);
    this.preTokenize = pre.fn;
    this.decoder = json.decoder ? buildDecoder(json.decoder) : null;
    this.template = parsePostProcessor(json.post_processor, path);
    this.description =
      `hf-json ${path} (BPE, ${this.vocab.size} tokens + ${added.length} added, size ${this.size}, ` +
      `byte_fallback=${model.byte_fallback === true}, pre_tokenizer=${pre.describe}, normalizer=${json.normalizer ? String((json.normalizer as Json).type) : 'none'})`;
  }

  protected splitSpecial(text: string, parseSpecial: boolean): SplitPiece[] {
    return this.rawMarkers.split(text, parseSpecial, false);
  }

  protected encodeRun(run: PlainRun, out: number[]): void {
    const norm = this.normalizer ? this.normalizer(run.text) : run.text;
    const pieces = this.normalizedMarkers.split(norm, false, true);
    pieces.forEach((p, i) => {
      if (p.id >= 0) out.push(p.id);
      else {
        for (const w of this.preTokenize(p.text, run.atStart && i === 0)) {
          this.bpe.encodeWord(w, out);
          pacePoint();
        }
      }
    });
  }

  idToToken(id: number): string | null {
    return Number.isInteger(id) && id >= 0 ? (this.tokens[id] ?? null) : null;
  }

  tokenToId(token: string): number | null {
    return this.addedIds.get(token) ?? this.vocab.get(token) ?? null;
  }

  protected computeStreamPiece(id: number): StreamPiece {
    const tok = this.idToToken(id);
    if (tok === null) return null;
    if (!this.decoder) return tok;
    if (this.decoder.byteFallback && !this.isAdded[id] && tok.length === 6) {
      const m = BYTE_TOKEN.exec(tok);
      if (m) return parseInt(m[1]!, 16);
    }
    return this.decoder.perToken(tok);
  }

  decode(ids: readonly number[], opts: DecodeOptions = {}): string {
    const skip = opts.skipSpecialTokens ?? false;
    const toks: string[] = [];
    for (const id of ids) {
      const t = this.idToToken(id);
      if (t === null || (skip && this.specialIds.has(id))) continue;
      toks.push(t);
    }
    return this.decoder ? this.decoder.decode(toks) : toks.join(' ');
  }
}

function parsePostProcessor(spec: unknown, path: string): { before: number[]; after: number[] } | null {
  if (spec === null || spec === undefined) return null;
  const p = spec as Json;
  if (p.type !== 'TemplateProcessing') throw new Error(`${path}: unsupported post_processor ${String(p.type)}`);
  const specials = (p.special_tokens ?? {}) as Record<string, { ids?: number[] }>;
  const before: number[] = [];
  const after: number[] = [];
  let seenSeq = false;
  for (const piece of p.single as Json[]) {
    if (piece.Sequence) seenSeq = true;
    else if (piece.SpecialToken) {
      const name = String((piece.SpecialToken as Json).id);
      const ids = specials[name]?.ids;
      if (!ids) throw new Error(`${path}: post_processor names unknown special token ${name}`);
      (seenSeq ? after : before).push(...ids);
    }
  }
  return { before, after };
}
