// A self-contained SVG line chart (no script, no external fonts or styles: it opens in any browser):
// panels stacked vertically sharing one x axis, each with its own y axis (linear or log) and series.
// Every data point is a <circle class="point"> carrying data-series, data-x and data-y, so the
// figures can be read back from the file. x positions are evenly spaced by rank (concurrency
// sweeps are roughly geometric: 1, 8, 64, 256, 512), labelled with their values.

export interface Series {
  name: string;
  /** One per x; null: no value there (a gap). */
  y: (number | null)[];
  /** Default: solid, coloured by the series' rank in its panel. */
  dash?: 'dashed' | 'dotted';
  color?: string;
}
export interface Panel {
  title: string;
  yLabel: string;
  logY?: boolean;
  series: Series[];
}
export interface Chart {
  title: string;
  subtitle?: string;
  xLabel: string;
  x: (number | string)[];
  panels: Panel[];
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const num = (v: number) => (Math.abs(v) >= 1000 ? v.toFixed(0) : String(Number(v.toPrecision(3))));
const DASH = { dashed: ' stroke-dasharray="7,4"', dotted: ' stroke-dasharray="2,3"' };

/** Round-number ticks covering [lo, hi]. */
function ticks(lo: number, hi: number, log: boolean): number[] {
  if (log) {
    const out: number[] = [];
    for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) out.push(10 ** e);
    return out;
  }
  const span = hi - lo || Math.abs(hi) || 1;
  const step0 = 10 ** Math.floor(Math.log10(span / 5));
  const step = [1, 2, 5, 10].map((m) => m * step0).find((s) => span / s <= 6)!;
  const out: number[] = [];
  for (let v = Math.floor(lo / step) * step; v <= hi + step / 2; v += step) out.push(v);
  return out;
}

export function renderChart(c: Chart): string {
  const W = 760;
  const PH = 260; // panel height
  const M = { l: 80, r: 190, t: c.subtitle ? 64 : 48, gap: 56, b: 50 };
  const H = M.t + c.panels.length * PH + (c.panels.length - 1) * M.gap + M.b;
  const pw = W - M.l - M.r;
  const xAt = (i: number) => M.l + (c.x.length === 1 ? pw / 2 : (i * pw) / (c.x.length - 1));
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(c.title)}</text>`,
  ];
  if (c.subtitle) out.push(`<text x="${W / 2}" y="42" text-anchor="middle" fill="#555">${esc(c.subtitle)}</text>`);
  c.panels.forEach((p, k) => {
    const top = M.t + k * (PH + M.gap);
    const ys = p.series.flatMap((s) => s.y.filter((v): v is number => v !== null && Number.isFinite(v) && (!p.logY || v > 0)));
    const log = p.logY === true && ys.length > 0;
    let lo = ys.length ? Math.min(...ys) : 0;
    let hi = ys.length ? Math.max(...ys) : 1;
    if (!log) [lo, hi] = [Math.min(0, lo), hi > 0 ? hi * 1.08 : 1];
    const tk = ticks(lo, hi, log);
    [lo, hi] = [Math.min(lo, tk[0]!), Math.max(hi, tk[tk.length - 1]!)];
    const f = (v: number) => (log ? Math.log10(v) : v);
    const yAt = (v: number) => top + PH - ((f(v) - f(lo)) / (f(hi) - f(lo) || 1)) * PH;
    out.push(`<g class="panel" data-title="${esc(p.title)}">`);
    out.push(`<text x="${M.l}" y="${top - 8}" font-weight="bold">${esc(p.title)}</text>`);
    for (const t of tk) {
      const y = yAt(t).toFixed(1);
      out.push(`<line x1="${M.l}" x2="${M.l + pw}" y1="${y}" y2="${y}" stroke="#e4e4e4"/>`);
      out.push(`<text x="${M.l - 6}" y="${y}" text-anchor="end" dominant-baseline="middle" fill="#444">${num(t)}</text>`);
    }
    out.push(`<rect x="${M.l}" y="${top}" width="${pw}" height="${PH}" fill="none" stroke="#888"/>`);
    out.push(`<text transform="translate(${M.l - 58},${top + PH / 2}) rotate(-90)" text-anchor="middle">${esc(p.yLabel)}${log ? ' (log)' : ''}</text>`);
    c.x.forEach((x, i) => out.push(`<text x="${xAt(i).toFixed(1)}" y="${top + PH + 16}" text-anchor="middle" fill="#444">${esc(String(x))}</text>`));
    p.series.forEach((s, j) => {
      const color = s.color ?? COLORS[j % COLORS.length]!;
      const dash = s.dash ? DASH[s.dash] : '';
      const pts = s.y.map((v, i) => (v === null || !Number.isFinite(v) || (log && v <= 0) ? null : ([xAt(i), yAt(v), v] as const)));
      let d = '';
      let pen = false;
      for (const pt of pts) {
        if (!pt) {
          pen = false;
          continue;
        }
        d += `${pen ? 'L' : 'M'}${pt[0].toFixed(1)},${pt[1].toFixed(1)}`;
        pen = true;
      }
      out.push(`<g class="series" data-series="${esc(s.name)}">`);
      if (d) out.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="2"${dash}/>`);
      pts.forEach((pt, i) => {
        if (pt) out.push(`<circle class="point" cx="${pt[0].toFixed(1)}" cy="${pt[1].toFixed(1)}" r="3.5" fill="${color}" data-series="${esc(s.name)}" data-x="${esc(String(c.x[i]))}" data-y="${pt[2]}"><title>${esc(`${s.name} @ ${c.x[i]}: ${num(pt[2])}`)}</title></circle>`);
      });
      const ly = top + 14 + j * 18;
      out.push(`<line x1="${M.l + pw + 14}" x2="${M.l + pw + 38}" y1="${ly}" y2="${ly}" stroke="${color}" stroke-width="2"${dash}/>`);
      out.push(`<text x="${M.l + pw + 44}" y="${ly}" dominant-baseline="middle">${esc(s.name)}</text>`);
      out.push('</g>');
    });
    out.push('</g>');
  });
  out.push(`<text x="${M.l + pw / 2}" y="${H - 12}" text-anchor="middle">${esc(c.xLabel)}</text>`);
  out.push('</svg>');
  return out.join('\n') + '\n';
}
