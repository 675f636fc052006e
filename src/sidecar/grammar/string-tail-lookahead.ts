// Lookahead assertions on the tails of length-bounded strings, so their masks come from xgrammar's
// compile-time cache instead of a walk over the vocabulary on every step.
//
// A JSON string with minLength/maxLength reaches xgrammar as a pattern (./schema-strings.ts), which it
// expands into a chain of rules, one per optional character:
//     s   ::= (("\"" [^\"\\\0-\x1f] [^\"\\\0-\x1f] s_1 "\""))
//     s_1 ::= ("" | ([^\"\\\0-\x1f] s_2))   …   s_10 ::= ("" | ([^\"\\\0-\x1f]))
// xgrammar sorts a rule's tokens at compile time into accepted, rejected, and "uncertain": those that
// reach the end of the rule, whose fate depends on what follows it in the stack at run time. Near the
// end of a chain every token longer than the characters left reaches it, so most of a 100k-piece
// vocabulary is uncertain there and each mask walked them all (tens of ms per row). A lookahead
// assertion says what must follow the rule; with (= "\"") a token that runs past the chain's end
// without a closing quote is rejected at compile time.
//
// The assertion is only added where it is already true: a rule every reference to which is followed
// by the literal "\"", or is the tail of a rule that qualifies (greatest fixpoint, so a self-recursive
// tail `s_1 ::= ("" | ([^…] s_1))` qualifies through its outer reference). The language is unchanged,
// and so are the masks (test/sidecar/grammar/string-tail-lookahead.test.ts walks both grammars in
// lockstep and compares every mask).
//
// Printed rule: `name ::= body` one per line, optionally followed by ` (=(…))` (a lookahead).

/** The body shape of a chain rule: "" or one character of a class, then optionally the next rule. */
const CHAIN_BODY = /^\(""\s\|\s\((\[(?:\\.|[^\]\\])*\])(?: ([A-Za-z_][\w]*))?\)\)$/;
const QUOTE_LITERAL = '"\\""';
const LOOKAHEAD = ' (=("\\""))';

interface Ref {
  from: string; // the referencing rule
  tail: boolean; // nothing but closing parentheses follows it in its rule's body
  quoted: boolean; // the literal "\"" follows it
}

/** `ebnf` with the lookahead on every string-tail chain rule. */
export function stringTailLookaheads(ebnf: string): string {
  const lines = ebnf.split('\n');
  const rules = new Map<string, { line: number; body: string; lookahead: boolean }>();
  lines.forEach((text, line) => {
    const m = /^([A-Za-z_][\w]*) ::= (.*)$/.exec(text);
    if (!m) return;
    const [body, lookahead] = splitLookahead(m[2]!);
    rules.set(m[1]!, { line, body, lookahead });
  });
  const candidates = new Set<string>();
  for (const [name, r] of rules) if (!r.lookahead && name !== 'root' && CHAIN_BODY.test(r.body) && !classAllowsQuote(CHAIN_BODY.exec(r.body)![1]!)) candidates.add(name);
  if (candidates.size === 0) return ebnf;

  const refs = new Map<string, Ref[]>();
  for (const [from, r] of rules) {
    for (const ref of references(r.body, from)) {
      if (!candidates.has(ref.name)) continue;
      const list = refs.get(ref.name) ?? [];
      list.push(ref);
      refs.set(ref.name, list);
    }
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
  for (const name of candidates) {
    const r = rules.get(name)!;
    lines[r.line] = `${lines[r.line]}${LOOKAHEAD}`;
  }
  return lines.join('\n');
}

/** [body, whether a lookahead follows it]: a printed lookahead is the trailing ` (=…)` group. */
function splitLookahead(text: string): [string, boolean] {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"' || c === '[') i = skipQuoted(text, i);
    else if (c === '(') {
      if (depth === 0 && text[i + 1] === '=' && i > 0) return [text.slice(0, i).trimEnd(), true];
      depth++;
    } else if (c === ')') depth--;
  }
  return [text, false];
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

/** Every rule name in `body`, with what follows it. */
function* references(body: string, from: string): Generator<Ref & { name: string }> {
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c === '"' || c === '[') {
      i = skipQuoted(body, i);
      continue;
    }
    const m = /^[A-Za-z_][\w]*/.exec(body.slice(i));
    if (!m || (i > 0 && /[\w]/.test(body[i - 1]!))) continue;
    const rest = body.slice(i + m[0].length);
    yield { name: m[0], from, tail: /^\)*$/.test(rest.replace(/ /g, '')), quoted: rest.startsWith(` ${QUOTE_LITERAL}`) };
    i += m[0].length - 1;
  }
}

/** Whether a printed class could match `"` itself (then a quote would not end the chain). */
function classAllowsQuote(cls: string): boolean {
  return !(cls.startsWith('[^') && cls.includes('\\"'));
}
