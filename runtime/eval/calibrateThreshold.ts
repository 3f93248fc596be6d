// Chooses a routing threshold for a target share of tokens on one model: bisection over measured trials, the share being monotone in the threshold.
import type { CalibrationTrial, ThresholdSpace } from '../../shared/api/calibrate.ts';

export interface Calibration {
  value: number;
  share: number;
  accuracy: number;
  reached: boolean;
  trials: CalibrationTrial[];
}

/** The scale bisection halves, and back; a value is rounded to 3 significant digits on that scale so the one reported is the one measured. */
function scale(space: ThresholdSpace) {
  switch (space.scale) {
    case 'log':
      return { to: Math.log, from: (t: number) => Number(Math.exp(t).toPrecision(3)) };
    case 'log1m':
      return { to: (v: number) => Math.log(1 - v), from: (t: number) => 1 - Number(Math.exp(t).toPrecision(3)) };
    default:
      return { to: (v: number) => v, from: (t: number) => Number(t.toPrecision(3)) };
  }
}

/**
 * Measures the range's two ends, then halves the bracket holding the target `iterations` times.
 * The chosen value is the trial whose share came closest; `reached` is false when the target lies
 * outside what the range's ends give (the nearer end is chosen).
 */
export async function calibrateThreshold(
  space: ThresholdSpace,
  target: number,
  iterations: number,
  measure: (value: number) => Promise<{ share: number; accuracy: number }>,
): Promise<Calibration> {
  const { to, from } = scale(space);
  const trials: CalibrationTrial[] = [];
  const trial = async (t: number) => {
    const value = from(t);
    const seen = trials.find((x) => x.value === value);
    if (seen) return seen;
    const r = await measure(value);
    const x = { value, share: r.share, accuracy: r.accuracy };
    trials.push(x);
    return x;
  };
  let a = to(space.low);
  let b = to(space.high);
  let fa = await trial(a);
  const fb = await trial(b);
  const reached = (fa.share - target) * (fb.share - target) <= 0;
  if (reached) {
    for (let i = 0; i < iterations; i++) {
      const m = (a + b) / 2;
      const fm = await trial(m);
      if ((fm.share - target) * (fa.share - target) > 0) {
        a = m;
        fa = fm;
      } else b = m;
    }
  }
  const best = trials.reduce((p, x) => (Math.abs(x.share - target) < Math.abs(p.share - target) ? x : p));
  return { ...best, reached, trials };
}
