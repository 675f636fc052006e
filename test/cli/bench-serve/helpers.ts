// Runs `bench serve` in this process (runBenchServe) with its output captured, and reads back the
// JSON and SVG it saved.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import type { BenchResult } from '../../../src/cli/bench-serve/report.js';
import { runBenchServe } from '../../../src/cli/bench-serve/run.js';

export interface BenchRun {
  code: number;
  out: string;
  err: string;
}

export async function benchServe(args: string[]): Promise<BenchRun> {
  let out = '';
  let err = '';
  const sink = (f: (s: string) => void) => new Writable({ write: (c: Buffer | string, _e, cb) => (f(c.toString()), cb()) });
  const code = await runBenchServe(args, {}, { out: sink((s) => (out += s)), err: sink((s) => (err += s)) });
  return { code, out, err };
}

export async function readResult(dir: string, name: string): Promise<{ json: BenchResult; svg: string }> {
  const json = JSON.parse(await readFile(path.join(dir, `${name}.json`), 'utf8')) as BenchResult;
  const svg = await readFile(path.join(dir, `${name}.svg`), 'utf8');
  return { json, svg };
}

export interface SvgPoint {
  series: string;
  x: string;
  y: number;
}

/** The chart's data points, after checking the file is well-formed XML with an <svg> root. */
export function svgPoints(svg: string): SvgPoint[] {
  const valid = XMLValidator.validate(svg);
  if (valid !== true) throw new Error(`not well-formed XML: ${JSON.stringify(valid.err)}`);
  const doc = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', isArray: (name) => ['g', 'circle'].includes(name) }).parse(svg) as { svg?: unknown };
  if (!doc.svg) throw new Error('no <svg> root');
  const points: SvgPoint[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!node || typeof node !== 'object') return;
    const o = node as Record<string, unknown>;
    for (const c of (o.circle as Record<string, string>[] | undefined) ?? []) if (c.class === 'point') points.push({ series: c['data-series']!, x: c['data-x']!, y: Number(c['data-y']) });
    for (const [k, v] of Object.entries(o)) if (k !== 'circle') walk(v);
  };
  walk(doc.svg);
  return points;
}
