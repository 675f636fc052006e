// Where a JSON object written a character at a time ends: the nesting of braces and brackets outside
// strings (with escapes). Structure only; the grammar the engine decoded with guarantees the rest, and
// a call's arguments are parsed again where they are checked.

export type ScanResult = 'skip' | 'more' | 'done' | 'invalid';

export class JsonValueScanner {
  private depth = 0;
  private inString = false;
  private escape = false;

  /** 'skip': whitespace before the value; 'more': part of it; 'done': its last character. */
  push(ch: string): ScanResult {
    if (this.depth === 0) {
      if (/\s/.test(ch)) return 'skip';
      if (ch !== '{') return 'invalid'; // arguments are an object
      this.depth = 1;
      return 'more';
    }
    if (this.inString) {
      if (this.escape) this.escape = false;
      else if (ch === '\\') this.escape = true;
      else if (ch === '"') this.inString = false;
      return 'more';
    }
    if (ch === '"') this.inString = true;
    else if (ch === '{' || ch === '[') this.depth++;
    else if (ch === '}' || ch === ']') {
      this.depth--;
      if (this.depth === 0) return ch === '}' ? 'done' : 'invalid';
    }
    return 'more';
  }
}
