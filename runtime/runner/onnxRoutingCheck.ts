// End-to-end check that the bundled router heads help: small decodes, a head hands single tokens to large (`npx tsx runtime/runner/onnxRoutingCheck.ts`).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { GREEDY } from './modelRunner.ts';
import { NO_WANTS, type StepWants } from '../../shared/algorithm.ts';
import { OnnxRunner } from './onnxRunner.ts';
import { TextTokenizer } from './tokenizer.ts';
import { loadModelFolder } from './modelFolder.ts';
import { BUNDLED_MODELS_DIR } from './onnxAccuracy.ts';
import { chatOf, DEFAULT_TASK, loadTask } from '../eval/loadTask.ts';

export interface RoutingCheckResult {
  head: string;
  threshold: number;
  n: number;
  accuracy: number;
  /** Share of committed answer tokens written by the large model. */
  largeTokenShare: number;
}

/**
 * Sequential reference of CITER/R2R/Co-LLM style routing: small proposes each token; when the head
 * says so, small's token is discarded, large catches up on the unseen suffix (one extend) and writes
 * that one token, then small continues. Not the serving runtime: a check of the heads themselves.
 */
export async function routingCheck(head: string, opts: { n?: number; threshold?: number; dir?: string; task?: string } = {}): Promise<RoutingCheckResult> {
  const dir = opts.dir ?? BUNDLED_MODELS_DIR;
  const small = await OnnxRunner.load(path.join(dir, 'small'));
  const large = await OnnxRunner.load(path.join(dir, 'large'));
  const spec = small.routerHeads.find((h) => h.name === head);
  if (!spec) throw new Error(`small has no router head "${head}"`);
  const threshold = opts.threshold ?? spec.threshold ?? 0.5;
  const routeWhenLow = (spec.routeWhen ?? '').includes('<');
  const tok = TextTokenizer.fromFolder(loadModelFolder(path.join(dir, 'small')));
  const task = loadTask(opts.task ?? DEFAULT_TASK, dir);
  const rows = task.split('heldout').problems.slice(0, opts.n ?? 500);
  const wants: StepWants = { topK: 0, hidden: false, heads: [head] };
  const eos = small.info.eosTokenIds;
  let correct = 0;
  let fromLarge = 0;
  let total = 0;
  for (const [i, r] of rows.entries()) {
    const seq = tok.encodeChat(chatOf(r));
    const out: number[] = [];
    let smallPos = 0;
    let largePos = 0;
    for (let n = 0; n < 128; n++) {
      const s = (await small.step([{ cacheId: i, requestId: `r${i}`, tokens: seq.slice(smallPos), position: smallPos, sampling: GREEDY, wants }])).rows[0];
      smallPos = seq.length;
      const score = s.heads[head];
      let t = s.token;
      if (routeWhenLow ? score < threshold : score >= threshold) {
        const l = (await large.step([{ cacheId: i, requestId: `r${i}`, tokens: seq.slice(largePos), position: largePos, sampling: GREEDY, wants: NO_WANTS }]))
          .rows[0];
        largePos = seq.length;
        t = l.token;
        fromLarge++;
      }
      total++;
      seq.push(t);
      if (eos.includes(t)) break;
      out.push(t);
    }
    small.release(i);
    large.release(i);
    if (task.grade(tok.decode(out), r.answer)) correct++;
  }
  await small.close();
  await large.close();
  return { head, threshold, n: rows.length, accuracy: correct / rows.length, largeTokenShare: fromLarge / total };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const heads = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  (async () => {
    for (const h of heads.length ? heads : ['citer', 'r2r', 'colm']) {
      const r = await routingCheck(h);
      console.log(
        `${h} (threshold ${r.threshold}): ${(100 * r.accuracy).toFixed(1)}% correct on ${r.n} held-out problems, ${(100 * r.largeTokenShare).toFixed(1)}% of tokens from large`,
      );
    }
  })().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
