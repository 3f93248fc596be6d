// docs/runtime.md lists the files of one request's life with their line counts: they exist, the counts are true, the budget holds.
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { lifeProblems, parseLife, RUNTIME_DOC, withCounts } from '../support/requestLife.ts';

const doc = fs.readFileSync(RUNTIME_DOC, 'utf8');

const fake = (budget: string, rows: string[], total: number) =>
  `x\n<!-- life budget: ${budget} -->\n| file | lines | what |\n|---|---:|---|\n${rows.join('\n')}\n| **total** | **${total}** | ${rows.length} files |\n<!-- /life -->\ny`;

describe("one request's life in docs/runtime.md", () => {
  it('lists files that exist, open with a role comment, with their true counts, within the budget (rewrite: npx tsx test/support/requestLife.ts)', () => {
    const life = parseLife(doc);
    expect(life.files.length).toBeGreaterThan(0);
    expect(lifeProblems(doc)).toEqual([]);
    expect(withCounts(doc)).toBe(doc);
  });

  it('fails on a missing file, a stale count, a wrong total, and a list over its budget', () => {
    const lines = (f: string) => ({ 'a.ts': 10, 'b.ts': 20 })[f] ?? -1;
    const head = () => '// role';
    const ok = fake('2 files, 30 lines', ['| `a.ts` | 10 | a |', '| `b.ts` | 20 | b |'], 30);
    expect(lifeProblems(ok, lines, head)).toEqual([]);
    expect(lifeProblems(fake('2 files, 30 lines', ['| `a.ts` | 10 | a |', '| `c.ts` | 20 | c |'], 30), lines, head)).toEqual([
      'c.ts: listed, but no such file',
    ]);
    expect(lifeProblems(fake('2 files, 30 lines', ['| `a.ts` | 9 | a |', '| `b.ts` | 20 | b |'], 29), lines, head)).toEqual([
      'a.ts: 10 lines, the table says 9',
    ]);
    expect(lifeProblems(fake('2 files, 30 lines', ['| `a.ts` | 10 | a |', '| `b.ts` | 20 | b |'], 31), lines, head)).toEqual([
      "the table's total 31 is not the sum of its rows",
    ]);
    expect(lifeProblems(fake('1 files, 25 lines', ['| `a.ts` | 10 | a |', '| `b.ts` | 20 | b |'], 30), lines, head)).toEqual([
      '2 files, over the budget of 1',
      '30 lines, over the budget of 25',
    ]);
    expect(lifeProblems(ok, lines, () => 'import x')).toEqual([
      'a.ts: does not open with a one-line role comment',
      'b.ts: does not open with a one-line role comment',
    ]);
  });
});
