// --api-server-count's default (src/cli/cpu-budget.ts): cores from the affinity mask capped by the
// cgroup v2 quota, one gateway per 4 cores, 1..8; and which Node binds SO_REUSEPORT (src/cli/cluster.ts).
import { describe, expect, it } from 'vitest';
import { runtimeHasReusePort } from '../../src/cli/cluster.js';
import { availableCores, cgroupCpuLimit, defaultApiServerCount } from '../../src/cli/cpu-budget.js';
import { buildConfig } from '../../src/cli/config.js';
import { parseArgs } from '../../src/cli/args.js';

describe('cpu budget', () => {
  it('reads cpu.max: a quota is quota / period CPUs; "max", junk or no file is no limit', () => {
    expect(cgroupCpuLimit('150000 100000\n')).toBe(1.5);
    expect(cgroupCpuLimit('400000 100000')).toBe(4);
    expect(cgroupCpuLimit('max 100000\n')).toBeNull();
    expect(cgroupCpuLimit('garbage')).toBeNull();
    expect(cgroupCpuLimit(null)).toBeNull();
  });

  it('available cores: the affinity mask, capped by the quota rounded up, at least 1', () => {
    expect(availableCores(64, '150000 100000')).toBe(2);
    expect(availableCores(64, 'max 100000')).toBe(64);
    expect(availableCores(4, '1600000 100000')).toBe(4); // a quota above the mask does not add cores
    expect(availableCores(8, '10000 100000')).toBe(1);
    expect(availableCores(3, null)).toBe(3);
  });

  it('the default count: one gateway per 4 cores, at least 1, at most 8', () => {
    expect([1, 2, 3, 4, 7, 8, 16, 31, 32, 64, 256].map((c) => defaultApiServerCount(c))).toEqual([1, 1, 1, 1, 1, 2, 4, 7, 8, 8, 8]);
  });

  it('--api-server-count: given, or the default for this machine; 0 is refused', () => {
    expect(buildConfig(parseArgs(['serve', '--api-server-count', '3'])).gateway.apiServerCount).toBe(3);
    expect(buildConfig(parseArgs(['serve'])).gateway.apiServerCount).toBe(defaultApiServerCount());
    expect(() => buildConfig(parseArgs(['serve', '--api-server-count', '0']))).toThrow(/--api-server-count must be an integer ≥ 1/);
  });

  it('SO_REUSEPORT listening: Node 22.12+ and 23.1+, not 20 or 22.11', () => {
    expect(['20.20.2', '22.11.0', '22.12.0', '23.0.0', '23.1.0', '24.11.1'].map((v) => runtimeHasReusePort(v))).toEqual([false, false, true, false, true, true]);
  });
});
