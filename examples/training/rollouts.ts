// On-policy router labels, as R2R builds them: small decodes greedily on its own, and one teacher-forced pass of large over each rollout labels every position.
/*
 * Usage (after `train.py rollout-problems` wrote the problem lists):
 *   npx tsx examples/training/rollouts.ts [--data examples/training/data] [--batch 64]
 * For every list in rollout-problems.json (train, dev) writes data/onpolicy-<list>.f32 (one row per
 * answer position: small's hidden state, small's top-k raw logits, small's token, the label
 * "large's greedy token at this prefix differs", the problem's index) and data/onpolicy-<list>.json
 * (row layout, the rollouts' text and exact match). Both models run through ONNX Runtime, so the
 * features are the ones the serving runner hands the heads.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const MODELS = path.join(ROOT, 'examples', 'models');
const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const DATA = path.resolve(arg('data', path.join(ROOT, 'examples', 'training', 'data')));
const BATCH = Number(arg('batch', '64'));
const MAX_NEW = 64;
const TOPK = 8;

interface Cfg {
  hidden_size: number;
  num_hidden_layers: number;
  num_key_value_heads: number;
  head_dim: number;
  vocab_size: number;
  eos_token_id: number;
  bos_token_id: number;
  pad_token_id: number;
}
interface Model {
  session: ort.InferenceSession;
  cfg: Cfg;
}

async function loadModel(name: string): Promise<Model> {
  const dir = path.join(MODELS, name);
  const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')) as Cfg;
  const session = await ort.InferenceSession.create(path.join(dir, 'onnx', 'model.onnx'), { intraOpNumThreads: 1, interOpNumThreads: 1 });
  return { session, cfg };
}

const vocab = (JSON.parse(fs.readFileSync(path.join(MODELS, 'small', 'tokenizer.json'), 'utf8')) as { model: { vocab: Record<string, number> } }).model.vocab;
const idToText = new Map(Object.entries(vocab).map(([t, i]) => [i, t]));
const encode = (s: string) =>
  [...s].map((c) => {
    const id = vocab[c];
    if (id === undefined) throw new Error(`rollouts: no token for ${JSON.stringify(c)}`);
    return id;
  });
const decode = (ids: number[]) => ids.map((i) => (i > 3 ? (idToText.get(i) ?? '') : '')).join('');
const finalAnswer = (text: string) => (text.includes('=') ? text.trim().split('=').pop()! : null);

const i64 = (xs: number[]) => BigInt64Array.from(xs, (x) => BigInt(x));

/** One forward pass: ids/mask/pos are row-major [B,S] / [B,T]; past is per layer key,value or null for an empty cache. */
async function forward(m: Model, B: number, S: number, ids: number[], mask: number[], pos: number[], past: ort.Tensor[] | null) {
  const { num_hidden_layers: L, num_key_value_heads: kv, head_dim: hd } = m.cfg;
  const T = mask.length / B;
  const feeds: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor('int64', i64(ids), [B, S]),
    attention_mask: new ort.Tensor('int64', i64(mask), [B, T]),
    position_ids: new ort.Tensor('int64', i64(pos), [B, S]),
  };
  for (let l = 0; l < L; l++) {
    for (const [j, kind] of (['key', 'value'] as const).entries()) {
      feeds[`past_key_values.${l}.${kind}`] = past ? past[2 * l + j] : new ort.Tensor('float32', new Float32Array(0), [B, kv, 0, hd]);
    }
  }
  const out = await m.session.run(feeds);
  const presents: ort.Tensor[] = [];
  for (let l = 0; l < L; l++) presents.push(out[`present.${l}.key`], out[`present.${l}.value`]);
  return { logits: out.logits.data as Float32Array, hidden: out.hidden_states.data as Float32Array, presents };
}

function argmax(a: Float32Array, off: number, n: number): number {
  let best = 0;
  for (let i = 1; i < n; i++) if (a[off + i] > a[off + best]) best = i;
  return best;
}

function topk(a: Float32Array, off: number, n: number): number[] {
  return Array.from(a.subarray(off, off + n))
    .sort((x, y) => y - x)
    .slice(0, TOPK);
}

interface Rollout {
  question: string;
  answer: string;
  text: string;
  correct: boolean;
  positions: number;
  diverged: number;
}

/** Greedy small rollouts of one batch, then large's greedy token at every prefix of them; appends feature rows. */
async function batch(small: Model, large: Model, problems: [number, number][], first: number, rows: number[], rollouts: Rollout[]) {
  const V = small.cfg.vocab_size;
  const D = small.cfg.hidden_size;
  const B = problems.length;
  const prompts = problems.map(([a, b]) => [small.cfg.bos_token_id, ...encode(`Q: ${a}*${b}=\nA: `)]);
  const P = Math.max(...prompts.map((p) => p.length));
  const ids: number[] = [];
  const mask: number[] = [];
  const pos: number[] = [];
  for (const p of prompts) {
    const pad = P - p.length;
    for (let t = 0; t < P; t++) {
      ids.push(t < pad ? small.cfg.pad_token_id : p[t - pad]);
      mask.push(t < pad ? 0 : 1);
      pos.push(Math.max(0, t - pad));
    }
  }
  let out = await forward(small, B, P, ids, mask, pos, null);
  let S = P;
  const gen: number[][] = prompts.map(() => []);
  const feats: number[][][] = prompts.map(() => []);
  const done = new Array<boolean>(B).fill(false);
  let curMask = mask.slice();
  const nextPos = prompts.map((p) => p.length);
  for (let step = 0; step < MAX_NEW; step++) {
    const toks: number[] = [];
    for (let i = 0; i < B; i++) {
      const off = (i * S + S - 1) * V;
      const t = argmax(out.logits, off, V);
      toks.push(t);
      if (done[i]) continue;
      const h = Array.from(out.hidden.subarray((i * S + S - 1) * D, (i * S + S) * D));
      feats[i].push([...h, ...topk(out.logits, off, V), t]);
      if (t === small.cfg.eos_token_id) done[i] = true;
      else gen[i].push(t);
    }
    if (done.every(Boolean)) break;
    const T = curMask.length / B;
    const m2: number[] = [];
    for (let i = 0; i < B; i++) m2.push(...curMask.slice(i * T, (i + 1) * T), 1);
    curMask = m2;
    out = await forward(small, B, 1, toks, curMask, nextPos.slice(), out.presents);
    for (let i = 0; i < B; i++) nextPos[i]++;
    S = 1;
  }
  // Large, teacher-forced over prompt + rollout (+ EOS when small wrote one), right padded: one pass labels every position.
  const seqs = prompts.map((p, i) => [...p, ...gen[i], ...(feats[i].length > gen[i].length ? [small.cfg.eos_token_id] : [])]);
  const T = Math.max(...seqs.map((s) => s.length));
  const lids: number[] = [];
  const lmask: number[] = [];
  const lpos: number[] = [];
  for (const s of seqs)
    for (let t = 0; t < T; t++) {
      lids.push(t < s.length ? s[t] : large.cfg.pad_token_id);
      lmask.push(t < s.length ? 1 : 0);
      lpos.push(t);
    }
  const lo = await forward(large, B, T, lids, lmask, lpos, null);
  for (let i = 0; i < B; i++) {
    let diverged = 0;
    feats[i].forEach((f, j) => {
      const at = prompts[i].length - 1 + j;
      const lt = argmax(lo.logits, (i * T + at) * V, V);
      const diverge = lt !== f[D + TOPK] ? 1 : 0;
      diverged += diverge;
      rows.push(...f, diverge, first + i);
    });
    const [a, b] = problems[i];
    const text = decode(gen[i]);
    rollouts.push({ question: `${a}*${b}`, answer: String(a * b), text, correct: finalAnswer(text) === String(a * b), positions: feats[i].length, diverged });
  }
}

async function main() {
  const lists = JSON.parse(fs.readFileSync(path.join(DATA, 'rollout-problems.json'), 'utf8')) as {
    lists: Record<string, { seed: number; problems: [number, number][] }>;
  };
  const [small, large] = await Promise.all([loadModel('small'), loadModel('large')]);
  const D = small.cfg.hidden_size;
  for (const [name, list] of Object.entries(lists.lists)) {
    const rows: number[] = [];
    const rollouts: Rollout[] = [];
    const t0 = performance.now();
    for (let i = 0; i < list.problems.length; i += BATCH) {
      await batch(small, large, list.problems.slice(i, i + BATCH), i, rows, rollouts);
      const n = Math.min(i + BATCH, list.problems.length);
      process.stderr.write(`\r[rollouts] ${name}: ${n}/${list.problems.length} problems, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    }
    process.stderr.write('\n');
    const width = D + TOPK + 3;
    fs.writeFileSync(path.join(DATA, `onpolicy-${name}.f32`), Buffer.from(Float32Array.from(rows).buffer));
    const positions = rows.length / width;
    const diverged = rollouts.reduce((s, r) => s + r.diverged, 0);
    const meta = {
      list: name,
      seed: list.seed,
      problems: rollouts.length,
      positions,
      width,
      layout: { hidden_states: [0, D], topk_logits: [D, D + TOPK], token_id: D + TOPK, diverge: D + TOPK + 1, problem: D + TOPK + 2 },
      small_exact_match: rollouts.filter((r) => r.correct).length / rollouts.length,
      diverge_rate: diverged / positions,
      rollouts,
    };
    fs.writeFileSync(path.join(DATA, `onpolicy-${name}.json`), JSON.stringify(meta));
    console.log(
      `[rollouts] ${name}: ${rollouts.length} rollouts, ${positions} positions, small exact match ${(meta.small_exact_match * 100).toFixed(1)} %, large disagrees at ${(meta.diverge_rate * 100).toFixed(2)} % of positions`,
    );
  }
}

await main();
