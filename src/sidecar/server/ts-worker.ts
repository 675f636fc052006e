// Starting a worker thread on a module of this source tree, compiled or not: the entry is the module's
// .js sibling when running from dist/, else its .ts source through tsx's loader, registered in the worker
// itself (loader hooks are per thread). A bulk worker lowers its own OS priority first
// (./thread-priority.ts), so loading and compiling its modules already runs below the serving threads.

import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

const BOOTSTRAP = `(async () => {
  const { workerData } = require('node:worker_threads');
  if (workerData.tsx) (await import(workerData.tsx)).register();
  if (workerData.bulk) (await import(workerData.priority)).becomeBulkThread(workerData.bulk);
  await import(workerData.entry);
})().catch((e) => { setImmediate(() => { throw e; }); });`;

let tsxApi: string | null | undefined;

/**
 * A worker running `entry` (a URL ending in .ts or .js, next to the caller: sibling()), given `data` as its
 * workerData (plus `entry`, `tsx`, `bulk`, `priority`). With `bulk`, the thread is a bulk thread named so
 * from its first module on.
 */
export function startTsWorker(entry: URL, data: object, bulk?: string): Worker {
  const fromSource = entry.pathname.endsWith('.ts');
  tsxApi ??= fromSource ? new URL('./dist/esm/api/index.mjs', pathToFileURL(createRequire(import.meta.url).resolve('tsx/package.json'))).href : null;
  const priority = sibling(import.meta.url, 'thread-priority').href;
  return new Worker(BOOTSTRAP, { eval: true, workerData: { ...data, entry: entry.href, tsx: fromSource ? tsxApi : null, bulk, priority } });
}

/** The sibling module `name` (without extension) of the module at `here`, with that module's own extension. */
export function sibling(here: string, name: string): URL {
  return new URL(`./${name}.${here.endsWith('.ts') ? 'ts' : 'js'}`, here);
}

/**
 * Recycling a bulk worker once it has sat idle: runs `act` when `idle()` has held for `delayMs` (at once
 * for 0), checked again when the time is up; a later call restarts the wait. `holder.idle` keeps the
 * timer, which never keeps the process alive.
 */
export function whenIdleFor(holder: { idle?: ReturnType<typeof setTimeout> }, delayMs: number, idle: () => boolean, act: () => void): void {
  if (!idle()) return;
  const run = () => {
    if (idle()) act();
  };
  if (delayMs === 0) return run();
  clearTimeout(holder.idle);
  holder.idle = setTimeout(run, delayMs);
  holder.idle.unref();
}
