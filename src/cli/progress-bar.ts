// A one-line progress bar on stderr for long start-up work (generating or loading weights). On a
// terminal it redraws in place; otherwise it prints a line per 25% so CI logs show progress.

export interface ProgressBar {
  update(label: string, done: number, total: number): void;
  end(): void;
}

export function progressBar(stream: NodeJS.WriteStream = process.stderr): ProgressBar {
  const tty = stream.isTTY === true;
  let lastQuarter = -1;
  let drawn = false;
  return {
    update(label, done, total) {
      const frac = total > 0 ? Math.min(1, done / total) : 0;
      const mb = (x: number) => (x / 2 ** 20).toFixed(0);
      const text = `${label} ${(frac * 100).toFixed(0).padStart(3)}% (${mb(done)}/${mb(total)} MiB)`;
      if (tty) {
        const width = 30;
        const fill = Math.round(frac * width);
        stream.write(`\r[${'#'.repeat(fill)}${' '.repeat(width - fill)}] ${text}`);
        drawn = true;
      } else if (Math.floor(frac * 4) > lastQuarter) {
        lastQuarter = Math.floor(frac * 4);
        stream.write(`${text}\n`);
      }
    },
    end() {
      if (drawn) stream.write('\n');
      drawn = false;
    },
  };
}
