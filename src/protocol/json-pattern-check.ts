// Whether a JSON Schema `pattern` can make xgrammar emit a string that is not JSON. xgrammar 0.1.27
// writes what the pattern matches between the quotes as is, unescaped: a match containing '"', '\' or a
// control character (U+0000..U+001F) breaks the JSON. So a pattern may only match characters that JSON
// writes unescaped. This is a conservative syntactic check (a refusal names the construct and the fix):
// '.', \s \S \D \W \p \P, such characters written literally or escaped, a class whose ranges include
// one, and a negated class that does not itself exclude all of them ([^"\\\x00-\x1f…] is fine).

const UNSAFE_SHORTHANDS = new Set(['s', 'S', 'D', 'W', 'p', 'P']);
const CONTROL_ESCAPES: Record<string, number> = { n: 0x0a, r: 0x0d, t: 0x09, f: 0x0c, v: 0x0b, '0': 0x00 };

/** The code points JSON must escape. */
const isBad = (cp: number) => cp < 0x20 || cp === 0x22 || cp === 0x5c;

interface Atom {
  /** The code point, or null for a shorthand class (\d, \w, \s, …). */
  cp: number | null;
  text: string;
  shorthand?: string;
  next: number;
}

/** Reads one atom (a literal or an escape) at `i`. */
function atom(p: string, i: number): Atom {
  if (p[i] !== '\\') {
    const text = String.fromCodePoint(p.codePointAt(i)!);
    return { cp: text.codePointAt(0)!, text, next: i + text.length };
  }
  const e = p[i + 1] ?? '';
  const hex = (len: number) => {
    const h = p.slice(i + 2, i + 2 + len);
    return h.length === len && /^[0-9a-fA-F]+$/.test(h) ? parseInt(h, 16) : NaN;
  };
  if (e === 'x' && !Number.isNaN(hex(2))) return { cp: hex(2), text: p.slice(i, i + 4), next: i + 4 };
  if (e === 'u' && !Number.isNaN(hex(4))) return { cp: hex(4), text: p.slice(i, i + 6), next: i + 6 };
  if (e in CONTROL_ESCAPES) return { cp: CONTROL_ESCAPES[e]!, text: `\\${e}`, next: i + 2 };
  if (/[dDwWsSpP]/.test(e)) return { cp: null, text: `\\${e}`, shorthand: e, next: i + 2 };
  const escaped = String.fromCodePoint(p.codePointAt(i + 1) ?? 0x5c);
  return { cp: escaped.codePointAt(0)!, text: `\\${escaped}`, next: i + 1 + escaped.length };
}

/** A class body from just after '[' (and '^'): its ranges, its shorthands, and where it ends (after ']'). */
function classBody(p: string, start: number): { ranges: [number, number][]; shorthands: string[]; end: number } {
  const ranges: [number, number][] = [];
  const shorthands: string[] = [];
  let i = start;
  let first = true; // a ']' first in the class is a literal
  while (i < p.length && (p[i] !== ']' || first)) {
    first = false;
    const a = atom(p, i);
    i = a.next;
    if (a.cp === null) {
      shorthands.push(a.shorthand!);
    } else if (p[i] === '-' && p[i + 1] !== undefined && p[i + 1] !== ']') {
      const b = atom(p, i + 1);
      i = b.next;
      if (b.cp === null) {
        shorthands.push(b.shorthand!);
        ranges.push([a.cp, a.cp], [0x2d, 0x2d]);
      } else {
        ranges.push([a.cp, b.cp]);
      }
    } else {
      ranges.push([a.cp, a.cp]);
    }
  }
  return { ranges, shorthands, end: i + 1 };
}

const covers = (ranges: [number, number][], cp: number) => ranges.some(([lo, hi]) => lo <= cp && cp <= hi);
const includesBad = ([lo, hi]: [number, number]) => lo < 0x20 || (lo <= 0x22 && hi >= 0x22) || (lo <= 0x5c && hi >= 0x5c);

/** The first construct of `pattern` that can match a character JSON must escape, or null if none can. */
export function jsonUnsafeConstruct(pattern: string): string | null {
  let i = 0;
  while (i < pattern.length) {
    if (pattern[i] === '[') {
      const negated = pattern[i + 1] === '^';
      const body = classBody(pattern, i + (negated ? 2 : 1));
      const text = pattern.slice(i, body.end);
      if (negated) {
        // Safe only if the class itself excludes every character JSON must escape.
        for (let cp = 0; cp <= 0x5c; cp++) if (isBad(cp) && !covers(body.ranges, cp)) return text;
      } else if (body.shorthands.some((s) => UNSAFE_SHORTHANDS.has(s)) || body.ranges.some(includesBad)) {
        return text;
      }
      i = body.end;
      continue;
    }
    if (pattern[i] === '.') return '.';
    const a = atom(pattern, i);
    if (a.cp === null ? UNSAFE_SHORTHANDS.has(a.shorthand!) : isBad(a.cp)) return a.text;
    i = a.next;
  }
  return null;
}
