// qualityTables renders an eval report's own numbers: accuracy, the interval against large-only, the mark and the throughput ratio.
import { describe, expect, it } from 'vitest';
import { mergeReports, qualityTables } from '../../runtime/eval/qualityReport.ts';

const entry = (name: string, kind: string, accuracy: number, tok: number) => ({
  name,
  kind: kind as 'single',
  params: {},
  accuracy,
  throughput_tok_s: tok,
  mean_latency_ms: 50,
  token_share: { large: 1 },
  handoffs_per_request: 0,
  problems: 100,
});

describe('qualityTables', () => {
  it('writes one row per serving point, a row per mix and the error overlap', () => {
    const md = qualityTables({
      settings: {
        split: 'heldout',
        problems: 100,
        split_size: 2000,
        split_file: 'examples/models/heldout.json',
        split_seed: 7,
        maxTokens: 64,
        concurrency: 8,
        wallSeconds: 12.4,
        load_average_1m: { start: 3.21, end: 4 },
      },
      results: { entries: [entry('large-only', 'single', 0.9, 1000), entry('fast', 'token-level', 0.85, 2500)] },
      points: [
        { name: 'large-only', kind: 'single', accuracy: 0.9, tok_s: 1000, p_value: null, ci_low: null, ci_high: null, versus_reference: 'reference' },
        { name: 'fast', kind: 'token-level', accuracy: 0.85, tok_s: 2500, p_value: 0.0312, ci_low: -0.09, ci_high: -0.01, versus_reference: 'below' },
        {
          name: 'mix',
          kind: 'token-level',
          accuracy: 0.91,
          tok_s: null,
          measured: 'reference loop',
          weights: { large: 0.8, medium: 0.2 },
          rule: 'linear',
          consult_share: 0.0123,
          changed_share: 0.0004,
          p_value: 1,
          ci_low: -0.01,
          ci_high: 0.03,
          versus_reference: 'same',
          best_member: { name: 'large-only', accuracy: 0.9, p_value: 1, ci_low: -0.01, ci_high: 0.03, versus: 'same' },
        },
      ],
      error_overlap: { reference: 'large-only', reference_wrong: 10, right_instead: { 'medium-only': 2 }, any_right: 2 },
    });
    expect(md).toContain('split heldout (100 of 2000 problems, `examples/models/heldout.json`, seed 7)');
    expect(md).toContain('load average (1 min) 3.2 at the start, 4.0 at the end');
    expect(md).toContain('| 2 | fast | token-level | 85.0% | -5.0 (-9.0 to -1.0) | 0.031 | ▼ below | 2500 | 2.50 | 50 | 0.00 | large 100% |');
    expect(md).toContain('| mix | linear | 91.0% | +1.0 (-1.0 to +3.0) | 1.0 | large-only 90.0% |');
    expect(md).toContain('1.23% | 0.040% |');
    expect(md).toContain('large-only is wrong on 10 of 100 problems; of those, medium-only right on 2; at least one of them right on 2.');
  });
});

describe('the per-problem overlap', () => {
  it("counts each pattern of right and wrong among the singles, and each routed entry's fixes and breaks against large-only", () => {
    const bits = (name: string, kind: string, b: string) => ({ ...entry(name, kind, 0, 1), correct_bits: b });
    const md = qualityTables({
      settings: { split: 'heldout', problems: 5 },
      results: { entries: [bits('small-only', 'single', '10010'), bits('large-only', 'single', '11100'), bits('route', 'token-level', '11011')] },
      points: [],
    });
    expect(md).toContain('| small-only | large-only | problems |');
    expect(md).toContain('| ✓ | ✓ | 1 |');
    expect(md).toContain('| ✗ | ✓ | 2 |');
    expect(md).toContain('| ✓ | ✗ | 1 |');
    expect(md).toContain('| ✗ | ✗ | 1 |');
    // route: right on problems 4 and 5 where large is wrong; wrong on problem 3 where large is right
    expect(md).toContain('| route | 2 | 1 |');
  });
});

describe('mergeReports', () => {
  const run = (entries: { name: string; accuracy: number; tok_s: number }[], wall: number) => ({
    settings: { split: 'heldout', problems: 10, maxTokens: 64, wallSeconds: wall, load_average_1m: { start: 1, end: 2 } },
    results: {
      entries: entries.map((e) => ({
        name: e.name,
        kind: 'single' as const,
        params: {},
        accuracy: e.accuracy,
        throughput_tok_s: e.tok_s,
        mean_latency_ms: 1,
        token_share: { large: 1 },
        handoffs_per_request: 0,
        problems: 10,
      })),
    },
    points: entries.map((e) => ({
      name: e.name,
      kind: 'single' as const,
      accuracy: e.accuracy,
      tok_s: e.tok_s,
      p_value: null,
      ci_low: null,
      ci_high: null,
      versus_reference: 'reference' as const,
    })),
    error_overlap: null,
  });

  it('joins runs by name, keeps each entry’s own large-only throughput and sums the wall times', () => {
    const m = mergeReports([
      run(
        [
          { name: 'large-only', accuracy: 0.9, tok_s: 100 },
          { name: 'a', accuracy: 0.5, tok_s: 300 },
        ],
        5,
      ),
      run(
        [
          { name: 'large-only', accuracy: 0.9, tok_s: 50 },
          { name: 'b', accuracy: 0.8, tok_s: 200 },
        ],
        7,
      ),
    ]);
    expect(m.results.entries.map((e) => [e.name, e.reference_tok_s])).toEqual([
      ['large-only', 100],
      ['a', 100],
      ['b', 50],
    ]);
    expect(m.settings.wallSeconds).toBe(12);
    // b ran at 4x its own run's large-only, not 2x the first run's
    expect(qualityTables(m)).toMatch(/\| b \| single \| 80\.0% .*\| 200 \| 4\.00 \|/);
  });

  it('refuses runs whose large-only disagree, or on another split', () => {
    expect(() => mergeReports([run([{ name: 'large-only', accuracy: 0.9, tok_s: 1 }], 1), run([{ name: 'large-only', accuracy: 0.8, tok_s: 1 }], 1)])).toThrow(
      /large-only differs/,
    );
    const other = run([], 1);
    other.settings.split = 'validation';
    expect(() => mergeReports([run([], 1), other])).toThrow(/different splits/);
  });
});
