// The private runtime directory of `serve`: its sidecar's Unix socket lives there. Created 0700 under the
// OS temp directory with a pid file; removed on every exit of this process that Node sees (a normal
// return, process.exit from a second signal, an uncaught exception); a directory left by a `serve` that
// could not remove it (SIGKILL, an OOM kill) is removed by the next `serve` at start.
//
// Stale, safely: a directory named RUN_DIR_PREFIX* directly in the temp directory, not a symlink, owned by
// this user, holding a PID_FILE whose process no longer exists (kill(pid, 0) fails with ESRCH). Anything
// else is left alone: another user's directory, one being created (no pid file yet), one whose pid is
// alive, or alive again under another program (a reused pid keeps a dead directory, never the reverse).

import { rmSync } from 'node:fs';
import { lstat, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export const RUN_DIR_PREFIX = 'ernie-edge-';
export const PID_FILE = 'serve.pid';

export interface RunDir {
  readonly path: string;
  /** Stale directories of earlier runs removed while creating this one. */
  readonly removedStale: string[];
  /** Removes the directory (also done on process exit). Idempotent. */
  remove(): Promise<void>;
}

function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH'; // EPERM: alive, another user's
  }
}

/** Removes the stale run directories under `tmp` (see the file comment); returns their paths. */
export async function removeStaleRunDirs(tmp: string): Promise<string[]> {
  const removed: string[] = [];
  const uid = process.getuid?.();
  const names = await readdir(tmp).catch(() => [] as string[]);
  for (const name of names) {
    if (!name.startsWith(RUN_DIR_PREFIX)) continue;
    const dir = path.join(tmp, name);
    const st = await lstat(dir).catch(() => null);
    if (!st?.isDirectory() || (uid !== undefined && st.uid !== uid)) continue;
    const pid = Number((await readFile(path.join(dir, PID_FILE), 'utf8').catch(() => '')).trim());
    if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid || !processGone(pid)) continue;
    await rm(dir, { recursive: true, force: true });
    removed.push(dir);
  }
  return removed;
}

export async function createRunDir(tmp: string = os.tmpdir()): Promise<RunDir> {
  const removedStale = await removeStaleRunDirs(tmp);
  const dir = await mkdtemp(path.join(tmp, RUN_DIR_PREFIX));
  await writeFile(path.join(dir, PID_FILE), `${process.pid}\n`, { mode: 0o600 });
  let removed = false;
  // 'exit' handlers must be synchronous.
  const onExit = () => {
    if (!removed) rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', onExit);
  return {
    path: dir,
    removedStale,
    async remove() {
      if (removed) return;
      removed = true;
      process.off('exit', onExit);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
