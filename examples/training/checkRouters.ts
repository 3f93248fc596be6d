// Checks trainRouters.py's heads in the runner: PyTorch's hidden state and head scores against ONNX Runtime's, then CITER, R2R and Co-LLM routing over the exported small and large.
/*
 * Usage: npx tsx examples/training/checkRouters.ts [--from /work/family-out] [--models <from>/models] [--problems 40]
 * Reads <from>/routers-check.json (trainRouters.py writes it) and <models>/small (its routers/ folder),
 * <models>/large, <from>/corpus/validation.jsonl. Step check: for each prompt there, one runner step of
 * small asking for every head; the sampled token must match PyTorch's, the hidden state and scores
 * within fp16 storage's rounding. Routing: each head algorithm at its routers.json threshold (both heads:
 * on-policy and -tf) through the evaluator on the first --problems validation problems, beside small and
 * large alone; prints accuracy and large's share of the tokens. Exits non-zero when a check fails.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { HEAD_ALGORITHMS, evaluate, headEntry, singlesPlan, type EvalEntrySpec } from '../../runtime/eval/evaluate.ts';
import { graderOf } from '../../runtime/eval/graders.ts';
import type { TaskProblem } from '../../runtime/eval/loadTask.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { GREEDY } from '../../runtime/runner/modelRunner.ts';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';

interface CheckFile {
  model: string;
  hidden_size: number;
  cases: { prompt: number[]; token: number; hidden: number[]; topk_logits: number[]; scores: Record<string, number> }[];
}

/** Largest differences between the runner's step and PyTorch's, over the check file's prompts. */
async function stepCheck(runner: OnnxRunner, check: CheckFile): Promise<{ hidden: number; score: number; tokens: number }> {
  const heads = Object.keys(check.cases[0].scores);
  let hidden = 0;
  let score = 0;
  let tokens = 0;
  for (const [i, c] of check.cases.entries()) {
    const out = await runner.step([
      { cacheId: 9000 + i, requestId: `check${i}`, tokens: c.prompt, position: 0, sampling: GREEDY, wants: { topK: 8, hidden: true, heads } },
    ]);
    runner.release(9000 + i);
    const row = out.rows[0];
    if (row.token === c.token) tokens++;
    const h = row.hidden;
    if (!h || h.length !== check.hidden_size)
      throw new Error(`checkRouters: the step's hidden state has ${h?.length ?? 0} numbers, expected ${check.hidden_size}`);
    c.hidden.forEach((x, j) => (hidden = Math.max(hidden, Math.abs(h[j] - x))));
    for (const name of heads) {
      const got = row.heads[name];
      if (typeof got !== 'number') throw new Error(`checkRouters: head "${name}" gave no score`);
      score = Math.max(score, Math.abs(got - c.scores[name]));
    }
  }
  return { hidden, score, tokens };
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { from: { type: 'string', default: '/work/family-out' }, models: { type: 'string' }, problems: { type: 'string', default: '40' } },
  });
  const from = path.resolve(values.from!);
  const models = path.resolve(values.models ?? path.join(from, 'models'));
  const check = JSON.parse(fs.readFileSync(path.join(from, 'routers-check.json'), 'utf8')) as CheckFile;
  const routers = JSON.parse(fs.readFileSync(path.join(models, 'small', 'routers', 'routers.json'), 'utf8')) as {
    labelled_by: string;
    heads: Record<string, { threshold: number }>;
  };
  const small = await OnnxRunner.load(path.join(models, 'small'));
  const heads = Object.keys(small.folder.routers);
  console.log(`checkRouters: small ships heads ${heads.join(', ')} (labelled by ${routers.labelled_by})`);
  const t0 = performance.now();
  const diff = await stepCheck(small, check);
  console.log(
    `checkRouters: ${check.cases.length} prompts: token equal on ${diff.tokens}; max |hidden diff| ${diff.hidden.toExponential(2)}, max |score diff| ${diff.score.toExponential(2)} (${(performance.now() - t0).toFixed(0)} ms)`,
  );
  let failed = diff.tokens !== check.cases.length || !(diff.hidden < 1e-2) || !(diff.score < 1e-2);

  const n = Number(values.problems);
  if (n > 0) {
    const large = await OnnxRunner.load(path.join(models, 'large'));
    const rows = fs
      .readFileSync(path.join(from, 'corpus', 'validation.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .slice(0, n)
      .map((l) => JSON.parse(l) as { question: string; final: number });
    const problems: TaskProblem[] = rows.map((r) => ({ question: r.question, answer: String(r.final) }));
    const plan: EvalEntrySpec[] = [...singlesPlan(['small', 'large'])];
    for (const alg of HEAD_ALGORITHMS)
      for (const head of [alg.head, `${alg.head}-tf`]) if (routers.heads[head]) plan.push(headEntry(alg, head, routers.heads[head].threshold));
    const t1 = performance.now();
    const entries = await evaluate({
      runners: new Map([
        ['small', small],
        ['large', large],
      ]),
      tokenizer: TextTokenizer.fromFolder(loadModelFolder(path.join(models, 'small'))),
      problems,
      grade: graderOf({ kind: 'final-number' }),
      plan,
      concurrency: 8,
      maxTokens: 112,
    });
    console.log(`checkRouters: ${n} validation problems, ${plan.length} entries in ${((performance.now() - t1) / 1000).toFixed(0)} s (greedy, concurrency 8)`);
    for (const e of entries)
      console.log(
        `  ${e.name.padEnd(28)} accuracy ${e.accuracy.toFixed(3)}  large share ${(e.token_share.large ?? 0).toFixed(3)}  handoffs/request ${e.handoffs_per_request.toFixed(2)}`,
      );
    // a head that routes: some tokens by each model on at least one of the router-head entries
    const routed = entries.filter((e) => e.params.head !== undefined && (e.token_share.large ?? 0) > 0 && (e.token_share.large ?? 0) < 1);
    if (routed.length === 0) {
      console.log('checkRouters: no router-head entry mixed small and large tokens');
      failed = true;
    }
    await large.close();
  }
  await small.close();
  return failed ? 1 : 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === new URL(import.meta.url).pathname) process.exitCode = await main();
