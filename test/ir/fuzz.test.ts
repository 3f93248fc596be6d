// Seeded fuzz: thousands of random graphs and IR documents never make the compiler or the interpreter throw or stall.
import { describe, expect, it } from 'vitest';
import type { Algorithm, RouteInput } from '../../shared/algorithm.ts';
import { compileGraph } from '../../shared/ir/compileGraph.ts';
import type { IrDocument } from '../../shared/ir/irSchema.ts';
import { tryCompileIr } from '../../runtime/ir/compileIr.ts';
import type { IrMeta } from '../../runtime/ir/irMeta.ts';
import { LIMITS } from '../../shared/ir/nodeTypes.ts';
import { CATALOG, EXAMPLES, graph, loadExample, type NodeDef } from './fixtures.ts';
import { mutateGraph, mutateIr, randomGraph } from './randomGraph.ts';
import { int, pick, rng, type Rng } from './rng.ts';

/**
 * Generous per-call bounds: a hang or a blow-up shows as orders of magnitude, not as jitter on a
 * shared, loaded core (calls take well under a millisecond when the machine is idle).
 */
const MAX_COMPILE_MS = 2000;
/** For 25 route/send/receive rounds: microseconds each normally; a GC pause is tolerated, a loop is not. */
const MAX_RUN_MS = 2000;

const examples = EXAMPLES.map(loadExample);

/** Runs a compiled algorithm over random steps, following its decisions; checks every answer is well-formed. */
function exercise(alg: Algorithm<IrMeta>, r: Rng): void {
  let meta = alg.initMeta();
  let model = alg.entry;
  const t0 = performance.now();
  for (let i = 0; i < 25; i++) {
    const input: RouteInput<IrMeta> = {
      token: int(r, 0, 80),
      entropy: r(),
      maxProb: r(),
      margin: r(),
      tokenProb: r(),
      topIds: [1, 2, 3],
      topProbs: [0.5, 0.3, 0.1],
      heads: r() < 0.5 ? { citer: r(), r2r: r(), colm: r() } : {},
      model,
      position: 10 + i,
      stepsHere: i + 1,
      generated: i,
      draw: r(),
      meta,
    };
    const d = alg.route(input);
    expect(Number.isInteger(d) && d >= 0 && d <= alg.models.length && d !== model).toBe(true);
    if (d !== 0) {
      const h = alg.send!({ requestId: 'f', from: model, to: d, result: input, unseen: [1], anchor: 9 + i, meta });
      meta = alg.receive!(h).meta;
      model = d;
    }
    expect(JSON.parse(JSON.stringify(meta))).toEqual(meta);
  }
  expect(performance.now() - t0).toBeLessThan(MAX_RUN_MS);
}

function timed<T>(f: () => T): T {
  const t0 = performance.now();
  const out = f();
  expect(performance.now() - t0).toBeLessThan(MAX_COMPILE_MS);
  return out;
}

describe('bounds', () => {
  it('compiles the largest graph the limits allow, and one route() over it stays cheap', () => {
    // 195 arithmetic nodes in one chain (the longest dependency path possible), under a single decision.
    const n = LIMITS.maxNodes - 5;
    const nodes: NodeDef[] = [
      ['start', 'start'],
      ['h', 'entropy'],
    ];
    const edges: string[] = ['h.out>a0.a'];
    for (let i = 0; i < n; i++) {
      nodes.push([`a${i}`, 'arith', { op: '+', value: 0.001 }]);
      if (i > 0) edges.push(`a${i - 1}.out>a${i}.a`);
    }
    nodes.push(['c', 'compare', { op: '>', value: 0.5 }], ['st', 'handoff', { model: 'small', to: 'large' }]);
    nodes.push(['back', 'handBack', { model: 'large', to: 'small' }]);
    edges.push(`a${n - 1}.out>c.a`, 'c.out>st.when');
    const g = graph(nodes, edges);
    expect(g.nodes.length).toBe(LIMITS.maxNodes);
    const r = timed(() => compileGraph(g, CATALOG));
    if (!r.ok) throw new Error(JSON.stringify(r.issues.slice(0, 3)));
    const alg = timed(() => tryCompileIr(r.ir, { models: CATALOG }));
    if (!alg.ok) throw new Error('IR did not load');
    const meta = alg.algorithm.initMeta();
    const input = (entropy: number): RouteInput<IrMeta> => ({
      token: 1,
      entropy,
      maxProb: 1,
      margin: 1,
      tokenProb: 1,
      topIds: [],
      topProbs: [],
      heads: {},
      model: 1,
      position: 5,
      stepsHere: 1,
      generated: 0,
      draw: 0.5,
      meta,
    });
    // 0.3 + 195 × 0.001 = 0.495 stays; 0.31 + 0.195 = 0.505 hands off: the whole chain ran.
    expect(alg.algorithm.route(input(0.3))).toBe(0);
    expect(alg.algorithm.route(input(0.31))).toBe(2);
    const t0 = performance.now();
    for (let i = 0; i < 1000; i++) alg.algorithm.route(input(0.3));
    expect((performance.now() - t0) / 1000).toBeLessThan(MAX_RUN_MS / 25);
  });

  it('rejects a graph over the node limit before analysing it', () => {
    const nodes: NodeDef[] = Array.from({ length: LIMITS.maxNodes + 1 }, (_, i) => [`k${i}`, 'constant'] as NodeDef);
    const r = timed(() => compileGraph(graph(nodes), CATALOG));
    expect(r.ok).toBe(false);
    expect(r.issues.map((i) => i.code)).toEqual(['too_large']);
  });
});

describe('fuzz', () => {
  it('compiles 5,000 random graphs without throwing; every IR it emits loads and runs', { timeout: 240_000 }, () => {
    const r = rng(20260);
    const emitted: IrDocument[] = [];
    let ok = 0;
    for (let i = 0; i < 5000; i++) {
      const g = i % 2 ? randomGraph(r) : mutateGraph(r, pick(r, examples));
      const res = timed(() => compileGraph(g, CATALOG));
      for (const x of res.issues) expect(typeof x.fix).toBe('string');
      if (!res.ok) continue;
      ok++;
      const loaded = timed(() => tryCompileIr(JSON.parse(JSON.stringify(res.ir)), { models: CATALOG }));
      expect(loaded.ok, JSON.stringify(loaded.issues)).toBe(true);
      if (loaded.ok) exercise(loaded.algorithm, r);
      if (emitted.length < 300) emitted.push(res.ir);
    }
    // The generator must reach the deep checks, not only fail at the schema.
    expect(ok).toBeGreaterThan(300);
  });

  it('loads 5,000 random or corrupted IR documents without throwing', { timeout: 240_000 }, () => {
    const r = rng(777);
    const bases = examples.map((g) => {
      const c = compileGraph(g, CATALOG);
      if (!c.ok) throw new Error('example does not compile');
      return c.ir;
    });
    let accepted = 0;
    for (let i = 0; i < 5000; i++) {
      const doc = mutateIr(r, pick(r, bases));
      const res = timed(() => tryCompileIr(doc, { models: r() < 0.5 ? CATALOG : undefined }));
      if (res.ok) {
        accepted++;
        exercise(res.algorithm, r);
      } else {
        expect(res.issues.length).toBeGreaterThan(0);
      }
    }
    // Some edits are harmless (e.g. a parameter changed within range): those must still run.
    expect(accepted).toBeGreaterThan(50);
  });
});
