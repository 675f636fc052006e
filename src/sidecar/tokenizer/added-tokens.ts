// Splitting text on added tokens (special markers like `<|end_of_sentence|>`), before the model runs.
// Semantics of HF tokenizers' AddedVocabulary: non-overlapping leftmost-longest matches over the text
// (what its aho-corasick LeftmostLongest automaton yields), each match then filtered/extended by the
// token's flags: single_word (discard unless bounded by non-word characters), lstrip / rstrip (absorb
// adjacent whitespace into the token; lstrip never reaches into the previous split).
// A UTF-16 trie replaces aho-corasick: the walk from each position costs the match depth only, which
// matters for ERNIE's ~1,000 `<|LOC_n|>` tokens that all share the prefix `<|`.

export interface AddedToken {
  id: number;
  content: string;
  special: boolean;
  lstrip: boolean;
  rstrip: boolean;
  singleWord: boolean;
  /** Matched on normalized text (HF `normalized: true`) instead of raw text. */
  normalized: boolean;
}

/** A piece of split text: `id` ≥ 0 for a matched added token, -1 for plain text to give to the model. */
export interface SplitPiece {
  text: string;
  id: number;
}

interface TrieNode {
  next: Map<number, TrieNode>;
  token: AddedToken | null;
}

const WORD_CHAR = /[\p{L}\p{N}_]/u;
const WHITESPACE = /\s/u;

function isWordCharBefore(text: string, i: number): boolean {
  if (i <= 0) return false;
  const lo = text.charCodeAt(i - 1);
  const at = lo >= 0xdc00 && lo <= 0xdfff && i >= 2 ? i - 2 : i - 1; // step back over a surrogate pair
  return WORD_CHAR.test(String.fromCodePoint(text.codePointAt(at)!));
}

function isWordCharAt(text: string, i: number): boolean {
  if (i >= text.length) return false;
  return WORD_CHAR.test(String.fromCodePoint(text.codePointAt(i)!));
}

export class AddedTokenMatcher {
  private readonly root: TrieNode = { next: new Map(), token: null };
  readonly tokens: readonly AddedToken[];

  constructor(tokens: readonly AddedToken[]) {
    this.tokens = tokens;
    for (const t of tokens) {
      if (t.content.length === 0) continue;
      let node = this.root;
      for (let i = 0; i < t.content.length; i++) {
        const c = t.content.charCodeAt(i);
        let child = node.next.get(c);
        if (!child) {
          child = { next: new Map(), token: null };
          node.next.set(c, child);
        }
        node = child;
      }
      node.token = t;
    }
  }

  get isEmpty(): boolean {
    return this.root.next.size === 0;
  }

  /** Longest allowed token starting at `i`, or null. */
  private longestAt(text: string, i: number, allowSpecial: boolean, normalizedPass: boolean | null): AddedToken | null {
    let node: TrieNode | undefined = this.root;
    let best: AddedToken | null = null;
    for (let j = i; j < text.length; j++) {
      node = node.next.get(text.charCodeAt(j));
      if (!node) break;
      const t = node.token;
      if (t && (allowSpecial || !t.special) && (normalizedPass === null || t.normalized === normalizedPass)) best = t;
    }
    return best;
  }

  /**
   * Splits `text` into plain pieces and added tokens. `allowSpecial` false leaves special tokens as
   * text. `normalizedPass` restricts matching to tokens with that `normalized` flag (null: all).
   */
  split(text: string, allowSpecial: boolean, normalizedPass: boolean | null = null): SplitPiece[] {
    const out: SplitPiece[] = [];
    if (this.isEmpty || text.length === 0) {
      if (text.length > 0) out.push({ text, id: -1 });
      return out;
    }
    let prevStop = 0; // end of the last emitted split
    let i = 0;
    while (i < text.length) {
      if (!this.root.next.has(text.charCodeAt(i))) {
        i++;
        continue;
      }
      const t = this.longestAt(text, i, allowSpecial, normalizedPass);
      if (!t) {
        i++;
        continue;
      }
      let start = i;
      let stop = i + t.content.length;
      if (t.singleWord && (isWordCharBefore(text, start) || isWordCharAt(text, stop))) {
        i = stop; // a discarded match still consumes its span (non-overlapping iteration)
        continue;
      }
      if (t.lstrip) {
        while (start > prevStop && WHITESPACE.test(text[start - 1]!)) start--;
      }
      if (t.rstrip) {
        while (stop < text.length && WHITESPACE.test(text[stop]!)) stop++;
      }
      if (start > prevStop) out.push({ text: text.slice(prevStop, start), id: -1 });
      out.push({ text: t.content, id: t.id });
      prevStop = stop;
      i = stop;
    }
    if (prevStop < text.length) out.push({ text: text.slice(prevStop), id: -1 });
    return out;
  }
}
