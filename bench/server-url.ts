// Starting `ernie-edge serve` from a benchmark: the server logs its listening URL as JSON on stdout
// ("url":"http://…"); the benchmark waits for that line, then for /ready.
import type { ChildProcess } from 'node:child_process';

/** The URL the server logs once listening; rejects if the process exits first. */
export function listeningUrl(child: ChildProcess): Promise<string> {
  let log = '';
  return new Promise<string>((resolve, reject) => {
    child.once('exit', (c) => reject(new Error(`server exited ${c}`)));
    child.stdout!.on('data', (d: Buffer) => {
      log += d.toString();
      const m = /"url":"(http:\/\/[^"]+)"/.exec(log);
      if (m) resolve(m[1]!);
    });
  });
}

/** Polls `${base}/ready` every `pollMs` until it answers 200 (at most `tries` polls). */
export async function untilReady(base: string, pollMs: number, tries = Infinity): Promise<void> {
  for (let i = 0; ; i++) {
    if ((await fetch(`${base}/ready`).then((r) => r.status, () => 0)) === 200) return;
    if (i >= tries) throw new Error('server never became ready');
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
