// The tails of length-bounded strings, reshaped so that their masks come from xgrammar's compile-time
// cache instead of work on every step.
//
// A JSON string with minLength/maxLength reaches xgrammar as a pattern (./schema-strings.ts), which it
// expands into a chain of rules, one per optional character:
//     s   ::= (("\"" [^\"\\\0-\x1f] [^\"\\\0-\x1f] s_1 "\""))
//     s_1 ::= ("" | ([^\"\\\0-\x1f] s_2))   …   s_10 ::= ("" | ([^\"\\\0-\x1f]))
// xgrammar sorts a rule's tokens at compile time into accepted, rejected, and "uncertain": those that
// reach the end of the rule, whose fate depends on what follows it in the stack at run time. Each s_k
// may be empty, so every step inside the string had tokens that ran out of the chain (a closing quote,
// then what follows the string) to settle at run time, through the stack of chain rules above it:
// 48-54 µs a row over a 103k-piece vocabulary (Zen 5, bench/grammar-rows.ts), most of a grammar
// worker's time on the structured-output benchmark. The same language, written so that the chain ends
// in the quote itself:
//     s   ::= (("\"" [^\"\\\0-\x1f] [^\"\\\0-\x1f] s_1)) (=([,\]]))
//     s_1 ::= (("\"") | ([^\"\\\0-\x1f] s_2)) (=([,\]]))   …   s_10 ::= (("\"") | ([^\"\\\0-\x1f] "\"")) (=([,\]]))
// and with a lookahead assertion of what follows the string where the grammar says it plainly (here the
// array's "," or "]"), so that a token running past the quote is settled at compile time too: 5 µs a
// row at every position of the string, and the same masks (bench/grammar-rows.ts compares every row of
// 201 schemas' streams with the previous lowering's; test/sidecar/grammar/string-tail-lookahead.test.ts
// walks grammars with and without this step in lockstep).
//
// Which chains: a rule of that shape every reference to which is followed by the literal "\"", or is
// the tail of a rule that qualifies (greatest fixpoint, so a self-recursive tail
// `s_1 ::= ("" | ([^…] s_1))` qualifies through its outer reference). Its quoted references drop the
// quote; each chain rule gets the quote as its empty alternative, the last one after its character.
// What follows (the lookahead): the first characters of what comes after each quoted reference, where
// that is a literal, a rule whose every alternative starts with one (or with such a rule), a rule's own
// lookahead, or the end of the referencing rule (then what follows it, over all its references);
// anything else (a class, a repetition, the root's end) leaves the chain without a lookahead.
//
// Printed rule: `name ::= body` one per line, optionally followed by ` (=(…))` (a lookahead).

/** The body shape of a chain rule: "" or one character of a class, then optionally the next rule. */
const CHAIN_BODY = /^\(""\s\|\s\((\[(?:\\.|[^\]\\])*\])(?: ([A-Za-z_][\w]*))?\)\)$/;
const QUOTE_LITERAL = '"\\""';
const QUOTE_ALT = '("\\"")';

interface Ref {
  from: string; // the referencing rule
  tail: boolean; // nothing but closing parentheses follows it in its rule's body
  quoted: boolean; // the literal "\"" follows it
}

interface Rule {
  line: number;
  body: string;
  lookahead: string | null; // the text of its lookahead, `(=(…))`
}

/** `ebnf` with every string-tail chain ending in the closing quote, and lookaheads where what follows is known. */
export function stringTailLookaheads(ebnf: string): string {
  const lines = ebnf.split('\n');
  const rules = new Map<string, Rule>();
  lines.forEach((text, line) => {
    const m = /^([A-Za-z_][\w]*) ::= (.*)$/.exec(text);
    if (!m) return;
    const [body, lookahead] = splitLookahead(m[2]!);
    rules.set(m[1]!, { line, body, lookahead });
  });
  const candidates = new Set<string>();
  for (const [name, r] of rules) if (r.lookahead === null && name !== 'root' && CHAIN_BODY.test(r.body) && !classAllowsQuote(CHAIN_BODY.exec(r.body)![1]!)) candidates.add(name);
  if (candidates.size === 0) return ebnf;

  const refs = new Map<string, Ref[]>();
  for (const [from, r] of rules) {
    for (const ref of references(r.body, from)) {
      if (!candidates.has(ref.name)) continue;
      const list = refs.get(ref.name) ?? [];
      list.push(ref);
      refs.set(ref.name, list);
    }
    // A rule named inside a lookahead keeps its language: the rewrite adds the quote to a chain's.
    if (r.lookahead !== null) for (const ref of references(r.lookahead, from)) candidates.delete(ref.name);
  }
  // Greatest fixpoint: drop a candidate with a reference that is neither quoted nor a qualifying tail.
  let changed = true;
  while (changed) {
    changed = false;
    for (const name of candidates) {
      const ok = (refs.get(name) ?? []).every((r) => r.quoted || (r.tail && candidates.has(r.from)));
      if (!ok || !refs.has(name)) {
        candidates.delete(name);
        changed = true;
      }
    }
  }
  if (candidates.size === 0) return ebnf;

  // What follows each chain's quote (computed on the grammar as printed, before the rewrite).
  const follows = new Follows(rules);
  const chainFollow = new Map<string, Set<string> | null>(); // by candidate: the union over its quoted references
  const parents = new Map<string, Set<string> | null>(); // a rule that ends in a quoted chain reference: its own follow
  for (const name of candidates) {
    let set: Set<string> | null = new Set();
    for (const ref of refs.get(name)!) {
      if (!ref.quoted) continue;
      const r = rules.get(ref.from)!;
      for (const at of quotedRefEnds(r.body, name)) {
        const f = follows.after(ref.from, r.body, at);
        set = set && f ? new Set([...set, ...f]) : null;
        if (tailAt(r.body, at) && r.lookahead === null) parents.set(ref.from, follows.of(ref.from));
      }
    }
    chainFollow.set(name, set);
  }
  // Chains through tails: a candidate referenced as a tail shares its referrer's follow (fixpoint over unions).
  changed = true;
  while (changed) {
    changed = false;
    for (const name of candidates)
      for (const ref of refs.get(name)!) {
        if (ref.quoted) continue;
        const [a, b] = [chainFollow.get(name)!, chainFollow.get(ref.from)!];
        const u = a && b ? new Set([...a, ...b]) : null;
        if (u?.size !== a?.size || (u === null) !== (a === null)) {
          chainFollow.set(name, u);
          changed = true;
        }
      }
  }

  // Rewrite: a chain rule `("" | (C next))` becomes `(("\"") | (C next))`, its last `(("\"") | (C "\""))`;
  // each quoted reference drops its quote.
  for (const name of candidates) {
    const r = rules.get(name)!;
    const [, cls, next] = CHAIN_BODY.exec(r.body)!;
    lines[r.line] = `${name} ::= (${QUOTE_ALT} | (${cls} ${next ?? QUOTE_LITERAL}))${lookahead(chainFollow.get(name)!)}`;
  }
  for (const [from, r] of rules) {
    if (candidates.has(from)) continue;
    let body = r.body;
    for (const name of candidates) for (const at of quotedRefEnds(body, name).reverse()) body = body.slice(0, at) + body.slice(at + 1 + QUOTE_LITERAL.length);
    if (body === r.body) continue;
    const la = r.lookahead !== null ? ` ${r.lookahead}` : parents.has(from) ? lookahead(parents.get(from)!) : '';
    lines[r.line] = `${from} ::= ${body}${la}`;
  }
  return lines.join('\n');
}

/** The printed lookahead for a set of characters, or '' (none known, or one that a class cannot print plainly). */
function lookahead(chars: Set<string> | null): string {
  if (chars === null || chars.size === 0) return '';
  let cls = '';
  for (const c of [...chars].sort()) {
    const code = c.codePointAt(0)!;
    if (code < 0x20 || code === 0x7f) return '';
    cls += '\\]^-"'.includes(c) ? `\\${c}` : c;
  }
  return ` (=([${cls}]))`;
}

/** Where each reference to `name` that the literal "\"" follows ends in `body` (the index after the name). */
function quotedRefEnds(body: string, name: string): number[] {
  const out: number[] = [];
  for (const ref of references(body, '')) if (ref.name === name && ref.quoted) out.push(ref.end);
  return out;
}

/** Whether nothing but closing parentheses follows the quote after the reference ending at `at`. */
function tailAt(body: string, at: number): boolean {
  return /^\)*$/.test(body.slice(at + 1 + QUOTE_LITERAL.length).replace(/ /g, ''));
}

/**
 * The first characters of what may follow a rule (or a point in a rule's body), where the printed grammar
 * says so plainly: a literal next, a rule's own lookahead starting with a literal, or the end of the
 * referencing rule's body (then what follows that rule, over every reference to it). Anything else (a class,
 * a rule, a repetition, the root's end): null, unknown.
 */
class Follows {
  private readonly memo = new Map<string, Set<string> | null>();
  private readonly uses = new Map<string, { from: string; end: number }[]>();

  constructor(private readonly rules: Map<string, Rule>) {
    for (const [from, r] of rules)
      for (const ref of references(r.body, from)) {
        const list = this.uses.get(ref.name) ?? [];
        list.push({ from, end: ref.end });
        this.uses.set(ref.name, list);
      }
  }

  /** What follows rule `name` wherever it is used. */
  of(name: string): Set<string> | null {
    if (this.memo.has(name)) return this.memo.get(name)!;
    this.memo.set(name, null); // a cycle through tails: unknown
    const r = this.rules.get(name);
    let set: Set<string> | null;
    if (r?.lookahead) set = firstLiteralChar(r.lookahead.replace(/^\(=\(?/, ''));
    else if (name === 'root' || !this.uses.has(name)) set = null;
    else {
      set = new Set();
      for (const u of this.uses.get(name)!) {
        const f = this.after(u.from, this.rules.get(u.from)!.body, u.end);
        if (!f) {
          set = null;
          break;
        }
        for (const c of f) set.add(c);
      }
    }
    this.memo.set(name, set);
    return set;
  }

  /** What follows position `at` of rule `from`'s body (past a quote literal there, for a quoted reference). */
  after(from: string, body: string, at: number): Set<string> | null {
    let i = at;
    if (body.startsWith(` ${QUOTE_LITERAL}`, i)) i += 1 + QUOTE_LITERAL.length;
    for (;;) {
      while (body[i] === ' ') i++;
      if (i >= body.length) return this.of(from);
      const c = body[i]!;
      if (c === ')') {
        i++;
        if (i < body.length && /[*+?{]/.test(body[i]!)) return null; // a repeated group: its start may follow
        continue;
      }
      if (c === '|') {
        i = closeOfGroup(body, i); // the other alternatives: what follows is past the group's end
        if (i < 0) return this.of(from); // a top-level alternative: the rule's end
        continue;
      }
      if (c === '"') return firstLiteralChar(body.slice(i));
      const name = /^[A-Za-z_][\w]*/.exec(body.slice(i));
      if (name && !/^(\*|\?|\{0\b)/.test(body.slice(i + name[0].length))) return this.first(name[0]);
      return null;
    }
  }

  /** The first characters of rule `name`'s strings, where each alternative starts with a literal or such a rule (a rule that may be empty: null). */
  first(name: string, seen = new Set<string>()): Set<string> | null {
    const r = this.rules.get(name);
    if (!r || seen.has(name)) return null;
    seen.add(name);
    const set = new Set<string>();
    for (const alt of alternatives(r.body)) {
      const text = alt.replace(/^\(+/, '');
      let f: Set<string> | null;
      if (text.startsWith('"')) f = firstLiteralChar(text);
      else {
        const m = /^[A-Za-z_][\w]*/.exec(text);
        f = m && !/^(\*|\?|\{0\b)/.test(text.slice(m[0].length)) ? this.first(m[0], seen) : null;
      }
      if (!f) return null;
      for (const c of f) set.add(c);
    }
    return set.size > 0 ? set : null;
  }
}

/** The top-level alternatives of a printed body `((a) | (b))` or `(a)`, each as printed. */
function alternatives(body: string): string[] {
  const inner = body.startsWith('(') && closeOfGroup(body, 1) === body.length - 1 ? body.slice(1, -1) : body;
  const out: string[] = [];
  let depth = 0;
  let from = 0;
  for (let j = 0; j < inner.length; j++) {
    const c = inner[j]!;
    if (c === '"' || c === '[') j = skipQuoted(inner, j);
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === '|' && depth === 0) {
      out.push(inner.slice(from, j).trim());
      from = j + 1;
    }
  }
  out.push(inner.slice(from).trim());
  return out;
}

/** The index of the `)` that closes the group an `|` at `i` belongs to; -1 at the top level (the alternatives of the body). */
function closeOfGroup(body: string, i: number): number {
  let depth = 0;
  for (let j = i; j < body.length; j++) {
    const c = body[j]!;
    if (c === '"' || c === '[') j = skipQuoted(body, j);
    else if (c === '(') depth++;
    else if (c === ')') {
      if (depth === 0) return j;
      depth--;
    }
  }
  return -1;
}

/** The first character of the literal at the start of `text` (`"…"`), or null (not a literal, an escape other than \" or \\, or empty). */
function firstLiteralChar(text: string): Set<string> | null {
  if (text[0] !== '"') return null;
  if (text[1] === '\\') return text[2] === '"' || text[2] === '\\' ? new Set([text[2]]) : null;
  if (text[1] === undefined || text[1] === '"') return null;
  return new Set([String.fromCodePoint(text.codePointAt(1)!)]);
}

/** [body, its lookahead's text or null]: a printed lookahead is the trailing ` (=…)` group. */
function splitLookahead(text: string): [string, string | null] {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"' || c === '[') i = skipQuoted(text, i);
    else if (c === '(') {
      if (depth === 0 && text[i + 1] === '=' && i > 0) return [text.slice(0, i).trimEnd(), text.slice(i)];
      depth++;
    } else if (c === ')') depth--;
  }
  return [text, null];
}

/** The index of the closing `"` or `]` of the literal or class opening at `i`. */
function skipQuoted(text: string, i: number): number {
  const close = text[i] === '"' ? '"' : ']';
  for (let j = i + 1; j < text.length; j++) {
    if (text[j] === '\\') j++;
    else if (text[j] === close) return j;
  }
  return text.length;
}

/** Every rule name in `body`, with what follows it and where it ends. */
function* references(body: string, from: string): Generator<Ref & { name: string; end: number }> {
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c === '"' || c === '[') {
      i = skipQuoted(body, i);
      continue;
    }
    const m = /^[A-Za-z_][\w]*/.exec(body.slice(i));
    if (!m || (i > 0 && /[\w]/.test(body[i - 1]!))) continue;
    const rest = body.slice(i + m[0].length);
    yield { name: m[0], from, end: i + m[0].length, tail: /^\)*$/.test(rest.replace(/ /g, '')), quoted: rest.startsWith(` ${QUOTE_LITERAL}`) };
    i += m[0].length - 1;
  }
}

/**
 * Whether a printed class could match `"` itself (then a quote would not end the chain): a negated class
 * must name `\"`; a positive one must not hold `"`, a range over it, or an escape other than a few plain ones.
 */
function classAllowsQuote(cls: string): boolean {
  if (cls.startsWith('[^')) return !cls.includes('\\"');
  const chars: number[] = [];
  for (let i = 1; i < cls.length - 1; i++) {
    let c = cls[i]!;
    if (c === '\\') {
      const e = cls[++i]!;
      const plain: Record<string, string> = { '\\': '\\', ']': ']', '-': '-', '^': '^', '[': '[', '/': '/', n: '\n', r: '\r', t: '\t', '.': '.' };
      if (!(e in plain)) return true;
      c = plain[e]!;
    } else if (c === '-' && chars.length > 0 && i + 1 < cls.length - 1) {
      // a range from the previous character to the next
      const hi = cls[++i]!;
      if (hi === '\\') return true; // an escaped end: not read here
      if (chars.pop()! <= 0x22 && hi.codePointAt(0)! >= 0x22) return true;
      continue;
    }
    if (c === '"') return true;
    chars.push(c.codePointAt(0)!);
  }
  return false;
}
