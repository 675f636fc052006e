// Whether a CPU benchmark ran on an otherwise idle host: the CPU time other processes took while it
// ran (the machine's busy time, /proc/stat through os.cpus(), less this process's and its waited-for
// children's, /proc/self/stat), as a share of all cores. Shared development machines run other work;
// a figure taken beside it is not the machine's, and the result says so instead of passing for one.
import { readFileSync } from 'node:fs';
import os from 'node:os';

const TICK_MS = 10; // USER_HZ = 100 on Linux

function machineMs(): { busy: number; total: number } {
  let busy = 0;
  let total = 0;
  for (const c of os.cpus()) {
    const t = c.times;
    busy += t.user + t.nice + t.sys + t.irq;
    total += t.user + t.nice + t.sys + t.irq + t.idle;
  }
  return { busy, total };
}

/**
 * The hypervisor's steal time and all time of the machine's CPUs (ticks, /proc/stat's `cpu` line: user
 * nice system idle iowait irq softirq steal ...): time a VM's vCPUs wanted to run but the host ran
 * something else, which no process inside the VM shows. Zeros where the file or the field is missing.
 */
function stealTicks(): { steal: number; total: number } {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
    return f.length === 8 && f.every(Number.isFinite) ? { steal: f[7]!, total: f.reduce((a, b) => a + b, 0) } : { steal: 0, total: 0 };
  } catch {
    return { steal: 0, total: 0 };
  }
}

/** This process's and its waited-for children's CPU time (ms): utime, stime, cutime, cstime. */
function selfMs(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from 3 (state) on
  return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * TICK_MS;
}

export interface HostLoad {
  /** Other processes' CPU time over the run, as a share of all cores' time (0..1). */
  othersShare: number;
  /**
   * The hypervisor's steal time over the run, as a share of all cores' time (0..1; 0 where /proc/stat
   * has none): recorded, not part of `valid`. On a VM the vCPUs can run slower with no process of the
   * guest to show for it; a run with a steal share well above 0 was not on an idle machine either.
   */
  stealShare: number;
  loadAverageStart: number[];
  loadAverageEnd: number[];
  cores: number;
  /** False when othersShare exceeds `maxOthersShare`: the figures are lower bounds, not the host's. */
  valid: boolean;
  reason?: string;
}

/** Starts watching; stop() reports. maxOthersShare: 0.05 (5% of the cores' time) unless given. */
export function watchHostLoad(maxOthersShare = 0.05): { stop: () => HostLoad } {
  const m0 = machineMs();
  const s0 = selfMs();
  const st0 = stealTicks();
  const loadAverageStart = os.loadavg();
  return {
    stop: () => {
      const m1 = machineMs();
      const others = Math.max(0, m1.busy - m0.busy - (selfMs() - s0));
      const othersShare = m1.total > m0.total ? others / (m1.total - m0.total) : 0;
      const valid = othersShare <= maxOthersShare;
      const st1 = stealTicks();
      const stealShare = st1.total > st0.total ? Math.min(1, Math.max(0, (st1.steal - st0.steal) / (st1.total - st0.total))) : 0;
      return {
        othersShare, stealShare, loadAverageStart, loadAverageEnd: os.loadavg(), cores: os.cpus().length, valid,
        ...(valid ? {} : { reason: `other processes took ${(othersShare * 100).toFixed(0)}% of the cores' time during the run (limit ${(maxOthersShare * 100).toFixed(0)}%): run it on an idle host` }),
      };
    },
  };
}
