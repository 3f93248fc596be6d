// Held-out accuracy of the bundled models on a task (default the default task), measured through OnnxRunner (`npx tsx runtime/runner/onnxAccuracy.ts [--task T]`).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { GREEDY, type ModelRunner } from './modelRunner.ts';
import { NO_WANTS } from '../../shared/algorithm.ts';
import { OnnxRunner } from './onnxRunner.ts';
import { TextTokenizer } from './tokenizer.ts';
import { loadModelFolder } from './modelFolder.ts';
import { chatOf, DEFAULT_TASK, loadTask } from '../eval/loadTask.ts';

export const BUNDLED_MODELS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../examples/models');

/**
 * Greedy generation for many prompts with continuous batching: up to `batch` requests in flight,
 * a finished one is replaced by the next prompt mid-decode (so rows mix prefill and decode).
 */
export async function generateGreedy(
  runner: ModelRunner,
  prompts: readonly (readonly number[])[],
  opts: { batch?: number; maxNew?: number } = {},
): Promise<number[][]> {
  const batch = opts.batch ?? 32;
  const maxNew = opts.maxNew ?? 64;
  const eos = runner.info.eosTokenIds;
  const outs: number[][] = prompts.map(() => []);
  type Live = { idx: number; pos: number; next: number[] };
  const live: Live[] = [];
  let nextPrompt = 0;
  while (nextPrompt < prompts.length || live.length) {
    while (live.length < batch && nextPrompt < prompts.length) {
      live.push({ idx: nextPrompt, pos: 0, next: [...prompts[nextPrompt]] });
      nextPrompt++;
    }
    const res = await runner.step(
      live.map((l) => ({ cacheId: l.idx, requestId: `q${l.idx}`, tokens: l.next, position: l.pos, sampling: GREEDY, wants: NO_WANTS })),
    );
    for (let i = live.length - 1; i >= 0; i--) {
      const l = live[i];
      const t = res.rows[i].token;
      l.pos += l.next.length;
      outs[l.idx].push(t);
      l.next = [t];
      if (eos.includes(t) || outs[l.idx].length >= maxNew || l.pos + 1 >= runner.info.maxContext) {
        runner.release(l.idx);
        live.splice(i, 1);
      }
    }
  }
  return outs;
}

/** The number after the last '=' of a worked answer (the graded final answer). */
export function finalAnswer(text: string): string | null {
  const t = text.trim();
  const i = t.lastIndexOf('=');
  return i < 0 ? null : t.slice(i + 1);
}

export interface AccuracyResult {
  model: string;
  n: number;
  correct: number;
  accuracy: number;
  seconds: number;
}

/** The folder's family's held-out split of `task` (a bundled name or path; a split-file task reads the folder's parent), greedy, graded by the task. */
export async function heldoutAccuracy(
  folder: string,
  opts: { n?: number; batch?: number; intraOpNumThreads?: number; task?: string; maxNew?: number } = {},
): Promise<AccuracyResult> {
  const task = loadTask(opts.task ?? DEFAULT_TASK, path.dirname(path.resolve(folder)));
  const all = task.split('heldout').problems;
  const rows = all.slice(0, opts.n ?? all.length);
  const mf = loadModelFolder(folder);
  const tok = TextTokenizer.fromFolder(mf);
  const runner = await OnnxRunner.load(folder, { intraOpNumThreads: opts.intraOpNumThreads ?? 1 });
  const t0 = performance.now();
  const outs = await generateGreedy(
    runner,
    rows.map((r) => tok.encodeChat(chatOf(r))),
    { batch: opts.batch ?? 32, maxNew: opts.maxNew ?? 128 },
  );
  const seconds = (performance.now() - t0) / 1000;
  await runner.close();
  let correct = 0;
  rows.forEach((r, i) => {
    if (task.grade(tok.decode(outs[i]), r.answer)) correct++;
  });
  return { model: mf.name, n: rows.length, correct, accuracy: correct / rows.length, seconds };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const flag = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const n = flag('--n') === undefined ? undefined : Number(flag('--n'));
  const task = flag('--task');
  const models = args.filter((a, i) => !a.startsWith('--') && !['--n', '--task'].includes(args[i - 1]));
  for (const m of models.length ? models : ['small', 'medium', 'large']) {
    const folder = m.includes('/') ? m : path.join(BUNDLED_MODELS_DIR, m);
    const r = await heldoutAccuracy(folder, { n, task });
    console.log(
      `${r.model}: ${r.correct}/${r.n} = ${(100 * r.accuracy).toFixed(1)}% correct (task ${task ?? DEFAULT_TASK}, greedy, ONNX Runtime, ${r.seconds.toFixed(1)} s)`,
    );
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
