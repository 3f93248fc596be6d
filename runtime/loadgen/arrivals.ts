// Open-loop arrival schedules as vLLM's benchmark_serving draws them: gamma inter-arrival gaps (burstiness 1 = Poisson), rate ∞ = all at once.
import type { Rng } from '../../shared/rng.ts';

/** A standard normal draw (Box–Muller); 1 − u keeps the logarithm's argument in (0, 1]. */
function normal(rng: Rng): number {
  return Math.sqrt(-2 * Math.log(1 - rng())) * Math.cos(2 * Math.PI * rng());
}

/** Gamma(shape, 1) by Marsaglia–Tsang; shapes below 1 use the boost Gamma(k + 1)·U^(1/k). */
function gamma(shape: number, rng: Rng): number {
  if (shape < 1) return gamma(shape + 1, rng) * (1 - rng()) ** (1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number;
    let v: number;
    do {
      x = normal(rng);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const u = 1 - rng();
    if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v;
  }
}

/**
 * Send times (ms from the start of the measured phase) of `n` requests at `rateRps` on average:
 * request 0 at 0, then gaps ~ Gamma(k, θ = 1/(k·rate)), whose mean is 1/rate and whose coefficient
 * of variation is 1/√k (k = 1: exponential gaps, a Poisson process; k < 1 burstier, k > 1 steadier).
 */
export function arrivalTimesMs(n: number, rateRps: number, burstiness: number, rng: Rng): number[] {
  if (!(rateRps > 0)) throw new RangeError(`request rate must be > 0 (Infinity: all at once), got ${rateRps}`);
  if (!(burstiness > 0 && Number.isFinite(burstiness))) throw new RangeError(`burstiness must be a finite number > 0, got ${burstiness}`);
  const times = new Array<number>(n).fill(0);
  if (rateRps === Infinity) return times;
  const scaleMs = 1000 / (burstiness * rateRps);
  for (let i = 1; i < n; i++) times[i] = times[i - 1] + gamma(burstiness, rng) * scaleMs;
  return times;
}
