// Seeded fuzz: thousands of random graphs and IR documents never make the compiler or the interpreter throw or stall.
import { describe, expect, it } from 'vitest';
import type { Algorithm, RouteInput } from '../../shared/algorithm.ts';
import { compileGraph } from '../../shared/ir/compileGraph.ts';
import type { IrDocument } from '../../shared/ir/irSchema.ts';
import { tryCompileIr } from '../../runtime/algorithms/compileIr.ts';
import type { IrMeta } from '../../runtime/algorithms/irMeta.ts';
import { CATALOG, EXAMPLES, loadExample } from './fixtures.ts';
import { mutateGraph, mutateIr, randomGraph } from './randomGraph.ts';
import { int, pick, rng, type Rng } from './rng.ts';

/** Generous per-call bounds: a hang or a blow-up shows as orders of magnitude, not as jitter on a shared core. */
const MAX_COMPILE_MS = 250;
/** For 25 route/send/receive rounds: microseconds each normally; a GC pause is tolerated, a loop is not. */
const MAX_RUN_MS = 250;

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

describe('fuzz', () => {
  it('compiles 5,000 random graphs without throwing; every IR it emits loads and runs', () => {
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

  it('loads 5,000 random or corrupted IR documents without throwing', () => {
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
