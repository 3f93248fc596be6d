// Parity: each example graph, compiled graph → IR → Algorithm, decides exactly like its TypeScript algorithm on random request traces.
import { describe, expect, it } from 'vitest';
import { wantsFor, type Algorithm, type Handoff, type RouteInput } from '../../shared/algorithm.ts';
import { compileGraph } from '../../shared/ir/compileGraph.ts';
import { compileIr } from '../../runtime/ir/compileIr.ts';
import { builtinFactory } from '../../examples/algorithms/index.ts';
import { CATALOG, EXAMPLES, loadExample } from './fixtures.ts';
import { int, pick, rng, type Rng } from './rng.ts';

/** Thresholds of the five algorithms: signals land on them exactly now and then, to test the boundaries. */
const EDGES = [0.03, 0.9, 0.5, 0.15, 0.2, 0.8];

function signal(r: Rng): number {
  const k = r();
  if (k < 0.15) return pick(r, EDGES);
  if (k < 0.6) return r() * 0.2;
  return r();
}

interface Step {
  model: string;
  decision: string | null;
  keep: boolean | null;
}

/** Drives one algorithm through a request whose signals come from `seed`, following its own decisions. */
function trace(alg: Algorithm<unknown>, seed: number, length: number): Step[] {
  const r = rng(seed);
  let meta = alg.initMeta();
  let model = alg.entry;
  let stepsHere = 0;
  let generated = 0;
  const prompt = int(r, 4, 40);
  const steps: Step[] = [];
  for (let i = 0; i < length; i++) {
    stepsHere++;
    const input: RouteInput<unknown> = {
      token: int(r, 0, 63),
      entropy: signal(r),
      maxProb: r(),
      margin: r(),
      tokenProb: r(),
      topIds: [],
      topProbs: [],
      heads: { citer: signal(r), r2r: signal(r), colm: signal(r) },
      model,
      position: prompt + generated,
      stepsHere,
      generated,
      draw: r(),
      meta,
    };
    const d = alg.route(input);
    let keep: boolean | null = null;
    if (d !== 0) {
      const h: Handoff<unknown> = (alg.send ?? (() => null))({ requestId: 'r', from: model, to: d, result: input, unseen: [], anchor: input.position, meta })!;
      keep = h.keep;
      meta = alg.receive ? alg.receive(h).meta : h.meta;
      if (keep) generated++;
      model = d;
      stepsHere = 0;
    } else {
      generated++;
    }
    steps.push({ model: alg.models[input.model - 1], decision: d === 0 ? null : alg.models[d - 1], keep });
  }
  return steps;
}

describe.each(EXAMPLES)('%s: graph vs TypeScript', (name) => {
  const compiled = compileGraph(loadExample(name), CATALOG);
  if (!compiled.ok) throw new Error(`${name} does not compile: ${JSON.stringify(compiled.issues)}`);
  const fromGraph = compileIr(JSON.parse(JSON.stringify(compiled.ir)), { models: CATALOG }) as Algorithm<unknown>;
  const typed = builtinFactory(name)();

  it('declares the same models, entry and per-model extras', () => {
    expect(fromGraph.models).toEqual(typed.models);
    expect(fromGraph.entry).toBe(typed.entry);
    for (let m = 1; m <= typed.models.length; m++) expect(wantsFor(fromGraph, m)).toEqual(wantsFor(typed, m));
  });

  it('makes the same decision, with the same keep flag, at every step of 120 random requests', () => {
    let handoffs = 0;
    for (let seed = 1; seed <= 120; seed++) {
      const length = 20 + (seed % 60);
      const a = trace(typed, seed, length);
      const b = trace(fromGraph, seed, length);
      expect(b, `seed ${seed}`).toEqual(a);
      handoffs += a.filter((s) => s.decision !== null).length;
    }
    // The traces exercise switching, not just staying.
    expect(handoffs).toBeGreaterThan(100);
  });
});
