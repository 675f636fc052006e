// `perf record` for the duration of a measurement, shared by bench:serve --perf (./cycles.ts) and
// --sched (./sched.ts): starts it, waits until it has written its file (perf needs a moment before it
// records anything), and on stop() ends it with SIGINT (perf then finishes the file) and returns
// `perf script`'s text for the given fields.
import { execFile, spawn } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface PerfRecording {
  /** Stops the recording; `perf script -F fields` of what it wrote. */
  stop(): Promise<string>;
}

export async function perfRecord(file: string, recordArgs: string[], scriptFields: string): Promise<PerfRecording> {
  const perf = spawn('perf', ['record', '-q', ...recordArgs, '-k', 'CLOCK_MONOTONIC', '-o', file], { stdio: ['ignore', 'ignore', 'inherit'] });
  const exited = new Promise((resolve) => perf.once('exit', resolve));
  for (let i = 0; ; i++) {
    if ((await stat(file).then((s) => s.size, () => 0)) > 0) break;
    if (i > 500 || perf.exitCode !== null) throw new Error('perf record did not start (is perf installed and allowed?)');
    await new Promise((r) => setTimeout(r, 10));
  }
  return {
    stop: async () => {
      perf.kill('SIGINT');
      await exited;
      const { stdout } = await run('perf', ['script', '-i', file, '--ns', '-F', scriptFields], { maxBuffer: 2 ** 29 });
      return stdout;
    },
  };
}
