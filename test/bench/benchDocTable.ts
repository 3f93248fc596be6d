// `npm run docs:bench`: rewrites the results table of docs/benchmarks.md from the suite reports in docs/bench-results/.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchReport } from './benchSuite.ts';
import { SUITES } from './main.ts';
import { markdownTable, type Row } from '../../runtime/util/table.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const RESULTS_DIR = path.join(ROOT, 'docs/bench-results');
export const DOC = path.join(ROOT, 'docs/benchmarks.md');
export const START = '<!-- bench-results:start (npm run docs:bench writes this table) -->';
export const END = '<!-- bench-results:end -->';

/** A headline figure a report names itself; a fresh suite report has none, and shows its scalar results instead. */
interface Headline {
  figure: string;
  result: string;
  target?: string;
  status?: string;
}

/** Every committed report, in the order of `npm run bench -- --help`; a file whose suite is unknown is refused by name. */
export function readReports(dir = RESULTS_DIR): BenchReport[] {
  const order = Object.keys(SUITES);
  const reports = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => {
      const r = JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as BenchReport;
      if (!order.includes(r.suite)) throw new Error(`${f}: suite "${r.suite}" is not one of npm run bench's suites`);
      return r;
    });
  return reports.sort((a, b) => order.indexOf(a.suite) - order.indexOf(b.suite));
}

const text = (v: unknown): string => (typeof v === 'number' ? String(Number(v.toPrecision(4))) : String(v));

/** The rows a report contributes: its headline, else each scalar of its results. */
function figures(r: BenchReport): Headline[] {
  const headline = r.results.headline;
  if (Array.isArray(headline)) return headline as Headline[];
  return Object.entries(r.results)
    .filter(([, v]) => ['number', 'string', 'boolean'].includes(typeof v))
    .map(([k, v]) => ({ figure: `\`results.${k}\``, result: text(v) }));
}

/** Machine, commit and date as the report's settings record them. */
function provenance(r: BenchReport): { machine: string; commit: string; date: string } {
  const m = (r.settings.machine ?? {}) as {
    cpus?: number;
    node?: string;
    started_at?: string;
    load_avg_1m?: number;
    load_avg_1m_at_start?: number;
    load_avg_1m_at_end?: number;
  };
  const load = m.load_avg_1m ?? (m.load_avg_1m_at_start !== undefined ? Math.max(m.load_avg_1m_at_start, m.load_avg_1m_at_end ?? 0) : undefined);
  const machine = [
    m.cpus !== undefined ? `${m.cpus} vCPU` : undefined,
    m.node ? `Node ${m.node.replace(/^v/, '')}` : undefined,
    load !== undefined ? `load ${load.toFixed(1)}` : undefined,
  ]
    .filter(Boolean)
    .join(', ');
  const commit = typeof r.settings.commit === 'string' ? `\`${r.settings.commit}\`` : '?';
  const date = m.started_at ? `${m.started_at.slice(0, 10)} ${m.started_at.slice(11, 16)}` : '?';
  return { machine: machine || '?', commit, date };
}

/** A figure's text as one markdown cell: a `|` inside it (as in |error|) would split the cell. */
const cell = (v: string | undefined): string => (v ?? '').replaceAll('|', '\\|');

/** The one results table: a row per headline figure, each with the machine, commit and date it was measured on. */
export function resultsTable(reports: readonly BenchReport[]): string {
  const rows: Row[] = [];
  for (const r of reports) {
    const p = provenance(r);
    for (const f of figures(r))
      rows.push({
        suite: `\`${r.suite}\``,
        figure: cell(f.figure),
        result: cell(f.result),
        target: cell(f.target),
        status: cell(f.status),
        machine: p.machine,
        commit: p.commit,
        'date (UTC)': p.date,
      });
  }
  return markdownTable(rows);
}

/** The document with its marked section replaced by `table`; a document without both markers is refused. */
export function withTable(doc: string, table: string): string {
  const a = doc.indexOf(START);
  const b = doc.indexOf(END);
  if (a < 0 || b < a) throw new Error(`docs/benchmarks.md needs the markers ${START} and ${END}`);
  return `${doc.slice(0, a + START.length)}\n${table}${doc.slice(b)}`;
}

/** Copies a suite's report.json into docs/bench-results/<suite>.json, stamped with the commit it ran on. */
function addReport(file: string, commit: string | undefined): void {
  const r = JSON.parse(readFileSync(file, 'utf8')) as BenchReport;
  if (!(r.suite in SUITES)) throw new Error(`${file}: suite "${r.suite}" is not one of npm run bench's suites`);
  r.settings.commit = commit ?? execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  writeFileSync(path.join(RESULTS_DIR, `${r.suite}.json`), JSON.stringify(r, null, 2) + '\n');
}

function main(args: string[]): number {
  const flag = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const add = flag('--add');
  if (add) addReport(add, flag('--commit'));
  const doc = readFileSync(DOC, 'utf8');
  const next = withTable(doc, resultsTable(readReports()));
  if (args.includes('--check')) {
    if (next !== doc) console.error('docs/benchmarks.md is not what docs/bench-results/ gives: run npm run docs:bench');
    return next === doc ? 0 : 1;
  }
  writeFileSync(DOC, next);
  console.log(`wrote the results table of ${path.relative(process.cwd(), DOC)} from ${path.relative(process.cwd(), RESULTS_DIR)}/`);
  return 0;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exit(main(process.argv.slice(2)));
