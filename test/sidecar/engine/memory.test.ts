// What the engine plan is given as the memory this process can take (src/sidecar/model/memory.ts).
import { describe, expect, it } from 'vitest';
import { availableMemory } from '../../../src/sidecar/model/memory.js';

const files = (f: Record<string, string>) => (p: string) => f[p] ?? null;
const MEMINFO = 'MemTotal:       24000000 kB\nMemFree:         1000 kB\nMemAvailable:   16777216 kB\n';

describe('availableMemory', () => {
  it('MemAvailable when no cgroup limit is set', () => {
    const m = availableMemory(files({ '/proc/meminfo': MEMINFO, '/proc/self/cgroup': '0::/\n', '/sys/fs/cgroup/memory.max': 'max\n', '/sys/fs/cgroup/memory.current': '100\n' }));
    expect(m).toEqual({ bytes: 16 * 2 ** 30, source: 'MemAvailable' });
  });

  it("a cgroup v2 limit's room when smaller, named in the source", () => {
    const m = availableMemory(
      files({ '/proc/meminfo': MEMINFO, '/proc/self/cgroup': '0::/kubepods/pod1/c1\n', '/sys/fs/cgroup/kubepods/pod1/c1/memory.max': `${2 * 2 ** 30}\n`, '/sys/fs/cgroup/kubepods/pod1/c1/memory.current': `${2 ** 29}\n` }),
    );
    expect(m).toEqual({ bytes: 1.5 * 2 ** 30, source: 'cgroup memory.max 2.0 GiB, 0.5 GiB in use' });
  });

  it('this machine: a positive number of bytes', () => {
    expect(availableMemory().bytes).toBeGreaterThan(0);
  });
});
