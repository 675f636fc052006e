// A minimal Prometheus text-format (0.0.4) exporter: labelled counters, gauges and histograms.
// NOTE: not prom-client — its Histogram and validation modules `require('util')` (a Node builtin),
// so it cannot load in Workers, and the gateway must stay runtime-agnostic. This is ~80 lines instead.

type Labels = Record<string, string>;

export function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function fmtLabels(labels: Labels, extra?: [string, string]): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  if (extra) parts.push(`${extra[0]}="${escapeLabel(extra[1])}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
}

function fmtNum(v: number): string {
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return Number.isNaN(v) ? 'NaN' : String(v);
}

const header = (name: string, help: string, type: string) => `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n`;

/** Renders one gauge or counter family from (labels, value) samples computed at scrape time. */
export function renderSamples(name: string, help: string, type: 'gauge' | 'counter', samples: [Labels, number][]): string {
  return header(name, help, type) + samples.map(([l, v]) => `${name}${fmtLabels(l)} ${fmtNum(v)}\n`).join('');
}

/** A counter owned by this process, keyed by label values. */
export class Counter {
  private readonly values = new Map<string, [Labels, number]>();
  constructor(
    readonly name: string,
    private readonly help: string,
  ) {}

  inc(labels: Labels, by = 1): void {
    const key = JSON.stringify(labels);
    const cur = this.values.get(key);
    this.values.set(key, [labels, (cur?.[1] ?? 0) + by]);
  }

  render(): string {
    return renderSamples(this.name, this.help, 'counter', [...this.values.values()]);
  }
}

export class Histogram {
  private readonly series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();
  constructor(
    readonly name: string,
    private readonly help: string,
    private readonly buckets: readonly number[],
  ) {}

  observe(labels: Labels, value: number): void {
    const key = JSON.stringify(labels);
    let s = this.series.get(key);
    if (!s) this.series.set(key, (s = { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0 }));
    for (let i = 0; i < this.buckets.length; i++) if (value <= this.buckets[i]!) s.counts[i]!++;
    s.sum += value;
    s.count++;
  }

  render(): string {
    let out = header(this.name, this.help, 'histogram');
    for (const s of this.series.values()) {
      this.buckets.forEach((b, i) => (out += `${this.name}_bucket${fmtLabels(s.labels, ['le', fmtNum(b)])} ${s.counts[i]}\n`));
      out += `${this.name}_bucket${fmtLabels(s.labels, ['le', '+Inf'])} ${s.count}\n`;
      out += `${this.name}_sum${fmtLabels(s.labels)} ${fmtNum(s.sum)}\n`;
      out += `${this.name}_count${fmtLabels(s.labels)} ${s.count}\n`;
    }
    return out;
  }
}

/** A histogram kept elsewhere (the engine's), rendered from its snapshot: bounds, cumulative counts. */
export function renderHistogramSnapshot(
  name: string,
  help: string,
  labels: Labels,
  h: { bounds: readonly number[]; counts: readonly number[]; count: number; sum: number },
): string {
  let out = header(name, help, 'histogram');
  h.bounds.forEach((b, i) => (out += `${name}_bucket${fmtLabels(labels, ['le', fmtNum(b)])} ${h.counts[i] ?? 0}\n`));
  out += `${name}_bucket${fmtLabels(labels, ['le', '+Inf'])} ${h.count}\n`;
  out += `${name}_sum${fmtLabels(labels)} ${fmtNum(h.sum)}\n`;
  return out + `${name}_count${fmtLabels(labels)} ${h.count}\n`;
}
