// The model runners a serving benchmark drives: the bundled ONNX models when exported, else simulated stand-ins.
import fs from 'node:fs';
import path from 'node:path';
import { BUNDLED_MODELS_DIR } from '../../runtime/runner/onnxAccuracy.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { SimRunner } from '../../runtime/runner/simRunner.ts';
import { CHAR_VOCAB, charTokenizer } from '../../runtime/runner/charTokenizer.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { WorkerRunner } from '../../runtime/runner/workerRunner.ts';
import { mix } from '../../runtime/util/hash.ts';
import { MeteredRunner } from './meteredRunner.ts';
import { ThreadEngine } from '../../runtime/transport/threadEngine.ts';

export const MODEL_NAMES = ['small', 'medium', 'large'] as const;

export interface RunnerSet {
  kind: 'bundled' | 'simulated';
  /** Runners by model (folder) name, for engines on the entry's thread (placement in-process); shared by every server a suite starts. */
  runners: Map<string, MeteredRunner>;
  /** The same models each in an engine thread (placement thread, what `npm start` runs), when the set has them. */
  threads?: Map<string, ThreadEngine>;
  tokenizer: TextTokenizer;
  /** Smallest context window among the models. */
  maxContext: number;
  /** What a reader needs to know about the runners, for `settings`. */
  description: Record<string, unknown>;
  close(): Promise<void>;
}

/** True when every bundled model has its ONNX export (training writes them last). */
export function bundledModelsPresent(dir = BUNDLED_MODELS_DIR, names: readonly string[] = MODEL_NAMES): boolean {
  return names.every((n) => fs.existsSync(path.join(dir, n, 'onnx', 'model.onnx')));
}

/** One ONNX Runtime worker thread per model (intra-op threads 1 unless asked), as `npm start` runs them. */
export async function loadBundledRunners(dir = BUNDLED_MODELS_DIR, names: readonly string[] = MODEL_NAMES, intraOpNumThreads = 1): Promise<RunnerSet> {
  const folders = names.map((n) => loadModelFolder(path.join(dir, n)));
  const [workers, engines] = await Promise.all([
    Promise.all(folders.map((f, i) => WorkerRunner.start(f.dir, { intraOpNumThreads, name: names[i] }))),
    Promise.all(folders.map((f, i) => ThreadEngine.start(names[i], { kind: 'onnx', folder: f.dir, opts: { intraOpNumThreads, name: names[i] } }))),
  ]);
  const runners = new Map(workers.map((w, i) => [names[i], new MeteredRunner(w, { label: names[i] })]));
  const threads = new Map(engines.map((t, i) => [names[i], t]));
  return {
    kind: 'bundled',
    runners,
    threads,
    tokenizer: TextTokenizer.fromFolder(folders[0]),
    maxContext: Math.min(...workers.map((w) => w.info.maxContext)),
    description: {
      runners: `bundled ONNX models, one worker thread each (the model alone, or with its engine under --placement thread), intraOpNumThreads ${intraOpNumThreads}`,
      models_dir: path.relative(process.cwd(), dir),
      models: Object.fromEntries(
        folders.map((f, i) => [
          names[i],
          { layers: f.config.numLayers, hidden: f.config.hiddenSize, max_context: f.config.maxContext, heads: Object.keys(f.routers) },
        ]),
      ),
    },
    close: async () => {
      await Promise.all([...[...runners.values()].map((r) => r.shutdown()), ...engines.map((t) => t.close())]);
    },
  };
}

/** Real-time step cost of the simulated stand-ins: base ms, ms per extra row, ms per prefilled token. */
export const SIM_SERVING_LATENCY: Record<string, { base: number; perRow: number; perToken: number }> = {
  small: { base: 1.0, perRow: 0.05, perToken: 0.01 },
  medium: { base: 2.0, perRow: 0.1, perToken: 0.02 },
  large: { base: 4.5, perRow: 0.2, perToken: 0.05 },
};

/**
 * Simulated runners on the real clock with the bundled vocabulary: digit tokens, entropy and router
 * heads drawn from the context hash (so R-Stitch, CITER, R2R and Co-LLM really switch), no EOS.
 * Used when the ONNX exports are missing, and for smoke runs.
 */
export function simulatedRunners(names: readonly string[] = MODEL_NAMES): RunnerSet {
  const runners = new Map<string, MeteredRunner>();
  for (const name of names) {
    const lat = SIM_SERVING_LATENCY[name] ?? SIM_SERVING_LATENCY.large;
    const salt = name.length * 7919;
    const sim = new SimRunner({
      name,
      vocabSize: CHAR_VOCAB.length,
      eosTokenIds: [2],
      maxContext: 256,
      kvBytesPerToken: 4096,
      latency: (b, fed) => lat.base + lat.perRow * b + lat.perToken * Math.max(0, fed - b),
      next: (ctx) => {
        const h = mix(ctx.contextHash, salt);
        const entropy = ((h >>> 4) % 1000) / 10000; // 0 … 0.1, around R-Stitch's τ = 0.03
        return { token: 4 + (h % 10), entropy, maxProb: 1 - entropy, heads: { citer: 1 - entropy * 1.5, r2r: entropy * 8, colm: entropy * 2 } };
      },
    });
    runners.set(name, new MeteredRunner(sim, { label: name }));
  }
  return {
    kind: 'simulated',
    runners,
    tokenizer: charTokenizer(),
    maxContext: 256,
    description: { runners: 'simulated (bundled models not exported yet): real-clock SimRunner', latency_ms: SIM_SERVING_LATENCY },
    close: async () => {},
  };
}

/** `--runners bundled|simulated|auto` (auto: bundled when exported); `intraOpNumThreads`: the bundled models' ONNX Runtime threads (the server's `models[].intraOpNumThreads`, default 1). */
export async function loadRunnerSet(choice: string | undefined, intraOpNumThreads = 1): Promise<RunnerSet> {
  const c = choice ?? 'auto';
  if (c === 'simulated' || c === 'sim') return simulatedRunners();
  if (c === 'bundled' || bundledModelsPresent()) return loadBundledRunners(BUNDLED_MODELS_DIR, MODEL_NAMES, intraOpNumThreads);
  if (c !== 'auto') throw new Error(`--runners must be bundled, simulated or auto, got "${c}"`);
  console.error('[bench] bundled ONNX models not found in examples/models/*/onnx/model.onnx: using simulated runners');
  return simulatedRunners();
}
