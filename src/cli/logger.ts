// pino for the CLI: JSON lines on stdout (what log collectors expect), pretty-printed when stdout is a
// terminal (pino-pretty, synchronous so the last lines before an exit are never lost). Every line
// carries the process role, since `serve` interleaves the gateway's and the sidecar's lines.

import { pino, type Logger as Pino } from 'pino';
import pretty from 'pino-pretty';

export type CliLogger = Pino;

export function createLogger(role: string, level: string, tty = process.stdout.isTTY === true): CliLogger {
  const base = { level, base: { role, pid: process.pid } };
  if (tty) return pino(base, pretty({ sync: true, colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'hostname' }));
  return pino(base, pino.destination({ dest: 1, sync: true }));
}
