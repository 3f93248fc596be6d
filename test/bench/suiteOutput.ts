// Writes a suite's results folder: results/<suite>/report.json, a markdown table file and SVG plots.
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BenchReport, SuiteOutput } from './benchSuite.ts';
import { markdownTable } from '../../runtime/util/table.ts';

/** 1-minute load average when the suite module loaded: on a shared machine, part of every figure's context. */
const LOAD_AT_START = os.loadavg()[0];
const STARTED_AT = new Date().toISOString();

/** Where a suite's outputs go; `TR_RESULTS_DIR` moves the root (tests). */
export function resultsDir(suite: string): string {
  return path.resolve(process.env.TR_RESULTS_DIR ?? 'results', suite);
}

/** `--tag` names a folder: refused before a suite runs, not after. */
export function checkTag(tag: string | undefined): void {
  if (tag !== undefined && !/^[A-Za-z0-9._-]+$/.test(tag)) throw new Error(`--tag must be letters, digits, dot, dash or underscore, got "${tag}"`);
}

/** `tag` (a suite's --tag flag) keeps a variant's outputs apart: results/<suite>-<tag>/. */
export function writeSuiteOutput(report: BenchReport, out: SuiteOutput, tag?: string): string {
  checkTag(tag);
  report.settings.machine = {
    cpus: os.cpus().length,
    node: process.version,
    started_at: STARTED_AT,
    load_avg_1m_at_start: LOAD_AT_START,
    load_avg_1m_at_end: os.loadavg()[0],
  };
  const dir = resultsDir(tag ? `${report.suite}-${tag}` : report.suite);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'report.json'), JSON.stringify(report, null, 2));
  const md: string[] = [`# ${report.suite}`, '', '```json', JSON.stringify(report.settings, null, 2), '```', ''];
  for (const n of out.notes ?? []) md.push(n, '');
  for (const [name, rows] of Object.entries(out.tables)) md.push(`## ${name}`, '', markdownTable(rows));
  for (const [stem, svg] of Object.entries(out.charts ?? {})) {
    writeFileSync(path.join(dir, `${stem}.svg`), svg);
    md.push(`![${stem}](${stem}.svg)`, '');
  }
  writeFileSync(path.join(dir, 'results.md'), md.join('\n'));
  console.log(
    `results: ${path.relative(process.cwd(), dir)}/ (report.json, results.md${
      out.charts
        ? ', ' +
          Object.keys(out.charts)
            .map((s) => s + '.svg')
            .join(', ')
        : ''
    })`,
  );
  return dir;
}
