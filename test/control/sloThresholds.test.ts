// thresholds: "auto" under scheduling.slo: when the arrival rate doubles halfway, the controller re-picks thresholds and deadline that meet the p99 TPOT bound again, and the trace marks the change.
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../runtime/clock/virtualClock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { arrivalTimesMs } from '../../runtime/loadgen/arrivals.ts';
import { SimRunner } from '../../runtime/runner/simRunner.ts';
import { AutoThresholds } from '../../runtime/control/autoThresholds.ts';
import { dtmcOptimiser } from '../../runtime/control/dtmcOptimiser.ts';
import { markovAlgorithm, r2rMarkov } from '../../runtime/sim/markovAlgorithm.ts';
import { TraceRecorder } from '../../runtime/trace/traceRecorder.ts';
import { percentile } from '../../runtime/util/stats.ts';
import { mulberry32 } from '../../shared/rng.ts';

const N = 4;
const LAT = [6.0, 27.9];
const OUT = 64;
const SLO = { tpotMs: 27.5 };
const HALF = 250_000;
const END = 600_000;
/** How long after the doubling the controller may take: two estimate windows (the rate estimate needs one to settle). */
const BOUND_MS = 120_000;

interface Sent {
  at: number;
  first: number;
  end: number;
  tokens: number;
}

function run(auto: boolean) {
  const clock = new VirtualClock();
  const trace = new TraceRecorder(5000);
  const c = new Cluster({
    clock,
    mode: 'async-delayed',
    maxConcurrency: N,
    maxWaitMs: 20,
    trace,
    models: ['small', 'large'].map((name, i) => ({ name, runner: new SimRunner({ name, latency: () => LAT[i] }), maxBatch: N, threshold: 1 })),
  });
  const configs: { t: number; large: number; maxWaitMs: number }[] = [];
  trace.subscribe((e) => {
    if (e.type === 'config') configs.push({ t: e.t, large: e.thresholds.large, maxWaitMs: e.maxWaitMs });
  });
  const ctl = auto
    ? new AutoThresholds(c, { optimise: dtmcOptimiser, everyMs: 5000, windowMs: 60_000, hysteresis: 0.03, maxBatchCap: N, fixed: { small: 1 }, slo: SLO })
    : null;
  if (ctl) {
    trace.subscribe(ctl.onEvent);
    ctl.start();
  }
  // 0.8 req/s, then 1.6 req/s from HALF on (Poisson both).
  const rng = mulberry32(5);
  const times = [
    ...arrivalTimesMs(Math.round((HALF / 1000) * 0.8), 0.8, 1, rng),
    ...arrivalTimesMs(Math.round(((END - HALF) / 1000) * 1.6), 1.6, 1, rng).map((t) => HALF + t),
  ];
  const sent: Sent[] = [];
  const alg = markovAlgorithm(r2rMarkov(0.35));
  times.forEach((at, i) =>
    clock.setTimeout(() => {
      const s: Sent = { at, first: NaN, end: NaN, tokens: 0 };
      sent.push(s);
      c.submit({
        id: `r${i}`,
        prompt: [4, 5, 6, 7],
        maxTokens: OUT,
        sampling: { seed: i },
        algorithm: alg,
        onToken: () => Number.isNaN(s.first) && (s.first = clock.now()),
        onEnd: (r) => ((s.end = r.endedAt), (s.tokens = r.tokens.length)),
      });
    }, at),
  );
  clock.run({ stop: () => clock.now() >= END + 60_000 || (sent.length === times.length && sent.every((s) => !Number.isNaN(s.end))) });
  ctl?.stop();
  const p99Tpot = (from: number, to: number) =>
    percentile(
      sent.filter((s) => s.at >= from && s.at < to && s.tokens > 1).map((s) => (s.end - s.first) / (s.tokens - 1)),
      99,
    );
  return { ctl, configs, p99Tpot };
}

describe('auto thresholds under an SLO', () => {
  it('follow a doubling of the arrival rate back under the p99 TPOT bound, within a bounded time', () => {
    const fixed = run(false);
    const auto = run(true);
    const ctl = auto.ctl!;
    // Left at thresholds 1, the doubled rate breaks the SLO: something must move.
    expect(fixed.p99Tpot(HALF + BOUND_MS, END)).toBeGreaterThan(SLO.tpotMs);
    // Unless the controller already moved before the doubling to settings that also meet the SLO at the
    // higher rate, it has to move after it, and within the bound.
    const inForce = auto.configs.filter((cfg) => cfg.t < HALF).at(-1) ?? { large: 1 };
    const after = ctl.changes.filter((ch) => ch.t >= HALF);
    if (inForce.large === 1) {
      expect(after.length).toBeGreaterThanOrEqual(1);
      expect(after[0].t - HALF).toBeLessThanOrEqual(BOUND_MS);
    }
    const settled = ctl.changes.at(-1)!;
    expect(settled.meetsSlo).toBe(true);
    expect(settled.to[1]).toBeGreaterThan(1);
    // The trace (what the timeline draws) marks each change with the settings it made.
    for (const ch of ctl.changes) expect(auto.configs.some((cfg) => cfg.t === ch.t && cfg.large === ch.to[1] && cfg.maxWaitMs === ch.maxWaitMs!.to)).toBe(true);
    // Requests arriving once the controller has had its bounded time meet the SLO again.
    expect(auto.p99Tpot(HALF + BOUND_MS, END)).toBeLessThanOrEqual(SLO.tpotMs);
    expect(auto.p99Tpot(0, HALF)).toBeLessThanOrEqual(SLO.tpotMs);
  }, 240_000);
});
