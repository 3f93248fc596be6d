// `npm run bench` writes every suite's {suite, settings, results} through one writer, tables included.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main, SUITE_FLAGS, SUITES, usage } from './main.ts';
import { markdownTable, textTable } from '../../runtime/util/table.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-bench-main-'));
const before = process.env.TR_RESULTS_DIR;
process.env.TR_RESULTS_DIR = dir;
afterAll(() => {
  if (before === undefined) delete process.env.TR_RESULTS_DIR;
  else process.env.TR_RESULTS_DIR = before;
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('bench main', () => {
  it('docs/benchmarks.md lists every suite in its table (it listed 8 of 18)', () => {
    const doc = fs.readFileSync(path.join(import.meta.dirname, '../../docs/benchmarks.md'), 'utf8');
    for (const name of Object.keys(SUITES)) expect(doc, name).toContain(`| \`${name}\` |`);
  });

  it('--help lists every suite flag in lines a terminal shows whole (it ended with 60 flags on one line)', () => {
    const text = usage();
    const long = text.split('\n').filter((l) => (l.match(/ --[a-z]/g) ?? []).length > 3 && l.length > 100);
    expect(long).toEqual([]);
    for (const f of SUITE_FLAGS) expect(text).toMatch(new RegExp(`(^| )--${f}( |$)`, 'm'));
  });

  it('accepts every flag a suite reads (predict read --live-rounds, which the flag parser refused)', () => {
    // the suites, beside their tests in test/bench
    const benchDir = path.join(import.meta.dirname, '.');
    const read = new Set<string>();
    for (const file of fs.readdirSync(benchDir).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))) {
      const src = fs.readFileSync(path.join(benchDir, file), 'utf8');
      // SuiteFlags reads (f.num('x'), flags.sized('x', …)), raw reads (flags['x'], opts.flags?.['x']) and dotted ones (opts.flags.runs)
      for (const m of src.matchAll(/\.(?:num|nums|str|list|bool|sized)\('([a-z0-9-]+)'/g)) read.add(m[1]);
      for (const m of src.matchAll(/flags\??\.?\['([a-z0-9-]+)'\]/g)) read.add(m[1]);
      for (const m of src.matchAll(/flags\.([a-z][a-z0-9]*)\b(?!\()/g)) read.add(m[1]);
    }
    expect(read.size).toBeGreaterThan(40);
    expect([...read].filter((f) => !(SUITE_FLAGS as readonly string[]).includes(f)).sort()).toEqual([]);
  });

  it('writes report.json, results.md and --json for a suite that returns no tables of its own', async () => {
    const json = path.join(dir, 'out', 'overhead.json');
    expect(await main(['overhead', '--quick', '1', '--json', json, '--tag', 't1'])).toBe(0);
    const report = JSON.parse(fs.readFileSync(path.join(dir, 'overhead-t1', 'report.json'), 'utf8')) as {
      suite: string;
      settings: Record<string, unknown>;
      results: Record<string, unknown>;
      output?: unknown;
    };
    expect(report.suite).toBe('overhead');
    expect(Object.keys(report).sort()).toEqual(['results', 'settings', 'suite']);
    expect(report.settings.machine).toMatchObject({ cpus: os.cpus().length });
    expect(Object.keys(report.results).length).toBeGreaterThan(0);
    expect(JSON.parse(fs.readFileSync(json, 'utf8'))).toEqual(report);
    expect(fs.readFileSync(path.join(dir, 'overhead-t1', 'results.md'), 'utf8')).toMatch(/^# overhead\n/);
    // the suite's quick run is 27 s alone and went past 60 s twice in a full `npm test` beside a training run
  }, 180_000);

  it('refuses a bad serving flag before loading a suite, in one line', async () => {
    for (const args of [
      ['--client', 'remote'],
      ['--request-rate', '0'],
      ['--goodput', 'ttft'],
      ['--placement', 'gpu'],
    ]) {
      expect(await main(['serving', ...args]), args.join(' ')).toBe(2);
    }
  });

  it('refuses a bad --tag before running the suite', async () => {
    expect(await main(['overhead', '--quick', '1', '--tag', '../x'])).toBe(2);
    expect(fs.existsSync(path.join(dir, 'x'))).toBe(false);
  });
});

describe('the one table formatter', () => {
  const rows = [
    { model: 'small', tok_s: 1234.5678, share: 0.25 },
    { model: 'large', tok_s: 12, share: 0.5, note: 'late column' },
  ];
  it('aligns text and markdown alike, with columns from every row', () => {
    expect(textTable(rows)).toBe(
      [
        'model   tok_s  share         note',
        '-----  ------  -----  -----------',
        'small  1234.6  0.250             ',
        'large      12  0.500  late column',
        '',
      ].join('\n'),
    );
    expect(markdownTable(rows)).toBe(
      '| model | tok_s | share | note |\n|---|---:|---:|---|\n| small | 1234.6 | 0.250 |  |\n| large | 12 | 0.500 | late column |\n',
    );
  });
});
