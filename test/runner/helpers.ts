// Shared fixtures for the model-runner tests: which family they check and a plain unbatched greedy loop.
import fs from 'node:fs';
import path from 'node:path';
import { GREEDY, type ModelRunner, type SamplingParams } from '../../runtime/runner/modelRunner.ts';
import { NO_WANTS, type StepWants } from '../../shared/algorithm.ts';
import { type GoldenFile, heldoutQuestions as splitQuestions, readGolden as goldenOf, TINY_FAMILY_DIR } from '../support/tinyFamily.ts';

export type { GoldenFile };

/**
 * The family the golden and export tests check: the tiny fixture family (the word-problem family's folders hold
 * no golden.json); TR_MODELS_DIR runs them against a fresh export before it is committed.
 */
export const MODELS_DIR = process.env.TR_MODELS_DIR ?? TINY_FAMILY_DIR;
export const MODEL_NAMES = ['small', 'medium', 'large'].filter((m) => !process.env.TR_MODELS_DIR || fs.existsSync(path.join(MODELS_DIR, m)));
export const modelDir = (name: string): string => path.join(MODELS_DIR, name);

/** `dir` is the family folder (default MODELS_DIR). */
export const readGolden = (name: string, dir: string = MODELS_DIR): GoldenFile => goldenOf(name, dir);

export const heldoutQuestions = (n: number, dir: string = MODELS_DIR): string[] => splitQuestions(n, dir);

/** One request alone: prefill, then decode one token per step until EOS or maxNew. */
export async function soloGenerate(
  runner: ModelRunner,
  cacheId: number,
  prompt: readonly number[],
  maxNew: number,
  sampling: SamplingParams = GREEDY,
  wants: StepWants = NO_WANTS,
): Promise<number[]> {
  const out: number[] = [];
  let toks = [...prompt];
  let pos = 0;
  for (let i = 0; i < maxNew; i++) {
    const res = await runner.step([{ cacheId, requestId: `solo${cacheId}`, tokens: toks, position: pos, sampling, wants }]);
    pos += toks.length;
    const t = res.rows[0].token;
    out.push(t);
    toks = [t];
    if (runner.info.eosTokenIds.includes(t) || pos + 1 >= runner.info.maxContext) break;
  }
  runner.release(cacheId);
  return out;
}
