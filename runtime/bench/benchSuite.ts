// The shape every benchmark suite returns, and small helpers for printing and progress.

export interface BenchOptions {
  json?: string;
  /** Extra --key value flags given on the command line. */
  flags: Record<string, string>;
}

export interface BenchReport {
  suite: string;
  settings: Record<string, unknown>;
  results: Record<string, unknown>;
}

export type BenchSuite = (opts: BenchOptions) => Promise<BenchReport>;

/** Prints rows as an aligned text table. */
export function printTable(rows: Record<string, unknown>[]): void {
  if (rows.length === 0) return;
  const cols = Object.keys(rows[0]);
  const cell = (v: unknown) => (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(v < 10 ? 3 : 1)) : String(v));
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (vals: string[]) => vals.map((v, i) => v.padStart(widths[i])).join('  ');
  console.log(line(cols));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(cols.map((c) => cell(r[c]))));
}

/** One-line progress on stderr: "[label] done/total". */
export function progress(label: string, done: number, total: number): void {
  const width = 24;
  const fill = Math.round((done / total) * width);
  process.stderr.write(`\r[${'#'.repeat(fill)}${'.'.repeat(width - fill)}] ${done}/${total} ${label}      `);
  if (done >= total) process.stderr.write('\n');
}
