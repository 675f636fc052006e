// `ernie-edge monitor`'s flags: its own table through serve's parser (src/cli/args.ts), so the same
// spellings and errors; its defaults and range checks. (The command end to end: monitor.e2e.test.ts.)
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/cli/args.js';
import { MONITOR_FLAGS, MONITOR_HELP, parseMonitorArgs } from '../../src/cli/monitor-args.js';

const usage = (argv: string[]) => {
  try {
    parseMonitorArgs(argv);
  } catch (e) {
    expect(e).toBeInstanceOf(UsageError);
    return (e as Error).message;
  }
  throw new Error('expected a UsageError');
};

describe('parseMonitorArgs', () => {
  it('has its defaults, and --once means one poll', () => {
    expect(parseMonitorArgs([])).toEqual({ url: 'http://127.0.0.1:8000', intervalMs: 2000, once: false, count: Infinity, maxWaiting: undefined, maxLatency: undefined, timeoutMs: 5000 });
    expect(parseMonitorArgs(['--once', '--count', '5'])).toMatchObject({ once: true, count: 1 });
    expect(parseMonitorArgs(['--help'])).toBe('help');
  });

  it("reads serve's spellings: --flag=value, underscores, and seconds as numbers", () => {
    expect(parseMonitorArgs(['--url=http://h:9/', '--max_waiting', '3', '--max-latency', '1.5', '--interval', '0.25', '--timeout=2'])).toEqual({
      url: 'http://h:9',
      intervalMs: 250,
      once: false,
      count: Infinity,
      maxWaiting: 3,
      maxLatency: 1.5,
      timeoutMs: 2000,
    });
  });

  it("rejects what serve's parser rejects, against monitor's table, and values out of range", () => {
    expect(usage(['--max-waiting', 'lots'])).toBe("--max-waiting must be a number, got 'lots'");
    expect(usage(['--intervall', '3'])).toBe('unknown option --intervall (did you mean --interval?) (see --help)');
    expect(usage(['--model', 'x'])).toMatch(/^unknown option --model/); // serve's flags are not monitor's
    expect(usage(['http://h:9'])).toBe("unexpected argument 'http://h:9' (see --help)");
    expect(usage(['--url'])).toBe('--url needs a value (URL)');
    expect(usage(['--timeout', '1', '--timeout', '2'])).toBe('--timeout was given twice');
    expect(usage(['--url', 'ftp://h'])).toBe("--url must be http(s)://host:port, got 'ftp://h'");
    expect(usage(['--interval', '0.01'])).toBe("--interval must be a number ≥ 0.05, got '0.01'");
    expect(usage(['--count', '0'])).toBe("--count must be a number ≥ 1, got '0'");
  });

  it('--help lists every flag of the table', () => {
    for (const f of MONITOR_FLAGS) expect(MONITOR_HELP).toContain(`--${f.name}`);
  });
});
