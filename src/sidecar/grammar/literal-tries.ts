// Rewrites every rule of an EBNF grammar (as xgrammar's Grammar.toString() prints it) whose language is
// a finite set of strings into the trie of those strings, with no two alternatives starting alike.
// Why: xgrammar 0.1.27's matcher (its Earley parser; the grammar prints correctly) goes wrong on
// alternatives whose literals share a prefix: root ::= "0.25" | "0.5" accepts 0.225 and 0.2225,
// "abcd" | "abd" accepts abccd, and the same through rule references (anyOf of consts). Enums,
// consts, choices and booleans are such sets. Their tries (root ::= "0." ("25" | "5")) are the same
// languages, and the matcher handles them (test/sidecar/grammar/literal-tries.test.ts compares both
// with brute force). Rules with anything else (character classes, repetition, lookahead) are kept
// as printed; so are rules of one string.
//
// Printed rule: `name ::= body`, one per line; a body here is literals "…" (with \", \\, \n, \t, \r,
// \xHH, \uHHHH, \UHHHHHHHH escapes), rule names, parentheses and `|`.

/** A rule with more strings than this is kept as it is (enums and choices are bounded well below). */
const MAX_STRINGS = 4096;

type Token = { kind: 'str'; value: string } | { kind: 'name'; value: string } | { kind: '(' | ')' | '|' };

const SIMPLE_ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', n: '\n', r: '\r', t: '\t', b: '\b', f: '\f', v: '\v', '0': '\0', "'": "'" };

/** The body's tokens, or null if it has anything but literals, names, parentheses and `|`. */
function tokenize(body: string): Token[] | null {
  const out: Token[] = [];
  let i = 0;
  while (i < body.length) {
    const c = body[i]!;
    if (c === ' ') {
      i++;
    } else if (c === '(' || c === ')' || c === '|') {
      if (c === '(' && body[i + 1] === '=') return null; // a lookahead
      out.push({ kind: c });
      i++;
    } else if (c === '"') {
      let value = '';
      i++;
      while (i < body.length && body[i] !== '"') {
        if (body[i] !== '\\') {
          const cp = body.codePointAt(i)!;
          value += String.fromCodePoint(cp);
          i += cp > 0xffff ? 2 : 1;
          continue;
        }
        const e = body[i + 1] ?? '';
        const hexLen = e === 'x' ? 2 : e === 'u' ? 4 : e === 'U' ? 8 : 0;
        if (hexLen > 0) {
          const hex = body.slice(i + 2, i + 2 + hexLen);
          if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== hexLen) return null;
          const cp = parseInt(hex, 16);
          if (cp > 0x10ffff) return null;
          value += String.fromCodePoint(cp);
          i += 2 + hexLen;
        } else if (e in SIMPLE_ESCAPES) {
          value += SIMPLE_ESCAPES[e]!;
          i += 2;
        } else {
          return null;
        }
      }
      if (i >= body.length) return null;
      i++;
      out.push({ kind: 'str', value });
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(body.slice(i))!;
      out.push({ kind: 'name', value: m[0] });
      i += m[0].length;
    } else {
      return null;
    }
  }
  return out;
}

type Expr = { kind: 'alt'; items: Expr[] } | { kind: 'seq'; items: Expr[] } | { kind: 'str'; value: string } | { kind: 'name'; value: string };

/** alt := seq ('|' seq)*; seq := item*; item := str | name | '(' alt ')'. Null on a parse error. */
function parse(tokens: Token[]): Expr | null {
  let i = 0;
  const alt = (): Expr | null => {
    const items: Expr[] = [];
    for (;;) {
      const s = seq();
      if (!s) return null;
      items.push(s);
      if (tokens[i]?.kind !== '|') break;
      i++;
    }
    return items.length === 1 ? items[0]! : { kind: 'alt', items };
  };
  const seq = (): Expr | null => {
    const items: Expr[] = [];
    for (let t = tokens[i]; t && t.kind !== '|' && t.kind !== ')'; t = tokens[i]) {
      i++;
      if (t.kind === 'str' || t.kind === 'name') {
        items.push(t);
      } else {
        const inner = alt();
        if (!inner || tokens[i]?.kind !== ')') return null;
        i++;
        items.push(inner);
      }
    }
    return { kind: 'seq', items };
  };
  const e = alt();
  return e && i === tokens.length ? e : null;
}

const hasAlternation = (e: Expr): boolean => e.kind === 'alt' || ((e.kind === 'seq') && e.items.some(hasAlternation));

class Languages {
  private readonly memo = new Map<string, Set<string> | null>();
  constructor(private readonly rules: Map<string, Expr | null>) {}

  /** The finite set of strings a rule derives, or null (not literal-only, recursive, or too many). */
  of(name: string): Set<string> | null {
    if (this.memo.has(name)) return this.memo.get(name)!;
    this.memo.set(name, null); // a cycle reads null
    const e = this.rules.get(name);
    const set = e ? this.expr(e) : null;
    this.memo.set(name, set);
    return set;
  }

  private expr(e: Expr): Set<string> | null {
    switch (e.kind) {
      case 'str':
        return new Set([e.value]);
      case 'name':
        return this.of(e.value);
      case 'alt': {
        const out = new Set<string>();
        for (const x of e.items) {
          const s = this.expr(x);
          if (!s) return null;
          for (const v of s) out.add(v);
          if (out.size > MAX_STRINGS) return null;
        }
        return out;
      }
      case 'seq': {
        let out = new Set<string>(['']);
        for (const x of e.items) {
          const s = this.expr(x);
          if (!s || out.size * s.size > MAX_STRINGS) return null;
          const next = new Set<string>();
          for (const a of out) for (const b of s) next.add(a + b);
          out = next;
        }
        return out;
      }
    }
  }
}

interface Node {
  end: boolean;
  kids: Map<string, Node>;
}

/** The strings as one EBNF expression in which no two alternatives start with the same character. */
export function trieExpression(strings: Iterable<string>): string {
  const root: Node = { end: false, kids: new Map() };
  for (const s of strings) {
    let n = root;
    for (const ch of s) {
      let k = n.kids.get(ch);
      if (!k) n.kids.set(ch, (k = { end: false, kids: new Map() }));
      n = k;
    }
    n.end = true;
  }
  const expr = (n: Node): string => {
    const alts: string[] = n.end ? ['""'] : [];
    for (const [ch, kid] of n.kids) {
      let run = ch;
      let m = kid;
      while (!m.end && m.kids.size === 1) {
        const [[c2, k2]] = m.kids;
        run += c2;
        m = k2;
      }
      alts.push(m.kids.size === 0 ? JSON.stringify(run) : `${JSON.stringify(run)} ${expr(m)}`);
    }
    return alts.length === 1 ? alts[0]! : `(${alts.join(' | ')})`;
  };
  return expr(root);
}

/** The grammar with each finite-language rule that has an alternation written as its trie. */
export function literalTries(ebnf: string): string {
  const lines = ebnf.split('\n');
  const rules = new Map<string, Expr | null>();
  const heads: ({ name: string; index: number } | null)[] = lines.map((line, index) => {
    const m = /^([A-Za-z_][A-Za-z0-9_]*) ::= (.*)$/.exec(line);
    if (!m) return null;
    const tokens = tokenize(m[2]!);
    rules.set(m[1]!, tokens ? parse(tokens) : null);
    return { name: m[1]!, index };
  });
  const languages = new Languages(rules);
  for (const h of heads) {
    if (!h) continue;
    const e = rules.get(h.name);
    if (!e || !hasAlternation(e)) continue;
    const set = languages.of(h.name);
    if (set && set.size > 1) lines[h.index] = `${h.name} ::= ${trieExpression(set)}`;
  }
  return lines.join('\n');
}
