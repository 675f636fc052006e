// How many CPUs this process may use, and from it the default --api-server-count.
// Cores: os.availableParallelism() (the affinity mask), capped by the cgroup v2 CPU quota
// (/sys/fs/cgroup/cpu.max: "QUOTA PERIOD" or "max PERIOD"), rounded up: a container limited to 1.5
// CPUs has 2 runnable cores' worth of threads, not 1 and not the host's 64.

import { readFileSync } from 'node:fs';
import os from 'node:os';

/** The CPUs a `cpu.max` line allows (quota / period), or null when unlimited or unreadable. */
export function cgroupCpuLimit(cpuMax: string | null): number | null {
  const m = cpuMax ? /^\s*(\d+|max)\s+(\d+)\s*$/.exec(cpuMax) : null;
  if (!m || m[1] === 'max' || Number(m[2]) === 0) return null;
  return Number(m[1]) / Number(m[2]);
}

/** Cores available to this process: min(availableParallelism, ceil(cgroup quota)), at least 1. */
export function availableCores(parallelism: number = os.availableParallelism(), cpuMax: string | null = readCpuMax()): number {
  const limit = cgroupCpuLimit(cpuMax);
  return Math.max(1, Math.min(parallelism, limit === null ? Infinity : Math.ceil(limit)));
}

function readCpuMax(): string | null {
  try {
    return readFileSync('/sys/fs/cgroup/cpu.max', 'utf8');
  } catch {
    return null; // cgroup v1 or not Linux: no quota read, the affinity mask alone counts
  }
}

/** Most gateway processes chosen by default (more than this, ask for them with the flag). */
export const MAX_DEFAULT_API_SERVERS = 8;
/** Cores per default gateway process: the rest stay with the sidecar (its Node thread, the engine's threads) and the OS. */
export const CORES_PER_API_SERVER = 4;

/** --api-server-count's default: one gateway per 4 available cores, at least 1, at most 8. */
export function defaultApiServerCount(cores: number = availableCores()): number {
  return Math.min(MAX_DEFAULT_API_SERVERS, Math.max(1, Math.floor(cores / CORES_PER_API_SERVER)));
}
