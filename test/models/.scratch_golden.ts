import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { GREEDY } from '../../runtime/runner/modelRunner.ts';
import { NO_WANTS } from '../../shared/algorithm.ts';
import fs from 'node:fs';
const dir = process.argv[2];
const r = await OnnxRunner.load(dir);
const g = JSON.parse(fs.readFileSync(dir + '/golden.json', 'utf8'));
let ok = 0;
for (const [i, row] of g.rows.entries()) {
  let toks = row.input_ids, pos = 0; const out: number[] = [];
  for (let n = 0; n < 64; n++) {
    const res = await r.step([{ cacheId: i, requestId: 'r' + i, tokens: toks, position: pos, sampling: GREEDY, wants: NO_WANTS }]);
    pos += toks.length; const t = res.rows[0].token; out.push(t); toks = [t];
    if (t === g.eos_token_id || pos >= r.info.maxContext) break;
  }
  const same = JSON.stringify(out) === JSON.stringify(row.output_ids);
  ok += same ? 1 : 0;
  if (!same) console.log('diff', i, out.slice(0,20), row.output_ids.slice(0,20));
}
console.log('golden ok', ok, '/', g.rows.length, r.stats);
