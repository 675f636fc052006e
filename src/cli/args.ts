// Command-line parsing against a flag table (serve's: ./flags.ts; monitor's: ./monitor-args.ts):
// `--flag value`, `--flag=value`, `--no-flag` for negatable booleans, underscores as dashes (vLLM accepts
// both). `serve` also takes an optional command and a positional model (`serve DIR`, as `vllm serve
// DIR`). Unknown flags and bad values are UsageErrors with a message meant for a person; nothing here
// exits the process.

import { FLAGS, type FlagSpec } from './flags.js';

export class UsageError extends Error {
  override name = 'UsageError';
}

export type FlagValue = string | number | boolean | string[];

/** What the parser reads of a flag; serve's table adds who reads it (scope) and compat notes. */
export type ParsableFlag = Omit<FlagSpec, 'scope' | 'compat'>;

export interface ParsedArgs {
  command: string;
  /** Flag name (no dashes) → value; repeatable flags are string[]. Only flags given (or from env). */
  flags: Record<string, FlagValue>;
}

/** `ernie-edge [serve] [MODEL] [flags]` against serve's table. */
export function parseArgs(argv: readonly string[], env: Record<string, string | undefined> = {}): ParsedArgs {
  let command: string | null = null;
  const flags = parseFlags(argv, FLAGS, env, (arg, given) => {
    if (command === null) command = arg;
    else if (given.model === undefined) given.model = arg;
    else return false;
    return true;
  });
  return { command: command ?? 'serve', flags };
}

/**
 * Flags of `table` in argv. An argument that is not a flag goes to `positional`, which returns whether
 * it took it; without one (or when it does not), it is a UsageError.
 */
export function parseFlags(
  argv: readonly string[],
  table: readonly ParsableFlag[],
  env: Record<string, string | undefined> = {},
  positional?: (arg: string, flags: Record<string, FlagValue>) => boolean,
): Record<string, FlagValue> {
  const byName = new Map(table.map((f) => [f.name, f]));
  const flags: Record<string, FlagValue> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) {
      if (arg.startsWith('-') || !positional?.(arg, flags)) throw new UsageError(`unexpected argument '${arg}' (see --help)`);
      continue;
    }
    const eq = arg.indexOf('=');
    const rawName = (eq >= 0 ? arg.slice(2, eq) : arg.slice(2)).replaceAll('_', '-');
    const inline = eq >= 0 ? arg.slice(eq + 1) : undefined;
    let spec = byName.get(rawName);
    let negated = false;
    if (!spec && rawName.startsWith('no-')) {
      const s = byName.get(rawName.slice(3));
      if (s?.negatable) [spec, negated] = [s, true];
    }
    if (!spec) throw new UsageError(`unknown option --${rawName}${suggest(rawName, table)} (see --help)`);
    if (spec.kind === 'bool') {
      if (negated && inline !== undefined) throw new UsageError(`--no-${spec.name} takes no value`);
      flags[spec.name] = negated ? false : inline === undefined ? true : parseBool(spec, inline);
      continue;
    }
    let value = inline;
    if (value === undefined) {
      value = argv[++i];
      if (value === undefined || (value.startsWith('--') && value.length > 2)) throw new UsageError(`--${spec.name} needs a value${spec.arg ? ` (${spec.arg})` : ''}`);
    }
    const parsed = parseValue(spec, value);
    if (spec.repeatable) flags[spec.name] = [...((flags[spec.name] as string[] | undefined) ?? []), String(parsed)];
    else if (flags[spec.name] !== undefined) throw new UsageError(`--${spec.name} was given twice`);
    else flags[spec.name] = parsed;
  }
  for (const spec of table) {
    const v = spec.env ? env[spec.env] : undefined;
    if (flags[spec.name] === undefined && v !== undefined && v !== '') flags[spec.name] = parseValue(spec, v);
  }
  return flags;
}

function parseBool(spec: ParsableFlag, v: string): boolean {
  if (/^(true|1|yes)$/i.test(v)) return true;
  if (/^(false|0|no)$/i.test(v)) return false;
  throw new UsageError(`--${spec.name} expects true or false, got '${v}'`);
}

function parseValue(spec: ParsableFlag, v: string): string | number | boolean {
  switch (spec.kind) {
    case 'bool':
      return parseBool(spec, v);
    case 'string':
      return v;
    case 'int': {
      if (!/^-?\d+$/.test(v) || !Number.isSafeInteger(Number(v))) throw new UsageError(`--${spec.name} expects an integer, got '${v}'`);
      return Number(v);
    }
    case 'number': {
      const n = Number(v);
      if (v.trim() === '' || !Number.isFinite(n)) throw new UsageError(`--${spec.name} must be a number, got '${v}'`);
      return n;
    }
    case 'bytes':
      return parseBytes(spec.name, v);
  }
}

const UNITS: Record<string, number> = { '': 1, b: 1, k: 1e3, kb: 1e3, kib: 2 ** 10, m: 1e6, mb: 1e6, mib: 2 ** 20, g: 1e9, gb: 1e9, gib: 2 ** 30, t: 1e12, tb: 1e12, tib: 2 ** 40 };

/** "2GiB", "512M", "1.5g", "1073741824" → bytes. */
export function parseBytes(name: string, v: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(v);
  const unit = m ? UNITS[m[2]!.toLowerCase()] : undefined;
  if (!m || unit === undefined) throw new UsageError(`--${name} expects a size such as 2GiB, 512M or a byte count, got '${v}'`);
  return Math.floor(Number(m[1]) * unit);
}

/** " (did you mean --max-model-len?)" for a near miss. */
function suggest(name: string, table: readonly ParsableFlag[]): string {
  let best: string | null = null;
  let bestD = Infinity;
  for (const f of table) {
    const d = distance(name, f.name);
    if (d < bestD) [best, bestD] = [f.name, d];
  }
  return best !== null && bestD <= Math.max(2, Math.floor(name.length / 4)) ? ` (did you mean --${best}?)` : '';
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

/** Re-serialises the given flags of `scope` (or 'both') for a child process's argv. */
export function forwardFlags(flags: Record<string, FlagValue>, scope: 'engine' | 'gateway', skip: readonly string[] = []): string[] {
  const out: string[] = [];
  for (const spec of FLAGS) {
    const v = flags[spec.name];
    if (v === undefined || skip.includes(spec.name) || (spec.scope !== scope && spec.scope !== 'both')) continue;
    if (spec.env) continue; // secrets travel by environment, never on a command line (visible in ps)
    if (Array.isArray(v)) for (const x of v) out.push(`--${spec.name}`, x);
    else if (typeof v === 'boolean') out.push(v ? `--${spec.name}` : spec.negatable ? `--no-${spec.name}` : `--${spec.name}=false`);
    else out.push(`--${spec.name}=${v}`);
  }
  return out;
}
