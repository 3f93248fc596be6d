// Routing thresholds chosen on the validation split: per router head (and R-Stitch), the cheapest grid point that keeps 99 % of large-only's accuracy.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { TokenRouterError } from '../errors.ts';
import { HEAD_ALGORITHMS, R_STITCH_GRID, headEntry, rStitchEntry, type EvalEntry, type EvalEntrySpec } from './evaluate.ts';

// R-Stitch reads no head: its points have none.
const ChosenPoint = z.object({
  factory: z.string(),
  head: z.string().optional(),
  param: z.string(),
  value: z.number(),
  accuracy: z.number(),
  large_share: z.number(),
  why: z.string(),
});
export type ChosenPoint = z.infer<typeof ChosenPoint>;

const Calibration = z.object({
  rule: z.string(),
  split: z.string(),
  large_only_accuracy: z.number(),
  chosen: z.array(ChosenPoint),
});
export type Calibration = z.infer<typeof Calibration>;

export const KEEP_RATIO = 0.99;

/**
 * Per head (on-policy and teacher-forced): among its grid points keeping ≥ 99 % of large-only's
 * accuracy, the one writing the fewest large tokens (large's share is what throughput pays for, and it
 * does not move with the machine's load); when none keeps 99 %, the most accurate. The teacher-forced
 * head also gets the point whose large share is closest to the on-policy head's choice, so the two can
 * be compared at equal cost.
 */
export function chooseThresholds(entries: readonly EvalEntry[], split: string): Calibration {
  const large = entries.find((e) => e.name === 'large-only');
  if (!large) throw new TokenRouterError('invalid_request', 'calibrating router heads needs the large-only entry in the same run');
  const target = KEEP_RATIO * large.accuracy;
  const chosen: ChosenPoint[] = [];
  const cheapest = <P extends { e: EvalEntry; share: number }>(pts: P[]): [P, string] => {
    const keep = pts.filter((p) => p.e.accuracy >= target).sort((a, b) => a.share - b.share);
    return keep.length
      ? [keep[0], 'fewest large tokens at >= 99 % of large-only']
      : [[...pts].sort((a, b) => b.e.accuracy - a.e.accuracy || a.share - b.share)[0], 'most accurate (none reaches 99 % of large-only)'];
  };
  const stitch = R_STITCH_GRID.flatMap((tau) =>
    entries.filter((e) => e.name === rStitchEntry(tau).name).map((e) => ({ e, value: tau, share: e.token_share.large ?? 0 })),
  );
  if (stitch.length) {
    const [p, why] = cheapest(stitch);
    chosen.push({ factory: 'r-stitch', param: 'tau', value: p.value, accuracy: p.e.accuracy, large_share: p.share, why });
  }
  for (const alg of HEAD_ALGORITHMS) {
    const pointsOf = (head: string) =>
      entries
        .filter((e) => e.params.head === head && alg.grid.some((v) => e.name === headEntry(alg, head, v).name))
        .map((e) => ({ e, value: e.params[alg.param] as number, share: e.token_share.large ?? 0 }));
    const mk = (head: string, p: { e: EvalEntry; value: number; share: number }, why: string): ChosenPoint => ({
      factory: alg.factory,
      head,
      param: alg.param,
      value: p.value,
      accuracy: p.e.accuracy,
      large_share: p.share,
      why,
    });
    let own: ChosenPoint | undefined;
    for (const head of [alg.head, `${alg.head}-tf`]) {
      const pts = pointsOf(head);
      if (!pts.length) continue;
      const c = mk(head, ...cheapest(pts));
      chosen.push(c);
      if (head === alg.head) own = c;
      else if (own) {
        const match = [...pts].sort((a, b) => Math.abs(a.share - own!.large_share) - Math.abs(b.share - own!.large_share))[0];
        if (match.value !== c.value) chosen.push(mk(head, match, `large share closest to ${alg.head}'s choice`));
      }
    }
  }
  return {
    rule: `per router head and for R-Stitch, the grid point with the fewest large tokens among those with accuracy >= ${KEEP_RATIO} x large-only on ${split}; else the most accurate`,
    split,
    large_only_accuracy: large.accuracy,
    chosen,
  };
}

/** The calibration file, checked (it is read from disk); undefined when absent. */
export function loadCalibration(file: string): Calibration | undefined {
  if (!fs.existsSync(file)) return undefined;
  const parsed = Calibration.safeParse(JSON.parse(fs.readFileSync(file, 'utf8')));
  if (!parsed.success)
    throw new TokenRouterError(
      'invalid_request',
      `${file}: not a router-head calibration: ${parsed.error.issues[0].path.join('.')}: ${parsed.error.issues[0].message}`,
    );
  return parsed.data;
}

/**
 * The held-out entries for the calibrated points (one per chosen head and value), each with its grid
 * neighbours when `neighbours` is set, so the report shows the sweep around the choice and the two
 * heads can be paired at equal measured throughput.
 */
export function calibratedPlan(cal: Calibration, neighbours = false): EvalEntrySpec[] {
  const out = new Map<string, EvalEntrySpec>();
  const around = (grid: readonly number[], v: number) => {
    const i = grid.indexOf(v);
    return neighbours && i >= 0 ? grid.slice(Math.max(0, i - 1), i + 2) : [v];
  };
  for (const c of cal.chosen) {
    const alg = HEAD_ALGORITHMS.find((a) => a.factory === c.factory);
    const specs =
      c.factory === 'r-stitch'
        ? around(R_STITCH_GRID, c.value).map(rStitchEntry)
        : alg && c.head
          ? around(alg.grid, c.value).map((v) => headEntry(alg, c.head!, v))
          : [];
    for (const s of specs) out.set(s.name, s);
  }
  return [...out.values()];
}

// `npx tsx runtime/eval/headCalibration.ts EVAL_JSON OUT`: the same choice from a written heads-plan report.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [, , report, out] = process.argv;
  const r = JSON.parse(fs.readFileSync(report, 'utf8')) as { settings: { split: string }; results: { entries: EvalEntry[] } };
  fs.writeFileSync(out, JSON.stringify(chooseThresholds(r.results.entries, r.settings.split), null, 1) + '\n');
  console.log(`wrote ${out}`);
}
