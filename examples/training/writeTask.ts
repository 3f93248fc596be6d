// Writes the word-problem task folder (task.json, validation.jsonl, heldout.jsonl) that `tokenrouter eval --task` and the Evaluate tab read.
/*
 * Usage: npx tsx examples/training/writeTask.ts [--out examples/tasks/word-problems]
 * The splits are wordProblems.ts's evalSplits(): the same problems makeCorpus.ts keeps out of training,
 * one line each as {"id": key, "prompt": question, "answer": final number}, graded by the final number.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { evalSplits, HELDOUT, VALIDATION, type WordProblem } from './wordProblems.ts';

export const WORD_PROBLEMS_TASK = {
  name: 'word-problems',
  description: `worked word problems in English, two or three arithmetic steps; graded by the final number (validation: ${VALIDATION.n} problems, seed ${VALIDATION.seed}; held-out: ${HELDOUT.n}, seed ${HELDOUT.seed})`,
  grader: { kind: 'final-number' },
} as const;

/** A split's lines as the task folder holds them. */
export const taskLines = (problems: readonly WordProblem[]): string =>
  `${problems.map((p) => JSON.stringify({ id: p.key, prompt: p.question, answer: String(p.final) })).join('\n')}\n`;

function main(): void {
  const { values } = parseArgs({ options: { out: { type: 'string', default: 'examples/tasks/word-problems' } } });
  const out = path.resolve(values.out!);
  fs.mkdirSync(out, { recursive: true });
  const splits = evalSplits();
  fs.writeFileSync(path.join(out, 'task.json'), `${JSON.stringify(WORD_PROBLEMS_TASK, null, 2)}\n`);
  fs.writeFileSync(path.join(out, 'validation.jsonl'), taskLines(splits.validation));
  fs.writeFileSync(path.join(out, 'heldout.jsonl'), taskLines(splits.heldout));
  process.stderr.write(`writeTask: ${out} (validation ${splits.validation.length}, heldout ${splits.heldout.length})\n`);
}

if (process.argv[1] && import.meta.url === new URL(`file://${path.resolve(process.argv[1])}`).href) main();
