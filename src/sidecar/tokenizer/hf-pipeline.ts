// The parts of a tokenizer.json pipeline around the BPE model: normalizer, pre-tokenizer, decoder.
// Only the component types that SentencePiece-derived checkpoints (ERNIE, Llama-2 family) use are
// supported; anything else is refused at load time with its name, rather than silently mis-tokenizing.

import { decodeBytesHf } from './utf8.js';

type Json = Record<string, unknown>;

function str(v: unknown, what: string): string {
  if (typeof v !== 'string') throw new Error(`tokenizer.json: ${what} must be a string`);
  return v;
}

/** A Replace pattern: {"String": "▁"} or {"Regex": "…"} (Rust regex syntax, JS-compatible subset). */
function pattern(v: unknown): RegExp {
  const p = v as Json | null;
  if (p && typeof p.String === 'string') return new RegExp(p.String.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'gu');
  if (p && typeof p.Regex === 'string') return new RegExp(p.Regex, 'gu');
  throw new Error('tokenizer.json: unsupported Replace pattern');
}

export type Normalizer = (s: string) => string;

export function buildNormalizer(spec: unknown): Normalizer | null {
  if (spec === null || spec === undefined) return null;
  const n = spec as Json;
  switch (n.type) {
    case 'Sequence': {
      const parts = (n.normalizers as unknown[]).map(buildNormalizer).filter((f): f is Normalizer => f !== null);
      return (s) => parts.reduce((acc, f) => f(acc), s);
    }
    case 'Replace': {
      const re = pattern(n.pattern);
      const content = str(n.content, 'Replace.content');
      return (s) => s.replace(re, () => content);
    }
    case 'Prepend': {
      const p = str(n.prepend, 'Prepend.prepend');
      return (s) => (s.length > 0 ? p + s : s); // tokenizers: only non-empty strings
    }
    case 'NFC':
    case 'NFD':
    case 'NFKC':
    case 'NFKD': {
      const form = n.type;
      return (s) => s.normalize(form);
    }
    case 'Lowercase':
      return (s) => s.toLowerCase();
    case 'Strip': {
      const left = n.strip_left !== false;
      const right = n.strip_right !== false;
      return (s) => (left && right ? s.trim() : left ? s.trimStart() : right ? s.trimEnd() : s);
    }
    default:
      throw new Error(`tokenizer.json: unsupported normalizer ${String(n.type)}`);
  }
}

/** Splits one normalized text run (see segments.ts) into BPE words. */
export type PreTokenizer = (s: string, atStart: boolean) => string[];

export function buildPreTokenizer(spec: unknown): { fn: PreTokenizer; describe: string } {
  if (spec === null || spec === undefined) return { fn: (s) => [s], describe: 'none' };
  const p = spec as Json;
  if (p.type !== 'Metaspace') throw new Error(`tokenizer.json: unsupported pre_tokenizer ${String(p.type)}`);
  const repl = str(p.replacement ?? '▁', 'Metaspace.replacement');
  // Older files carry add_prefix_space instead of prepend_scheme.
  const scheme = typeof p.prepend_scheme === 'string' ? p.prepend_scheme : p.add_prefix_space === false ? 'never' : 'always';
  const split = p.split !== false;
  const fn: PreTokenizer = (s, atStart) => {
    let t = s.replaceAll(' ', repl);
    if (!t.startsWith(repl) && (scheme === 'always' || (scheme === 'first' && atStart))) t = repl + t;
    if (!split) return [t];
    // SplitDelimiterBehavior::MergedWithNext: each replacement char starts a new word.
    const words: string[] = [];
    let from = 0;
    for (let i = t.indexOf(repl, 1); i >= 0; i = t.indexOf(repl, i + repl.length)) {
      if (i > from) words.push(t.slice(from, i));
      from = i;
    }
    if (from < t.length) words.push(t.slice(from));
    return words;
  };
  return { fn, describe: `Metaspace(prepend_scheme=${scheme}, split=${split})` };
}

export interface Decoder {
  /** The reference decode of a token-string list. */
  decode(tokens: string[]): string;
  /** Per-token text for streaming (the position-independent steps before Fuse; byte tokens excluded). */
  perToken(token: string): string;
  /** `<0xXX>` tokens are raw bytes (a ByteFallback step is present). */
  byteFallback: boolean;
}

type Step = (tokens: string[]) => string[];

const BYTE_TOKEN = /^<0x([0-9A-Fa-f]{2})>$/;

function byteFallbackStep(tokens: string[]): string[] {
  const out: string[] = [];
  let run: number[] = [];
  const flush = (): void => {
    if (run.length > 0) out.push(decodeBytesHf(Uint8Array.from(run)));
    run = [];
  };
  for (const t of tokens) {
    const m = t.length === 6 ? BYTE_TOKEN.exec(t) : null;
    if (m) run.push(parseInt(m[1]!, 16));
    else {
      flush();
      out.push(t);
    }
  }
  flush();
  return out;
}

function stripToken(t: string, content: string, start: number, stop: number): string {
  const chars = Array.from(t);
  let a = 0;
  while (a < start && a < chars.length && chars[a] === content) a++;
  let b = chars.length;
  while (chars.length - b < stop && b > a && chars[b - 1] === content) b--;
  return chars.slice(a, b).join('');
}

export function buildDecoder(spec: unknown): Decoder {
  const steps: Step[] = [];
  const perTokenSteps: Array<(t: string) => string> = [];
  let fused = false;
  let byteFallback = false;
  const add = (d: Json): void => {
    switch (d.type) {
      case 'Sequence':
        for (const x of d.decoders as Json[]) add(x);
        return;
      case 'Replace': {
        const re = pattern(d.pattern);
        const content = str(d.content, 'Replace.content');
        const f = (t: string): string => t.replace(re, () => content);
        steps.push((ts) => ts.map(f));
        if (!fused) perTokenSteps.push(f);
        return;
      }
      case 'ByteFallback':
        byteFallback = true;
        steps.push(byteFallbackStep);
        return;
      case 'Fuse':
        fused = true;
        steps.push((ts) => [ts.join('')]);
        return;
      case 'Strip': {
        const content = str(d.content, 'Strip.content');
        const start = Number(d.start ?? 0);
        const stop = Number(d.stop ?? 0);
        const f = (t: string): string => stripToken(t, content, start, stop);
        steps.push((ts) => ts.map(f));
        if (!fused) perTokenSteps.push(f);
        return;
      }
      case 'Metaspace': {
        const repl = str(d.replacement ?? '▁', 'Metaspace.replacement');
        const scheme = typeof d.prepend_scheme === 'string' ? d.prepend_scheme : d.add_prefix_space === false ? 'never' : 'always';
        const f = (t: string): string => t.replaceAll(repl, ' ');
        steps.push((ts) =>
          ts.map((t, i) => {
            const r = f(t);
            return i === 0 && scheme !== 'never' && r.startsWith(' ') ? r.slice(1) : r;
          }),
        );
        if (!fused) perTokenSteps.push(f);
        return;
      }
      default:
        throw new Error(`tokenizer.json: unsupported decoder ${String(d.type)}`);
    }
  };
  if (spec !== null && spec !== undefined) add(spec as Json);
  return {
    decode: (tokens) => steps.reduce((ts, s) => s(ts), tokens).join(''),
    perToken: (t) => perTokenSteps.reduce((acc, f) => f(acc), t),
    byteFallback,
  };
}
