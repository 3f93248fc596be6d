// Shared fixtures for the model-runner tests: where the bundled models are and a plain unbatched greedy loop.
import fs from 'node:fs';
import path from 'node:path';
import { GREEDY, type ModelRunner, type SamplingParams } from '../../runtime/runner/modelRunner.ts';
import { NO_WANTS, type StepWants } from '../../shared/algorithm.ts';
import { BUNDLED_MODELS_DIR } from '../../runtime/runner/onnxAccuracy.ts';

/** TR_MODELS_DIR lets the suite run against a fresh export before it is committed. */
export const MODELS_DIR = process.env.TR_MODELS_DIR ?? BUNDLED_MODELS_DIR;
export const MODEL_NAMES = ['small', 'medium', 'large'].filter((m) => !process.env.TR_MODELS_DIR || fs.existsSync(path.join(MODELS_DIR, m)));
export const modelDir = (name: string): string => path.join(MODELS_DIR, name);

export interface GoldenFile {
  eos_token_id: number;
  max_new_tokens: number;
  rows: { prompt: string; input_ids: number[]; output_ids: number[] }[];
}

/** `dir` is the family folder (default the bundled family, or TR_MODELS_DIR). */
export function readGolden(name: string, dir: string = MODELS_DIR): GoldenFile {
  return JSON.parse(fs.readFileSync(path.join(dir, name, 'golden.json'), 'utf8')) as GoldenFile;
}

export function heldoutQuestions(n: number, dir: string = MODELS_DIR): string[] {
  const h = JSON.parse(fs.readFileSync(path.join(dir, 'heldout.json'), 'utf8')) as { rows: { question: string }[] };
  return h.rows.slice(0, n).map((r) => r.question);
}

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
