// bench/engine/host-load.ts: the share of the cores other processes took while a CPU benchmark ran,
// and the validity mark it puts on the result. The host here is shared, so the share itself is not
// asserted; the report's shape, its bounds and the threshold rule are.
import os from 'node:os';
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { watchHostLoad } from '../../bench/engine/host-load.js';

describe('watchHostLoad', () => {
  it('reports the others\' and the hypervisor\'s (steal) shares of all cores within [0, 1], the load averages and the core count', () => {
    const w = watchHostLoad();
    spawnSync(process.execPath, ['-e', 'const t = Date.now(); while (Date.now() - t < 200);']); // our own child's CPU time
    const r = w.stop();
    expect(r.othersShare).toBeGreaterThanOrEqual(0);
    expect(r.othersShare).toBeLessThanOrEqual(1);
    expect(r.stealShare).toBeGreaterThanOrEqual(0);
    expect(r.stealShare).toBeLessThanOrEqual(1);
    expect(r.cores).toBe(os.cpus().length);
    expect(r.loadAverageStart).toHaveLength(3);
    expect(r.loadAverageEnd).toHaveLength(3);
  });

  it('marks a run valid up to the limit and invalid, with the reason, above it', () => {
    const always = watchHostLoad(1).stop();
    expect(always).toMatchObject({ valid: true });
    expect(always.reason).toBeUndefined();
    const never = watchHostLoad(-1).stop();
    expect(never.valid).toBe(false);
    expect(never.reason).toMatch(/other processes took \d+% of the cores' time during the run \(limit -100%\)/);
  });
});
