// Resident memory measured around model loads and a warm-up step of each model's largest planned step: what the memory plan takes off the budget.
import { Cluster, type ClusterModel } from '../entry/cluster.ts';
import { createRealClock } from '../clock/clock.ts';
import { buildAlgorithm } from '../registry/algorithmSource.ts';

/** The process's resident set now, bytes. */
export function rssBytes(): number {
  return process.memoryUsage.rss();
}

/**
 * Loads one after the other, each measured as the resident growth it caused (the model as ONNX
 * Runtime holds it, the copies made while loading that stay, its thread's heap): the weight file's
 * size misses all but the first.
 */
export async function loadMeasured<T>(names: readonly string[], load: (name: string) => Promise<T>): Promise<Map<string, { value: T; bytes: number }>> {
  const out = new Map<string, { value: T; bytes: number }>();
  for (const name of names) {
    const before = rssBytes();
    const value = await load(name);
    out.set(name, { value, bytes: Math.max(0, rssBytes() - before) });
  }
  return out;
}

/** A model ready to warm up: its engine (thread or runner), the step token budget, and what sizes a prompt for it. */
export type WarmModel = ClusterModel & { maxStepTokens: number; maxContext: number; vocabSize: number };

/**
 * Runs, per model and one at a time, a request whose prompt is its whole step token budget (a
 * prefill of the largest step it will plan) and measures the resident growth: activations, logits
 * and what ORT's arena keeps. The engines begin again in the real deployment afterwards.
 */
export async function measureWorkspaces(models: readonly WarmModel[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  // every model remote: nothing runs here to measure
  if (models.length === 0) return out;
  const cluster = new Cluster({
    clock: createRealClock(),
    mode: 'async-immediate',
    prefixCache: false,
    models: models.map((m) => ({ ...m, kvCapacityTokens: Infinity })),
  });
  for (const m of models) {
    const n = Math.max(1, Math.min(m.maxStepTokens, m.maxContext - 2));
    // any ids in the vocabulary do: the cost of a step does not depend on which
    const prompt = Array.from({ length: n }, (_, i) => 3 + (i % Math.max(1, m.vocabSize - 3)));
    const key = `single:${m.name}`;
    const algorithm = buildAlgorithm({ kind: 'single', model: m.name });
    const before = rssBytes();
    const r = await cluster.submit({
      id: `warm-up-${m.name}`,
      prompt,
      maxTokens: 1,
      algorithm,
      algorithmRef: { key, source: { kind: 'single', model: m.name } },
    }).done;
    if (r.status !== 'done') throw new Error(`the warm-up step of model ${m.name} failed: ${r.error?.message ?? r.status}`);
    out.set(m.name, Math.max(0, rssBytes() - before));
  }
  for (const e of cluster.engines) if (e.core) await e.close();
  return out;
}
