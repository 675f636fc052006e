// The progress line of a level, on a terminal only (redrawn in place at most every 100 ms); on a pipe
// or file nothing is written, so logs and captured output stay clean.

export interface Progress {
  done(ok: boolean, outputTokens: number): void;
  end(): void;
}

export function levelProgress(label: string, total: number, stream: NodeJS.WritableStream & { isTTY?: boolean }, enabled: boolean): Progress {
  if (!enabled || stream.isTTY !== true) return { done: () => {}, end: () => {} };
  const t0 = performance.now();
  let n = 0;
  let failed = 0;
  let tokens = 0;
  let drawnAt = -Infinity;
  const draw = () => {
    const width = 30;
    const fill = Math.round((n / total) * width);
    const s = (performance.now() - t0) / 1000;
    const rate = s > 0 ? (tokens / s).toFixed(0) : '0';
    stream.write(`\r${label} [${'#'.repeat(fill)}${' '.repeat(width - fill)}] ${n}/${total} req  ${rate} tok/s${failed ? `  ${failed} failed` : ''}\x1b[K`);
    drawnAt = performance.now();
  };
  draw();
  return {
    done(ok, outputTokens) {
      n++;
      if (ok) tokens += outputTokens;
      else failed++;
      if (n === total || performance.now() - drawnAt >= 100) draw();
    },
    end() {
      stream.write('\n');
    },
  };
}
