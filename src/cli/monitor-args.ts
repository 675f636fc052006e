// `ernie-edge monitor`'s flags: its own table, read by the same parser as serve's (./args.ts), and the
// options it yields. Its --help is generated from the table.

import { parseFlags, UsageError, type ParsableFlag } from './args.js';

export interface MonitorOptions {
  url: string;
  intervalMs: number;
  once: boolean;
  /** Stop after this many polls (default: forever, or 1 with --once). */
  count: number;
  maxWaiting?: number;
  /** Seconds; compared with the end-to-end latency p99. */
  maxLatency?: number;
  timeoutMs: number;
}

export const MONITOR_FLAGS: readonly ParsableFlag[] = [
  { name: 'url', kind: 'string', arg: 'URL', help: 'the server to watch (default http://127.0.0.1:8000)' },
  { name: 'interval', kind: 'number', arg: 'SECONDS', help: 'between polls (default 2)' },
  { name: 'once', kind: 'bool', help: 'poll once and exit: 0 healthy, 1 unhealthy (for probes and cron)' },
  { name: 'count', kind: 'number', arg: 'N', help: 'stop after N polls (default: until interrupted)' },
  { name: 'max-waiting', kind: 'number', arg: 'N', help: 'warn when more than N requests wait (vllm:num_requests_waiting)' },
  { name: 'max-latency', kind: 'number', arg: 'SECONDS', help: 'warn when the end-to-end latency p99 passes this' },
  { name: 'timeout', kind: 'number', arg: 'SECONDS', help: 'per request to the server (default 5)' },
  { name: 'help', kind: 'bool', help: 'this text' },
];

export const MONITOR_HELP = [
  'Usage: ernie-edge monitor [--url http://127.0.0.1:8000] [--interval SECONDS] [--once]',
  '                          [--max-waiting N] [--max-latency SECONDS] [--count N] [--timeout SECONDS]',
  '  Polls /ready and /metrics and prints running, waiting, KV usage, TTFT/e2e p50/p99 and tokens/s.',
  ...MONITOR_FLAGS.map((f) => `  ${`--${f.name}${f.arg ? ` ${f.arg}` : ''}`.padEnd(22)} ${f.help}`),
].join('\n');

/** argv after `monitor` → options, or 'help'. Bad flags and values are UsageErrors. */
export function parseMonitorArgs(argv: readonly string[]): MonitorOptions | 'help' {
  const f = parseFlags(argv, MONITOR_FLAGS);
  if (f.help === true) return 'help';
  const num = (name: string, dflt: number | undefined, min: number): number | undefined => {
    const v = (f[name] as number | undefined) ?? dflt;
    if (v !== undefined && v < min) throw new UsageError(`--${name} must be a number ≥ ${min}, got '${v}'`);
    return v;
  };
  const given = (f.url as string | undefined) ?? 'http://127.0.0.1:8000';
  const url = given.replace(/\/+$/, '');
  if (!/^https?:\/\//.test(url)) throw new UsageError(`--url must be http(s)://host:port, got '${given}'`);
  const once = f.once === true;
  return {
    url,
    intervalMs: num('interval', 2, 0.05)! * 1000,
    once,
    count: once ? 1 : num('count', Infinity, 1)!,
    maxWaiting: num('max-waiting', undefined, 0),
    maxLatency: num('max-latency', undefined, 0),
    timeoutMs: num('timeout', 5, 0.1)! * 1000,
  };
}
