// The measuring half of dtmc-onnx: a closed loop on one real-clock cluster while the large threshold walks the sweep.
//
// The clients resubmit forever, so no measured window sees start-up or drain. Every round visits the
// settings in a fresh seeded random order (drifting background load then hits every setting alike);
// each gets a settling period, then its committed tokens are counted over a fixed wall-clock window.
// Every request step and batch wall time inside the windows is kept, tagged with its setting.
import os from 'node:os';
import path from 'node:path';
import { r2r } from '../../examples/algorithms/r2r.ts';
import { mulberry32 } from '../../shared/rng.ts';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import type { RequestHandle } from '../../runtime/entry/cluster.ts';
import { benchPrompt } from '../../runtime/loadgen/benchPrompt.ts';
import { BUNDLED_MODELS_DIR } from '../../runtime/runner/onnxAccuracy.ts';
import type { RoutingStep, TimedBatch } from '../../runtime/control/throughput/index.ts';
import { TraceRecorder } from '../../runtime/trace/traceRecorder.ts';
import { progress } from '../../runtime/util/progressLine.ts';
import { bundledModelsPresent, loadBundledRunners, simulatedRunners, type RunnerSet } from './benchRunners.ts';

export const LANES = ['small', 'large'] as const;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export interface SweepSettings {
  /** Closed-loop clients, and the batch cap of both models. */
  N: number;
  /** Large-model thresholds swept (the small model's stays 1); always includes 1, the calibration setting. */
  thresholds: number[];
  rounds: number;
  settleMs: number;
  warmupMs: number;
  windowMs: number;
  maxTokens: number;
  runners: string;
}

/** Seeded Fisher–Yates, so a run's setting order is reproducible. */
function shuffled<T>(xs: readonly T[], seed: number): T[] {
  const rand = mulberry32(seed);
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

async function runnerSet(choice: string): Promise<RunnerSet> {
  if (choice === 'simulated') return simulatedRunners(LANES);
  if (!bundledModelsPresent(BUNDLED_MODELS_DIR, LANES)) {
    throw new Error(
      `bundled ONNX models not found in ${path.relative(process.cwd(), BUNDLED_MODELS_DIR)}/{small,large}/onnx/model.onnx (or pass --runners simulated for a smoke run)`,
    );
  }
  return loadBundledRunners(BUNDLED_MODELS_DIR, LANES);
}

/** The model's inputs as the trace shows them, tagged with the setting whose window was open (null: none). */
interface ModelInputRecorder {
  steps: (RoutingStep & { setting: number })[];
  /** Every batch, counted or not: whether a counted batch overlapped the other model depends on batches launched before its window opened. */
  timed: (TimedBatch & { setting: number | null })[];
  /** The setting now measured, or null between windows. */
  setting: number | null;
}

function recordModelInputs(trace: TraceRecorder): ModelInputRecorder {
  const rec: ModelInputRecorder = { steps: [], timed: [], setting: null };
  const handoffs = new Map<string, { to: string; kept: boolean }>();
  trace.subscribe((e) => {
    if (e.type === 'batch') {
      rec.timed.push({
        setting: rec.setting,
        model: LANES.indexOf(e.model as (typeof LANES)[number]),
        batch: e.requestIds.length,
        startMs: e.start,
        endMs: e.end,
      });
    }
    if (rec.setting === null) return;
    const setting = rec.setting;
    if (e.type === 'handoff') handoffs.set(`${e.batchId}:${e.requestId}`, { to: e.to, kept: e.kept });
    if (e.type !== 'batch') return;
    for (const id of e.requestIds) {
      const key = `${e.batchId}:${id}`;
      const h = handoffs.get(key);
      handoffs.delete(key);
      rec.steps.push(
        h ? { setting, requestId: id, model: e.model, next: h.to, committed: h.kept ? 1 : 0 } : { setting, requestId: id, model: e.model, committed: 1 },
      );
    }
  });
  return rec;
}

/** The closed loop: clients that each resubmit the moment their request ends, until stopped. */
function closedLoop(cluster: Cluster, set: RunnerSet, maxTokens: number) {
  const algorithm = r2r();
  const loop = { counted: 0, failed: 0 };
  let sent = 0;
  let stopping = false;
  const live = new Set<RequestHandle>();
  const send = () => {
    const i = sent++;
    const h = cluster.submit({
      id: `c${i}`,
      prompt: set.tokenizer.encodeChat([{ role: 'user', content: benchPrompt(i) }]),
      maxTokens,
      sampling: { temperature: 0, topP: 1, topK: 0, seed: i },
      algorithm,
      onToken: () => {
        loop.counted++;
      },
      onEnd: (res) => {
        live.delete(h);
        if (res.status === 'failed') loop.failed++;
        if (!stopping) send();
      },
    });
    live.add(h);
  };
  /** Cancels what is in flight and waits until it ended. */
  const stop = async () => {
    stopping = true;
    const ending = [...live].map((h) => h.done);
    for (const h of [...live]) h.cancel();
    await Promise.allSettled(ending);
  };
  return { loop, send, stop };
}

/** What the sweep measured: committed tok/s per window, and the model inputs recorded in those windows. */
export interface Measurement {
  /** Setting → tok/s of each of its windows, in round order. */
  measured: Map<number, number[]>;
  /** Per round: setting → tok/s. */
  byRound: Map<number, number>[];
  /** 1-minute load average after each window. */
  loads: number[];
  steps: ModelInputRecorder['steps'];
  timed: ModelInputRecorder['timed'];
  runners: Record<string, unknown>;
  wallMs: number;
}

/** One in-process cluster serves the closed loop for the whole sweep; each setting gets a settling period, then a counted window. */
export async function measureThresholdSweep(s: SweepSettings): Promise<Measurement> {
  const { N, thresholds, rounds, settleMs, windowMs } = s;
  const set = await runnerSet(s.runners);
  const trace = new TraceRecorder(0);
  const cluster = new Cluster({
    clock: createRealClock(),
    mode: 'async-delayed',
    retainState: true,
    // The model has no deadline; a long one keeps the runtime live without firing in steady state.
    maxWaitMs: 60_000,
    prefixCache: false,
    maxConcurrency: N,
    trace,
    models: LANES.map((name) => ({ name, runner: set.runners.get(name)!, maxBatch: N, threshold: 1, kvCapacityTokens: Infinity })),
  });
  const rec = recordModelInputs(trace);
  const { loop, send, stop } = closedLoop(cluster, set, s.maxTokens);
  const measured = new Map<number, number[]>(thresholds.map((t) => [t, []]));
  const loads: number[] = [];
  const byRound: Map<number, number>[] = [];
  const total = rounds * thresholds.length;
  const wallStart = performance.now();
  let done = 0;
  try {
    for (let c = 0; c < N; c++) send();
    await sleep(s.warmupMs); // ONNX Runtime and JIT warm-up, at T = 1
    for (let round = 0; round < rounds; round++) {
      // A fresh random order every round: drifting background load (a shared machine) then
      // spreads over the settings instead of tracking their position in the sweep.
      const order = shuffled(thresholds, round + 1);
      byRound.push(new Map());
      for (const t of order) {
        cluster.setThresholds({ large: t });
        await sleep(settleMs);
        rec.setting = t;
        const c0 = loop.counted;
        const t0 = performance.now();
        await sleep(windowMs);
        const tokS = ((loop.counted - c0) / (performance.now() - t0)) * 1000;
        rec.setting = null;
        measured.get(t)!.push(tokS);
        byRound[round].set(t, tokS);
        loads.push(os.loadavg()[0]);
        progress(`dtmc-onnx round ${round + 1}/${rounds} T_large=${t}: ${tokS.toFixed(0)} tok/s`, ++done, total);
      }
    }
  } finally {
    await stop();
    await sleep(100); // batches already on a worker finish there; let them drain before shutdown
    await set.close();
  }
  const wallMs = performance.now() - wallStart;
  if (loop.failed > 0) console.error(`[bench] dtmc-onnx: ${loop.failed} requests failed`);
  return { measured, byRound, loads, steps: rec.steps, timed: rec.timed, runners: set.description, wallMs };
}
