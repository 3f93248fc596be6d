// Equal-throughput pairing: only on-policy / teacher-forced pairs within ± 5 % of each other's tok/s, compared on the held-out bits.
import { describe, expect, it } from 'vitest';
import { equalThroughputPairs, pairsTable } from '../../runtime/eval/equalThroughput.ts';

const entry = (name: string, tok: number, bits?: string) => ({
  name,
  kind: 'token-level' as const,
  params: {},
  accuracy: 0,
  throughput_tok_s: tok,
  mean_latency_ms: 1,
  token_share: {},
  handoffs_per_request: 0,
  problems: 4,
  correct_bits: bits,
});
const report = (entries: ReturnType<typeof entry>[]) => ({ settings: { split: 'heldout', problems: 4, maxTokens: 64 }, results: { entries }, points: [] });

describe('equalThroughputPairs', () => {
  const locked = report([
    entry('large-only', 100),
    entry('citer τ=0.99', 300),
    entry('citer (citer-tf) τ=0.98', 310),
    entry('citer (citer-tf) τ=0.99', 250),
    entry('r2r τ=0.01', 300),
  ]);
  const heldout = report([
    entry('citer τ=0.99', 0, '1110'),
    entry('citer (citer-tf) τ=0.98', 0, '1000'),
    entry('citer (citer-tf) τ=0.99', 0, '1111'),
    entry('r2r τ=0.01', 0, '1111'),
  ]);

  it('pairs the heads of one algorithm within 5 % of each other (3.00 against 3.10), not 3.00 against 2.50, nor across algorithms', () => {
    const pairs = equalThroughputPairs(locked, heldout);
    expect(pairs.map((p) => [p.onPolicy, p.teacherForced])).toEqual([['citer τ=0.99', 'citer (citer-tf) τ=0.98']]);
    expect(pairs[0].comparison).toMatchObject({ only_a: 2, only_b: 0, difference: 0.5 });
    expect(pairsTable(pairs)).toContain('| citer τ=0.99 | 3.00 | citer (citer-tf) τ=0.98 | 3.10 | +50.0 (');
  });
});
