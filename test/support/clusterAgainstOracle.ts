// Serves prompts all at once through a batched, concurrent cluster and expects each answer to be what the sequential oracle commits.
import { expect } from 'vitest';
import type { Algorithm } from '../../shared/algorithm.ts';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import type { ModelRunner, SamplingParams } from '../../runtime/runner/modelRunner.ts';
import { runOracle } from './sequentialOracle.ts';

export interface OracleCheck {
  name: string;
  algorithm: Algorithm<unknown>;
  /** The runners the oracle reads, and the cluster too unless `served` is given. */
  runners: Record<string, ModelRunner>;
  /** The runners the cluster serves with (e.g. worker threads), when not `runners`. */
  served?: Record<string, ModelRunner>;
  prompts: number[][];
  maxTokens: number;
  sampling: (i: number) => Partial<SamplingParams>;
}

/**
 * All prompts at once (batched steps, requests away at peers, returns joining running batches), then
 * each one token for token and model for model against the oracle; the cluster ends holding no KV.
 * Returns the oracle's handoffs in all, so a caller can require that the models actually switched.
 */
export async function expectClusterMatchesOracle(c: OracleCheck): Promise<number> {
  const cluster = new Cluster({
    clock: createRealClock(),
    mode: 'async-delayed',
    retainState: true,
    maxConcurrency: 8,
    checkInvariants: true,
    models: c.algorithm.models.map((m) => ({ name: m, runner: (c.served ?? c.runners)[m] })),
  });
  const served = await Promise.all(
    c.prompts.map(
      (prompt, i) => cluster.submit({ id: `${c.name}-${i}`, prompt, maxTokens: c.maxTokens, algorithm: c.algorithm, sampling: c.sampling(i) }).done,
    ),
  );
  let handoffs = 0;
  for (const [i, prompt] of c.prompts.entries()) {
    const oracle = await runOracle(c.algorithm, c.runners, { id: `${c.name}-${i}`, prompt, maxTokens: c.maxTokens, sampling: c.sampling(i) });
    expect(served[i].status, served[i].error?.message).toBe('done');
    expect(served[i].tokens, `${c.name} prompt ${i}`).toEqual(oracle.tokens);
    expect(served[i].producedBy, `${c.name} prompt ${i}`).toEqual(oracle.producedBy);
    expect(served[i].handoffs).toBe(oracle.handoffs);
    handoffs += oracle.handoffs;
  }
  for (const l of cluster.laneStats()) expect(l.kvBytes, l.name).toBe(0);
  return handoffs;
}
