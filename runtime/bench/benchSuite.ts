// The shape every benchmark suite returns, and small helpers for printing and progress.
import { progressLine } from '../util/progressLine.ts';

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

/** Progress on stderr: a redrawn bar on a terminal, whole lines "done/total label" in a log. */
export function progress(label: string, done: number, total: number): void {
  const width = 24;
  const fill = Math.max(0, Math.min(width, Math.round((done / total) * width)));
  const bar = process.stderr.isTTY ? `[${'#'.repeat(fill)}${'.'.repeat(width - fill)}] ` : '';
  progressLine(`${bar}${done}/${total} ${label}`, done, total);
}
