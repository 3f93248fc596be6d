// The shape every benchmark suite returns, and its progress line.
import { progressLine } from '../util/progressLine.ts';
import type { Row } from './table.ts';

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

export interface SuiteOutput {
  /** Named tables, written in order to results.md. */
  tables: Record<string, readonly Row[]>;
  /** SVG documents by file stem. */
  charts?: Record<string, string>;
  /** Free text put above the tables (settings, notes). */
  notes?: string[];
}

/** What a suite returns: its report, and the tables and charts main.ts writes beside it (results/<suite>/). */
export interface SuiteRun extends BenchReport {
  output?: SuiteOutput;
}

export type BenchSuite = (opts: BenchOptions) => Promise<SuiteRun>;

/** Progress on stderr: a redrawn bar on a terminal, whole lines "done/total label" in a log. */
export function progress(label: string, done: number, total: number): void {
  const width = 24;
  const fill = Math.max(0, Math.min(width, Math.round((done / total) * width)));
  const bar = process.stderr.isTTY ? `[${'#'.repeat(fill)}${'.'.repeat(width - fill)}] ` : '';
  progressLine(`${bar}${done}/${total} ${label}`, done, total);
}
