// The shape every benchmark suite returns.
import type { Row } from '../../runtime/util/table.ts';

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
