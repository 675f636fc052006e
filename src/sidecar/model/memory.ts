// The memory this process may still take, read before the weights load so that the engine plan can
// refuse at start-up what would otherwise end in an OOM kill under load (issue #26). The smaller of:
//   MemAvailable (/proc/meminfo; os.freemem() where there is no /proc)
//   the cgroup v2 limit left: memory.max - memory.current of this process's cgroup (a container's
//   memory limit: a pod's `resources.limits.memory`), when one is set.
import { readFileSync } from 'node:fs';
import os from 'node:os';

export interface AvailableMemory {
  bytes: number;
  /** What bounded it, for messages: "MemAvailable" or "cgroup memory.max 2.0 GiB, 0.3 GiB in use". */
  source: string;
}

type Read = (path: string) => string | null;
const readOrNull: Read = (p) => {
  try {
    return readFileSync(p, 'utf8');
  } catch {
    return null;
  }
};

export const gib = (b: number) => `${(b / 2 ** 30).toFixed(1)} GiB`;

export function availableMemory(read: Read = readOrNull): AvailableMemory {
  const meminfo = read('/proc/meminfo');
  const kb = meminfo ? /^MemAvailable:\s+(\d+) kB/m.exec(meminfo)?.[1] : undefined;
  let best: AvailableMemory = kb ? { bytes: Number(kb) * 1024, source: 'MemAvailable' } : { bytes: os.freemem(), source: 'free memory' };
  // cgroup v2: "0::/some/path" in /proc/self/cgroup names the group under /sys/fs/cgroup.
  const rel = /^0::(.*)$/m.exec(read('/proc/self/cgroup') ?? '')?.[1]?.trim();
  if (rel !== undefined) {
    const dir = `/sys/fs/cgroup${rel === '/' ? '' : rel}`;
    const max = read(`${dir}/memory.max`)?.trim();
    const current = Number(read(`${dir}/memory.current`)?.trim() ?? NaN);
    if (max && max !== 'max' && Number.isFinite(current)) {
      const room = Math.max(0, Number(max) - current);
      if (room < best.bytes) best = { bytes: room, source: `cgroup memory.max ${gib(Number(max))}, ${gib(current)} in use` };
    }
  }
  return best;
}
