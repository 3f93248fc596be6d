// On-policy against teacher-forced router heads at equal measured throughput: pairs from locked runs, accuracy paired on the held-out run.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { HEAD_ALGORITHMS } from './evaluate.ts';
import { comparePaired, type PairedComparison } from './pairedStats.ts';
import { mergeReports, type EvalReport } from './qualityReport.ts';

/** Equal throughput: within ± 5 % (docs/quality.md compares accuracy at it). */
export const EQUAL_TOLERANCE = 0.05;

export interface HeadPair {
  onPolicy: string;
  teacherForced: string;
  /** Each entry's tok/s over its own run's large-only (so entries from different locked turns compare). */
  onPolicyRatio: number;
  teacherForcedRatio: number;
  comparison: PairedComparison;
}

/**
 * Every on-policy / teacher-forced pair of the same algorithm whose throughput (× its run's large-only)
 * differs by at most EQUAL_TOLERANCE, compared problem by problem on `accuracy`'s bits.
 */
export function equalThroughputPairs(throughput: EvalReport, accuracy: EvalReport): HeadPair[] {
  const large = throughput.results.entries.find((e) => e.name === 'large-only')?.throughput_tok_s ?? NaN;
  const ratio = new Map(throughput.results.entries.map((e) => [e.name, e.throughput_tok_s / (e.reference_tok_s ?? large)]));
  const bits = new Map(accuracy.results.entries.filter((e) => e.correct_bits).map((e) => [e.name, [...e.correct_bits!].map((b) => b === '1')]));
  const pairs: HeadPair[] = [];
  for (const alg of HEAD_ALGORITHMS) {
    const of = (tag: string) => [...ratio.keys()].filter((n) => n.startsWith(`${tag} ${alg.symbol}=`) && bits.has(n));
    for (const a of of(alg.factory)) {
      for (const b of of(`${alg.factory} (${alg.head}-tf)`)) {
        const [ra, rb] = [ratio.get(a)!, ratio.get(b)!];
        if (!(Math.abs(ra / rb - 1) <= EQUAL_TOLERANCE)) continue;
        pairs.push({ onPolicy: a, teacherForced: b, onPolicyRatio: ra, teacherForcedRatio: rb, comparison: comparePaired(bits.get(a)!, bits.get(b)!) });
      }
    }
  }
  return pairs;
}

export function pairsTable(pairs: readonly HeadPair[]): string {
  const pts = (v: number) => `${v >= 0 ? '+' : ''}${(v * 100).toFixed(1)}`;
  const lines = [
    '| on-policy | × large-only | teacher-forced | × large-only | difference (points, 95 % CI) | only on-policy right / only teacher-forced right | McNemar p |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const p of pairs) {
    const c = p.comparison;
    lines.push(
      `| ${p.onPolicy} | ${p.onPolicyRatio.toFixed(2)} | ${p.teacherForced} | ${p.teacherForcedRatio.toFixed(2)} | ${pts(c.difference)} (${pts(c.ci_low)} to ${pts(c.ci_high)}) | ${c.only_a} / ${c.only_b} | ${c.p_value < 0.0001 ? '< 0.0001' : c.p_value.toPrecision(2)} |`,
    );
  }
  return lines.join('\n');
}

// `npx tsx runtime/eval/equalThroughput.ts LOCKED.json [MORE.json ...] --accuracy HELDOUT.json`
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const i = args.indexOf('--accuracy');
  if (i < 0 || !args[i + 1] || args.length < 3) {
    console.error('usage: npx tsx runtime/eval/equalThroughput.ts LOCKED.json [MORE.json ...] --accuracy HELDOUT.json');
    process.exit(2);
  }
  const read = (f: string) => JSON.parse(fs.readFileSync(f, 'utf8')) as EvalReport;
  const accuracy = read(args.splice(i, 2)[1]);
  console.log(pairsTable(equalThroughputPairs(mergeReports(args.map(read)), accuracy)));
}
