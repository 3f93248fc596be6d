// Held-out exact-match accuracy of the bundled models, measured through OnnxRunner (re-runnable: `npx tsx runtime/runner/onnxAccuracy.ts`).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { GREEDY, type ModelRunner } from './modelRunner.ts';
import { NO_WANTS } from '../../shared/algorithm.ts';
import { OnnxRunner } from './onnxRunner.ts';
import { TextTokenizer } from './tokenizer.ts';
import { loadModelFolder } from './modelFolder.ts';

export const BUNDLED_MODELS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../examples/models');

export interface HeldoutRow {
  question: string;
  answer: string;
}

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

export async function heldoutAccuracy(folder: string, opts: { n?: number; batch?: number; intraOpNumThreads?: number } = {}): Promise<AccuracyResult> {
  const heldout = JSON.parse(fs.readFileSync(path.join(path.dirname(path.resolve(folder)), 'heldout.json'), 'utf8')) as { rows: HeldoutRow[] };
  const rows = heldout.rows.slice(0, opts.n ?? heldout.rows.length);
  const mf = loadModelFolder(folder);
  const tok = TextTokenizer.fromFolder(mf);
  const runner = await OnnxRunner.load(folder, { intraOpNumThreads: opts.intraOpNumThreads ?? 1 });
  const t0 = performance.now();
  const outs = await generateGreedy(
    runner,
    rows.map((r) => tok.encodeChat([{ role: 'user', content: r.question }])),
    { batch: opts.batch ?? 32 },
  );
  const seconds = (performance.now() - t0) / 1000;
  await runner.close();
  let correct = 0;
  rows.forEach((r, i) => {
    if (finalAnswer(tok.decode(outs[i])) === r.answer) correct++;
  });
  return { model: mf.name, n: rows.length, correct, accuracy: correct / rows.length, seconds };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const names = args.filter((a) => !a.startsWith('--'));
  const nIdx = args.indexOf('--n');
  const n = nIdx >= 0 ? Number(args[nIdx + 1]) : undefined;
  const models = names.filter((x) => !/^\d+$/.test(x));
  for (const m of models.length ? models : ['small', 'medium', 'large']) {
    const folder = m.includes('/') ? m : path.join(BUNDLED_MODELS_DIR, m);
    const r = await heldoutAccuracy(folder, { n });
    console.log(`${r.model}: ${r.correct}/${r.n} = ${(100 * r.accuracy).toFixed(1)}% exact match (greedy, ONNX Runtime, ${r.seconds.toFixed(1)} s)`);
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
