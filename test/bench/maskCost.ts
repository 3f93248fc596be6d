// Bench suite `mask` (`npm run bench -- mask [--models qwen3-42m] [--batch 8] [--tokens 32] [--rounds 3]`): what a grammar mask costs a decode step on a real-shaped model at V = 151,936, dense and sparse, against unmasked greedy, in the graph's masked group and in JavaScript.
import { realShapeFolder } from '../support/realShape/realShapeFolder.ts';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { analyzeMasked, fillAllowed, maskWords } from '../../runtime/runner/maskedRow.ts';
import type { SamplingParams, StepRow } from '../../runtime/runner/modelRunner.ts';
import { NO_WANTS } from '../../shared/algorithm.ts';
import { percentile } from '../../runtime/util/stats.ts';
import type { Row } from '../../runtime/util/table.ts';
import type { BenchOptions, SuiteRun } from './benchSuite.ts';
import { SuiteFlags } from './suiteFlags.ts';
import { TokenRouterError } from '../../runtime/errors.ts';
import { headAloneMs, type HeadCase } from './maskHead.ts';

const median = (xs: readonly number[]): number => percentile(xs, 50);

const GREEDY: SamplingParams = { temperature: 0, topP: 1, topK: 0, seed: 1 };
const TOP_P: SamplingParams = { temperature: 0.8, topP: 0.9, topK: 0, seed: 1 };

/** Seeded masks allowing `allowed` tokens at random (sparse: JSON structure) or each token with probability 1/2 (dense: string contents). */
function masks(V: number, kind: 'dense' | 'sparse', n: number): Int32Array[] {
  let a = kind === 'dense' ? 12345 : 777;
  const rnd = (): number => {
    a = (a * 1103515245 + 12345) >>> 0;
    return a / 4294967296;
  };
  return Array.from({ length: n }, () => {
    const m = new Int32Array(maskWords(V));
    if (kind === 'dense') for (let w = 0; w < m.length; w++) m[w] = (rnd() * 4294967296) | 0;
    else
      for (let k = 0; k < 3; k++) {
        const t = Math.floor(rnd() * V);
        m[t >>> 5] |= 1 << (t & 31);
      }
    if (V & 31) m[m.length - 1] &= (1 << (V & 31)) - 1;
    return m;
  });
}

interface Case {
  name: string;
  sampling: SamplingParams;
  mask?: 'dense' | 'sparse';
}

const CASES: Case[] = [
  { name: 'greedy', sampling: GREEDY },
  { name: 'greedy, dense mask (1/2 allowed)', sampling: GREEDY, mask: 'dense' },
  { name: 'greedy, sparse mask (3 allowed)', sampling: GREEDY, mask: 'sparse' },
  { name: 'top_p 0.9', sampling: TOP_P },
  { name: 'top_p 0.9, dense mask', sampling: TOP_P, mask: 'dense' },
  { name: 'top_p 0.9, sparse mask', sampling: TOP_P, mask: 'sparse' },
];

interface Lane {
  runner: OnnxRunner;
  c: Case;
  firstCache: number;
}

/**
 * ms per decode step of `batch` rows for each lane (a runner and a case, every row masked as the case
 * says), `tokens` steps after a prefill. The lanes advance in lockstep, one step each in turn (the
 * order rotating), so drift on a shared machine falls on all of them alike.
 */
async function decodeMs(lanes: readonly Lane[], batch: number, tokens: number, pool: Record<'dense' | 'sparse', Int32Array[]>): Promise<number[]> {
  const live = lanes.map((lane) =>
    Array.from({ length: batch }, (_, i) => ({ cacheId: lane.firstCache + i, tokens: [9707 + i, 11, 1246, 525, 279, 1156 + i], position: 0 })),
  );
  const ms = lanes.map(() => 0);
  for (let s = 0; s <= tokens; s++) {
    for (let n = 0; n < lanes.length; n++) {
      const k = (n + s) % lanes.length;
      const { runner, c } = lanes[k];
      const rows: StepRow[] = live[k].map((l, i) => ({
        cacheId: l.cacheId,
        requestId: `m${l.cacheId}`,
        tokens: l.tokens,
        position: l.position,
        sampling: { ...c.sampling, seed: i },
        wants: NO_WANTS,
        mask: c.mask ? pool[c.mask][(s * batch + i) % pool[c.mask].length] : undefined,
      }));
      const t0 = performance.now();
      const out = await runner.step(rows);
      // the prefill is not timed
      if (s > 0) ms[k] += performance.now() - t0;
      live[k].forEach((l, i) => {
        l.position += l.tokens.length;
        l.tokens = [out.rows[i].token];
      });
    }
  }
  lanes.forEach((lane, k) => live[k].forEach((l) => lane.runner.release(l.cacheId)));
  return ms.map((m) => m / tokens);
}

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const model = f.str('models', 'qwen3-42m');
  const B = f.num('batch', 8);
  const tokens = f.sized('tokens', 32, 8);
  const rounds = f.sized('rounds', 3, 1);
  for (const [k, v] of [
    ['batch', B],
    ['tokens', tokens],
    ['rounds', rounds],
  ] as const) {
    if (!(Number.isInteger(v) && v > 0)) throw new TokenRouterError('invalid_request', `--${k} must be a positive integer (got ${v})`, k);
  }
  // the masked rows' two paths side by side: the graph's masked group, and analyzeMasked over fetched logits
  const dir = realShapeFolder(model).dir;
  const runners = { graph: await OnnxRunner.load(dir, { masks: 'graph' }), js: await OnnxRunner.load(dir, { masks: 'js' }) };
  const V = runners.graph.info.vocabSize;
  const pool = { dense: masks(V, 'dense', 64), sparse: masks(V, 'sparse', 64) };
  // JavaScript alone: one masked row's signals and draw from its logits (the js path), its bools (the graph path)
  const logits = Float32Array.from({ length: V }, (_, i) => Math.sin(i * 12.9898) * 3);
  const jsMs: Record<string, number> = {};
  const boolMs: Record<string, number> = {};
  const bools = new Uint8Array(V);
  for (const c of CASES.filter((k) => k.mask)) {
    const reps = 200;
    for (let r = 0; r < 20; r++) analyzeMasked(logits, pool[c.mask!][r % 64], { sampling: c.sampling, position: r, model: 'm', topK: 0 });
    let t0 = performance.now();
    for (let r = 0; r < reps; r++) analyzeMasked(logits, pool[c.mask!][r % 64], { sampling: c.sampling, position: r, model: 'm', topK: 0 });
    jsMs[c.name] = (performance.now() - t0) / reps;
    for (let r = 0; r < 20; r++) fillAllowed(bools, 0, pool[c.mask!][r % 64], V);
    t0 = performance.now();
    for (let r = 0; r < reps * 5; r++) fillAllowed(bools, 0, pool[c.mask!][r % 64], V);
    boolMs[c.name] = (performance.now() - t0) / (reps * 5);
  }
  const key = (path: string, c: Case): string => `${path}: ${c.name}`;
  const lanes: (Lane & { key: string })[] = [];
  for (const [p, [path, runner]] of Object.entries(runners).entries())
    for (const [k, c] of CASES.entries()) lanes.push({ runner, c, firstCache: 1000 * p + 100 * k, key: key(path, c) });
  const perCase = new Map<string, number[]>(lanes.map((l) => [l.key, []]));
  await decodeMs(lanes, B, 4, pool);
  for (let r = 0; r < rounds; r++) (await decodeMs(lanes, B, tokens, pool)).forEach((ms, k) => perCase.get(lanes[k].key)!.push(ms));
  for (const runner of Object.values(runners)) await runner.close();
  const table: Row[] = [];
  const results: Record<string, unknown>[] = [];
  for (const path of Object.keys(runners)) {
    for (const c of CASES) {
      const step = median(perCase.get(key(path, c))!);
      const base = median(perCase.get(key(path, c.sampling === GREEDY ? CASES[0] : CASES[3]))!);
      const greedy = median(perCase.get(key(path, CASES[0]))!);
      const perRow = c.mask ? (step - base) / B : 0;
      // a committed token's served time at c = B is the step's time over its B rows
      const share = c.mask ? perRow / (greedy / B) : 0;
      results.push({
        path,
        case: c.name,
        stepMs: step,
        tokPerS: (1000 * B) / step,
        maskMsPerRow: perRow,
        shareOfGreedyToken: share,
        jsMsPerRow: path === 'js' ? jsMs[c.name] : boolMs[c.name],
      });
      table.push({
        path,
        case: c.name,
        'ms / step': step.toFixed(2),
        'tok/s': ((1000 * B) / step).toFixed(0),
        'mask ms / row': c.mask ? perRow.toFixed(3) : '-',
        '% of a greedy token': c.mask ? `${(100 * share).toFixed(1)} %` : '-',
        'JS alone ms / row': c.mask ? (path === 'js' ? jsMs[c.name] : boolMs[c.name]).toFixed(3) : '-',
      });
    }
  }
  // the head alone: plain graph against the masked group's, unmasked rows (its If skips the group) and masked ones
  const headCases: HeadCase[] = [];
  for (const sampling of [GREEDY, TOP_P]) {
    const t = sampling === GREEDY ? 'greedy' : 'top_p 0.9';
    headCases.push({ name: `${t}, no masked group`, sampling, masked: false }, { name: `${t}, masked group, unmasked rows`, sampling, masked: true });
    headCases.push(
      { name: `${t}, masked group, dense masks`, sampling, masked: true, masks: pool.dense },
      { name: `${t}, masked group, sparse masks`, sampling, masked: true, masks: pool.sparse },
    );
  }
  const headMs = await headAloneMs(V, B, 10 * rounds, headCases);
  const greedyRowMs = median(perCase.get(key('graph', CASES[0]))!) / B;
  const headTable: Row[] = headCases.map((c, k) => {
    const over = headMs[k] - headMs[k - (k % 4)];
    return {
      case: c.name,
      'head ms / row': headMs[k].toFixed(3),
      'over no masked group': over.toFixed(3),
      '% of a greedy token': k % 4 ? `${((100 * over) / greedyRowMs).toFixed(1)} %` : '-',
    };
  });
  results.push(...headCases.map((c, k) => ({ head: c.name, msPerRow: headMs[k] })));
  const note = `${model} (real-shaped, V = ${V}), batch ${B} (c = ${B}), ${tokens} decode steps after a 6-token prefill, median of ${rounds} rounds, every case and path stepping in turn; one ORT thread; node ${process.version}. "% of a greedy token": the mask's ms per row over an unmasked greedy step's ms per row (a token's served time at c = ${B}), each path against its own unmasked steps. Paths: graph (the masked group of signal nodes, in an If its unmasked steps skip), js (analyzeMasked over the fetched row of logits). "JS alone": analyzeMasked for js, the bools from the bitmask (fillAllowed) for graph, over a synthetic row.`;
  const headNote = `head alone: the signal nodes over fixed [${B}, 1, ${V}] logits (planHead, the run, analyzeHead), median of ${10 * rounds} turns; "over no masked group": against the same sampling in the graph without the masked group, over the graph path's greedy ms per row above.`;
  const share = (path: string, name: string) => {
    const r = results.find((x) => x.path === path && x.case === name);
    return r ? `${(100 * (r.shareOfGreedyToken as number)).toFixed(1)} %` : '-';
  };
  const pair = (name: string) => `${share('graph', name)} (js path ${share('js', name)})`;
  const headline = [
    {
      figure: `grammar mask's cost per committed token ÷ a greedy token's served time, ${model}, c = ${B}: greedy, dense mask`,
      result: pair(CASES[1].name),
      target: '≤ 5 %',
      status: '',
    },
    {
      figure: 'the same: greedy, sparse mask (3 allowed) / top_p 0.9, dense mask',
      result: `${pair(CASES[2].name)} / ${pair(CASES[4].name)}`,
      target: '≤ 5 %',
      status: '',
    },
  ];
  return {
    suite: 'mask',
    settings: { model, batch: B, tokens, rounds, vocab: V, ortThreads: 1, node: process.version },
    results: { headline, rows: results },
    output: { tables: { mask: table, 'head alone': headTable }, notes: [note, headNote] },
  };
}
