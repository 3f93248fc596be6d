// docs/benchmarks.md's results table is what the committed suite reports give, each row with its machine, commit and date.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DOC, END, readReports, resultsTable, START, withTable } from './benchDocTable.ts';
import { SUITES } from './main.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-bench-doc-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('the benchmarks results table', () => {
  it('is the table docs/bench-results/ gives (rewrite it with npm run docs:bench)', () => {
    const doc = fs.readFileSync(DOC, 'utf8');
    expect(doc).toContain(START);
    expect(withTable(doc, resultsTable(readReports()))).toBe(doc);
  });

  it('names every committed suite with a machine, a commit and a date on each row', () => {
    const reports = readReports();
    expect(reports.length).toBeGreaterThan(20);
    for (const line of resultsTable(reports).split('\n').slice(2).filter(Boolean)) {
      expect(line, line).toMatch(/\| \d vCPU[^|]*\| `[0-9a-f]{7,40}` \| \d{4}-\d\d-\d\d \d\d:\d\d \|$/);
    }
    for (const r of reports) expect(Object.keys(SUITES)).toContain(r.suite);
  });

  it("shows a fresh suite report's scalar results, and refuses an unknown suite by name", () => {
    const report = {
      suite: 'overhead',
      settings: {
        commit: 'abc1234',
        machine: { cpus: 2, node: 'v20.1.0', started_at: '2026-12-06T10:00:00.000Z', load_avg_1m_at_start: 0.5, load_avg_1m_at_end: 1.25 },
      },
      results: { us_per_committed_token: 1.23456, sim_speedup: 812, rows: [] },
    };
    fs.writeFileSync(path.join(tmp, 'overhead.json'), JSON.stringify(report));
    expect(resultsTable(readReports(tmp))).toBe(
      [
        '| suite | figure | result | target | status | machine | commit | date (UTC) |',
        '|---|---|---|---|---|---|---|---|',
        '| `overhead` | `results.us_per_committed_token` | 1.235 |  |  | 2 vCPU, Node 20.1.0, load 1.3 | `abc1234` | 2026-12-06 10:00 |',
        '| `overhead` | `results.sim_speedup` | 812 |  |  | 2 vCPU, Node 20.1.0, load 1.3 | `abc1234` | 2026-12-06 10:00 |',
        '',
      ].join('\n'),
    );
    fs.writeFileSync(path.join(tmp, 'x.json'), JSON.stringify({ ...report, suite: 'nope' }));
    expect(() => readReports(tmp)).toThrow(/x\.json: suite "nope"/);
  });

  it('keeps a | inside a figure within its cell', () => {
    const report = {
      suite: 'dtmc-onnx',
      settings: { commit: 'abc1234', machine: { cpus: 2, started_at: '2026-12-06T10:00:00Z' } },
      results: { headline: [{ figure: 'max |error|', result: '8 %' }] },
    };
    expect(resultsTable([report]).split('\n')[2]).toBe('| `dtmc-onnx` | max \\|error\\| | 8 % |  |  | 2 vCPU | `abc1234` | 2026-12-06 10:00 |');
  });

  it('refuses a document without its markers', () => {
    expect(() => withTable('# no markers\n', '| a |\n')).toThrow(END);
  });
});
