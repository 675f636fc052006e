// src/cli/run-dir.ts: which leftover run directories are stale (pid file, process gone) and removed, and
// which are left alone. The whole cycle through a SIGKILLed `serve`: serve-hygiene.e2e.test.ts.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRunDir, PID_FILE, removeStaleRunDirs, RUN_DIR_PREFIX } from '../../src/cli/run-dir.js';
import { removeTempDirs, tempDir } from './process-helpers.js';

afterEach(() => removeTempDirs());

/** The pid of a process that has exited (and been reaped). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

function runDir(tmp: string, name: string, pid?: number): string {
  const dir = path.join(tmp, name);
  mkdirSync(dir);
  if (pid !== undefined) writeFileSync(path.join(dir, PID_FILE), `${pid}\n`);
  writeFileSync(path.join(dir, 'engine.sock'), '');
  return dir;
}

describe('serve run directories', () => {
  it('removes only directories whose pid file names a process that is gone', async () => {
    const tmp = tempDir('ernie-rundir-');
    const dead = await deadPid();
    const stale = runDir(tmp, `${RUN_DIR_PREFIX}stale`, dead);
    const alive = runDir(tmp, `${RUN_DIR_PREFIX}alive`, process.pid);
    const parentAlive = runDir(tmp, `${RUN_DIR_PREFIX}parent`, process.ppid);
    const noPid = runDir(tmp, `${RUN_DIR_PREFIX}nopid`);
    const garbled = runDir(tmp, `${RUN_DIR_PREFIX}garbled`);
    writeFileSync(path.join(garbled, PID_FILE), 'not a pid');
    const other = runDir(tmp, 'other-app-x', dead);
    // A symlink with our prefix to a directory that looks stale: followed by nobody, left alone.
    const target = runDir(tmp, 'target', dead);
    symlinkSync(target, path.join(tmp, `${RUN_DIR_PREFIX}link`));

    expect(await removeStaleRunDirs(tmp)).toEqual([stale]);
    expect(existsSync(stale)).toBe(false);
    for (const d of [alive, parentAlive, noPid, garbled, other, target]) expect(existsSync(d), d).toBe(true);
  });

  it('createRunDir writes its pid file, cleans stale ones first and removes itself', async () => {
    const tmp = tempDir('ernie-rundir-');
    const stale = runDir(tmp, `${RUN_DIR_PREFIX}old`, await deadPid());
    const dir = await createRunDir(tmp);
    expect(dir.removedStale).toEqual([stale]);
    expect(path.dirname(dir.path)).toBe(tmp);
    expect(existsSync(path.join(dir.path, PID_FILE))).toBe(true);
    // While this process lives its directory is not stale for anyone.
    expect(await removeStaleRunDirs(tmp)).toEqual([]);
    await dir.remove();
    expect(existsSync(dir.path)).toBe(false);
    await dir.remove(); // idempotent
  });
});
