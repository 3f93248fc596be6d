// Dependency-free SVG charts for benchmark results: grouped bars and lines, readable without a browser toolkit.

export interface BarSeries {
  name: string;
  values: number[];
}

export interface LineSeries {
  name: string;
  points: [number, number][];
}

const W = 720;
const H = 400;
const M = { left: 70, right: 20, top: 40, bottom: 70 };
const COLORS = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1'];

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fmt = (v: number) =>
  Math.abs(v) >= 10_000
    ? `${+(v / 1000).toFixed(1)}k`
    : Number.isInteger(v)
      ? String(v)
      : Math.abs(v) >= 100
        ? v.toFixed(0)
        : Math.abs(v) >= 10
          ? v.toFixed(1)
          : v.toFixed(2);

/** 0 and a "nice" maximum above `max`, with tick values. */
function niceScale(max: number): { top: number; ticks: number[] } {
  if (!(max > 0)) return { top: 1, ticks: [0, 0.5, 1] };
  const raw = max / 5;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const top = Math.ceil(max / step) * step;
  const ticks: number[] = [];
  for (let v = 0; v <= top + step / 2; v += step) ticks.push(v);
  return { top, ticks };
}

function frame(title: string, yLabel: string, xLabel: string, body: string, legend: string[]): string {
  const legendSvg = legend
    .map(
      (name, i) =>
        `<g transform="translate(${M.left + i * 150},${H - 22})"><rect width="12" height="12" fill="${COLORS[i % COLORS.length]}"/><text x="17" y="11" font-size="12">${esc(name)}</text></g>`,
    )
    .join('');
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(title)}</text>`,
    `<text transform="translate(16,${(M.top + H - M.bottom) / 2}) rotate(-90)" text-anchor="middle" font-size="12">${esc(yLabel)}</text>`,
    `<text x="${(M.left + W - M.right) / 2}" y="${H - 40}" text-anchor="middle" font-size="12">${esc(xLabel)}</text>`,
    body,
    legendSvg,
    '</svg>',
  ].join('\n');
}

function yAxis(top: number, ticks: number[]): string {
  const ph = H - M.top - M.bottom;
  return ticks
    .map((t) => {
      const y = M.top + ph - (t / top) * ph;
      return `<line x1="${M.left}" x2="${W - M.right}" y1="${y}" y2="${y}" stroke="#ddd"/><text x="${M.left - 6}" y="${y + 4}" text-anchor="end" font-size="11">${fmt(t)}</text>`;
    })
    .join('');
}

/** Grouped bars: one group per category, one bar per series, value printed on each bar. */
export function barChart(opts: { title: string; yLabel: string; xLabel?: string; categories: string[]; series: BarSeries[] }): string {
  const { categories, series } = opts;
  const max = Math.max(0, ...series.flatMap((s) => s.values.filter(Number.isFinite)));
  const { top, ticks } = niceScale(max);
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const gw = pw / Math.max(1, categories.length);
  const bw = (gw * 0.8) / Math.max(1, series.length);
  let body = yAxis(top, ticks);
  categories.forEach((c, ci) => {
    series.forEach((s, si) => {
      const v = s.values[ci];
      if (!Number.isFinite(v)) return;
      const h = (v / top) * ph;
      const x = M.left + ci * gw + gw * 0.1 + si * bw;
      const y = M.top + ph - h;
      body += `<rect x="${x}" y="${y}" width="${bw - 2}" height="${h}" fill="${COLORS[si % COLORS.length]}"/>`;
      body += `<text x="${x + (bw - 2) / 2}" y="${y - 3}" text-anchor="middle" font-size="10">${fmt(v)}</text>`;
    });
    body += `<text x="${M.left + ci * gw + gw / 2}" y="${M.top + ph + 16}" text-anchor="middle" font-size="12">${esc(c)}</text>`;
  });
  body += `<line x1="${M.left}" x2="${W - M.right}" y1="${M.top + ph}" y2="${M.top + ph}" stroke="#333"/>`;
  return frame(
    opts.title,
    opts.yLabel,
    opts.xLabel ?? '',
    body,
    series.map((s) => s.name),
  );
}

/** Lines with markers; `logX` spaces x by log2 (concurrency and lengths double). */
export function lineChart(opts: { title: string; yLabel: string; xLabel: string; series: LineSeries[]; logX?: boolean }): string {
  const xs = opts.series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = opts.series.flatMap((s) => s.points.map((p) => p[1]).filter(Number.isFinite));
  const tx = (x: number) => (opts.logX ? Math.log2(x) : x);
  const x0 = Math.min(...xs.map(tx));
  const x1 = Math.max(...xs.map(tx));
  const { top, ticks } = niceScale(Math.max(0, ...ys));
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const px = (x: number) => M.left + (x1 === x0 ? pw / 2 : ((tx(x) - x0) / (x1 - x0)) * pw);
  const py = (y: number) => M.top + ph - (y / top) * ph;
  let body = yAxis(top, ticks);
  // Label every x when there are few (concurrency levels, lengths); otherwise a few round values.
  const distinct = [...new Set(xs)].sort((a, b) => a - b);
  const xTicks = distinct.length <= 12 || opts.logX ? distinct : niceScale(Math.max(...distinct)).ticks;
  for (const x of xTicks) {
    body += `<text x="${px(x)}" y="${M.top + ph + 16}" text-anchor="middle" font-size="11">${fmt(x)}</text>`;
  }
  body += `<line x1="${M.left}" x2="${W - M.right}" y1="${M.top + ph}" y2="${M.top + ph}" stroke="#333"/>`;
  opts.series.forEach((s, si) => {
    const c = COLORS[si % COLORS.length];
    const pts = s.points.filter((p) => Number.isFinite(p[1]));
    body += `<polyline fill="none" stroke="${c}" stroke-width="2" points="${pts.map((p) => `${px(p[0])},${py(p[1])}`).join(' ')}"/>`;
    for (const p of pts) body += `<circle cx="${px(p[0])}" cy="${py(p[1])}" r="3.5" fill="${c}"><title>${fmt(p[0])}: ${fmt(p[1])}</title></circle>`;
  });
  return frame(
    opts.title,
    opts.yLabel,
    opts.xLabel,
    body,
    opts.series.map((s) => s.name),
  );
}
