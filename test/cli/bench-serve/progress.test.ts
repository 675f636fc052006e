// The progress line is drawn on a terminal only, redrawn in place, and ends with its final count.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { levelProgress } from '../../../src/cli/bench-serve/progress.js';

function stream(isTTY: boolean): { s: Writable & { isTTY: boolean }; text: () => string } {
  let text = '';
  const s = Object.assign(new Writable({ write: (c: Buffer, _e, cb) => ((text += c.toString()), cb()) }), { isTTY });
  return { s, text: () => text };
}

describe('bench serve progress', () => {
  it('draws on a TTY, counting requests, tokens and failures', () => {
    const { s, text } = stream(true);
    const p = levelProgress('c=8', 3, s, true);
    p.done(true, 10);
    p.done(false, 0);
    p.done(true, 5);
    p.end();
    expect(text()).toMatch(/\rc=8 \[#+\] 3\/3 req {2}\d+ tok\/s {2}1 failed\x1b\[K\n$/);
    expect(text().startsWith('\rc=8 [')).toBe(true);
  });

  it('writes nothing on a pipe or when disabled', () => {
    for (const [tty, enabled] of [[false, true], [true, false]] as const) {
      const { s, text } = stream(tty);
      const p = levelProgress('c=1', 1, s, enabled);
      p.done(true, 1);
      p.end();
      expect(text()).toBe('');
    }
  });
});
