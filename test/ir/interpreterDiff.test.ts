// Differential: the runtime's IR interpreter answers exactly as the plain reference interpreter on random sound graphs (memories, shared values, commit rules) and random steps.
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { Algorithm, RouteInput } from '../../shared/algorithm.ts';
import { compileGraph } from '../../shared/ir/compileGraph.ts';
import type { GraphDocument } from '../../shared/ir/graph.ts';
import { compileIr } from '../../runtime/ir/compileIr.ts';
import type { IrMeta } from '../../runtime/ir/irMeta.ts';
import { CATALOG, EXAMPLES, graph, loadExample, type NodeDef } from './fixtures.ts';
import { mutateGraph } from './randomGraph.ts';
import { referenceAlgorithm } from './referenceInterpreter.ts';
import { int, pick, rng, type Rng } from './rng.ts';

const MODELS = ['small', 'medium', 'large'];
const SIGNALS = ['entropy', 'maxProb', 'margin', 'tokenProb', 'head', 'sampledToken', 'distribution', 'stepsHere', 'position', 'generated', 'draw'] as const;
/** Constants and signals share these values now and then, so equality and boundaries get exercised. */
const VALUES = [0, 0.03, 0.5, 1, 2, 0.2];
const INPUTS: Record<string, string> = {
  compare: 'a:number,b:number?',
  and: 'a:boolean,b:boolean',
  or: 'a:boolean,b:boolean',
  not: 'a:boolean',
  arith: 'a:number,b:number?',
  minMax: 'a:number,b:number',
  tokenMatch: 'token:token',
  topKMass: 'dist:distribution',
  probOf: 'dist:distribution,token:token',
};

interface Output {
  node: string;
  port: string;
  type: string;
  /** Model whose steps compute it, or null for every step. */
  scope: string | null;
}

/** A random graph wired by type and model scope as it is built, so most of them compile. */
function soundGraph(r: Rng): GraphDocument {
  const nodes: NodeDef[] = [['start', 'start', { model: 'small' }]];
  const edges: string[] = [];
  const pool: Output[] = [];
  const memories: string[] = [];
  const source = (type: string, scope: string | null): Output | undefined => {
    const fits = pool.filter((o) => o.type === type && (o.scope === null || o.scope === scope));
    return fits.length ? pick(r, fits) : undefined;
  };
  const count = int(r, 2, 30);
  for (let i = 0; i < count; i++) {
    const id = `n${i}`;
    const k = r();
    if (k < 0.3) {
      const type = pick(r, SIGNALS);
      const model = type === 'head' ? 'small' : pick(r, MODELS);
      const params: Record<string, unknown> = { model };
      if (type === 'head') params.head = pick(r, ['citer', 'r2r', 'colm']);
      if (type === 'distribution') params.topK = int(r, 1, 6);
      nodes.push([id, type, params as NodeDef[2]]);
      pool.push({ node: id, port: 'out', type: type === 'sampledToken' ? 'token' : type === 'distribution' ? 'distribution' : 'number', scope: model });
    } else if (k < 0.38) {
      nodes.push([id, 'constant', { value: pick(r, VALUES) }]);
      pool.push({ node: id, port: 'out', type: 'number', scope: null });
    } else if (k < 0.41) {
      nodes.push([id, 'flag', { value: r() < 0.5 }]);
      pool.push({ node: id, port: 'out', type: 'boolean', scope: null });
    } else if (k < 0.85) {
      const scope = r() < 0.2 ? null : pick(r, MODELS);
      const type = pick(r, ['compare', 'compare', 'and', 'or', 'not', 'arith', 'minMax', 'tokenMatch', 'topKMass', 'probOf'] as const);
      const params: Record<string, unknown> = {};
      if (type === 'compare') Object.assign(params, { op: pick(r, ['>', '>=', '<', '<=', '==', '!=']), value: pick(r, VALUES) });
      if (type === 'arith') Object.assign(params, { op: pick(r, ['+', '-', '*', '/']), value: pick(r, VALUES) });
      if (type === 'minMax') params.op = pick(r, ['min', 'max']);
      if (type === 'tokenMatch') params.ids = Array.from({ length: int(r, 0, 5) }, () => int(r, 0, 20));
      if (type === 'topKMass') params.k = int(r, 1, 6);
      const wires: string[] = [];
      let wired = true;
      for (const spec of INPUTS[type].split(',')) {
        const [port, portType] = spec.split(':');
        if (portType.endsWith('?') && r() < 0.5) continue;
        const src = source(portType.replace('?', ''), scope);
        if (!src) {
          wired = false;
          break;
        }
        wires.push(`${src.node}.${src.port}>${id}.${port}`);
      }
      if (!wired) continue;
      nodes.push([id, type, params as NodeDef[2]]);
      edges.push(...wires);
      pool.push({ node: id, port: 'out', type: ['compare', 'and', 'or', 'not', 'tokenMatch'].includes(type) ? 'boolean' : 'number', scope });
    } else {
      const type = r() < 0.5 ? 'counter' : 'movingAverage';
      const scope = r() < 0.2 ? null : pick(r, MODELS);
      const params: Record<string, number> =
        type === 'counter' ? { value: pick(r, VALUES), step: pick(r, [1, -1, 0.5]) } : { value: pick(r, VALUES), alpha: pick(r, [0.5, 0.1, 1]) };
      const wires: string[] = [];
      if (type === 'movingAverage') {
        const src = source('number', scope);
        if (!src) continue;
        wires.push(`${src.node}.${src.port}>${id}.x`);
      } else if (r() < 0.6) {
        const src = source('boolean', scope);
        if (src) wires.push(`${src.node}.${src.port}>${id}.inc`);
      }
      if (r() < 0.4) {
        const src = source('boolean', scope);
        if (src) wires.push(`${src.node}.${src.port}>${id}.reset`);
      }
      nodes.push([id, type, params]);
      edges.push(...wires);
      memories.push(id);
      pool.push({ node: id, port: 'value', type: 'number', scope: null }, { node: id, port: 'prev', type: 'number', scope: null });
    }
  }
  let d = 0;
  for (const m of MODELS) {
    for (let j = int(r, 1, 3); j > 0; j--) {
      const id = `d${d++}`;
      const type = pick(r, ['stay', 'handoff', 'handoff', 'handBack', 'drawModel'] as const);
      const to = pick(
        r,
        MODELS.filter((x) => x !== m),
      );
      const params: Record<string, unknown> = { model: m, priority: int(r, 0, 3) };
      if (type === 'handoff') Object.assign(params, { to, keep: r() < 0.5 });
      if (type === 'handBack') Object.assign(params, { to, after: int(r, 1, 4) });
      if (type === 'drawModel') Object.assign(params, { weights: Object.fromEntries(MODELS.map((x) => [x, r() < 0.2 ? 0 : r()])), keep: r() < 0.5 });
      nodes.push([id, type, params as NodeDef[2]]);
      const when = r() < 0.75 ? source('boolean', m) : undefined;
      if (when) edges.push(`${when.node}.${when.port}>${id}.when`);
      const u = type === 'drawModel' && r() < 0.5 ? source('number', m) : undefined;
      if (u) edges.push(`${u.node}.${u.port}>${id}.u`);
    }
    if (memories.length && r() < 0.4) nodes.push([`rc${m}`, 'receiveCommit', { model: m, reset: [pick(r, memories)] }]);
  }
  return graph(nodes, edges);
}

/** One step's signals from `seed`: sometimes NaN, sometimes on a constant, sometimes without heads or with short top-k. */
function input(seed: number, model: number, meta: IrMeta, i: number): RouteInput<IrMeta> {
  const r = rng(seed);
  const signal = () => (r() < 0.05 ? Number.NaN : r() < 0.3 ? pick(r, VALUES) : r());
  const k = int(r, 0, 6);
  return {
    token: int(r, 0, 20),
    entropy: signal(),
    maxProb: signal(),
    margin: signal(),
    tokenProb: signal(),
    topIds: Array.from({ length: k }, () => int(r, 0, 20)),
    topProbs: Array.from({ length: r() < 0.1 ? Math.max(0, k - 1) : k }, () => r()),
    heads: r() < 0.2 ? {} : { citer: signal(), r2r: signal(), colm: signal() },
    model,
    position: 10 + i,
    stepsHere: int(r, 1, 5),
    generated: i,
    draw: r() < 0.05 ? 1 : r(),
    meta,
  };
}

/** Follows both interpreters through `steps` route/send/receive rounds; returns the first difference, or null. */
function firstDifference(fast: Algorithm<IrMeta>, reference: Algorithm<IrMeta>, r: Rng, steps: number): string | null {
  let a = fast.initMeta();
  let b = reference.initMeta();
  let model = fast.entry;
  for (let i = 0; i < steps; i++) {
    const seed = int(r, 0, 2 ** 31);
    const ia = input(seed, model, a, i);
    const ib = input(seed, model, b, i);
    const da = fast.route(ia);
    const db = reference.route(ib);
    if (da !== db || !isDeepStrictEqual(a, b)) return `step ${i} on ${model}: route ${da} vs ${db}, meta ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
    if (da === 0) continue;
    const ha = fast.send!({ requestId: 'd', from: model, to: da, result: ia, unseen: [1], anchor: 9 + i, meta: a });
    const hb = reference.send!({ requestId: 'd', from: model, to: db, result: ib, unseen: [1], anchor: 9 + i, meta: b });
    if (!isDeepStrictEqual(ha, hb)) return `step ${i}: handoff ${JSON.stringify(ha)} vs ${JSON.stringify(hb)}`;
    a = fast.receive!(ha).meta;
    b = reference.receive!(hb).meta;
    if (!isDeepStrictEqual(a, b)) return `step ${i}: received ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
    model = da;
  }
  return null;
}

describe('IR interpreter vs reference', () => {
  it('answers identically on 1,000 random graphs × 40 steps', { timeout: 120_000 }, () => {
    const r = rng(4242);
    const examples = EXAMPLES.map(loadExample);
    let compared = 0;
    let withMemory = 0;
    for (let i = 0; i < 1000; i++) {
      const g = i % 4 === 3 ? mutateGraph(r, pick(r, examples)) : soundGraph(r);
      const c = compileGraph(g, CATALOG);
      if (!c.ok) continue;
      let fast: Algorithm<IrMeta>;
      try {
        fast = compileIr(JSON.parse(JSON.stringify(c.ir)), { models: CATALOG });
      } catch {
        continue; // e.g. a text match without a vocabulary: the reference does not handle text
      }
      const reference = referenceAlgorithm(JSON.parse(JSON.stringify(c.ir)), CATALOG);
      compared++;
      if (c.ir.nodes.some((n) => n.type === 'counter' || n.type === 'movingAverage')) withMemory++;
      const diff = firstDifference(fast, reference, r, 40);
      expect(diff, `graph ${i}: ${JSON.stringify(c.ir.nodes)}`).toBeNull();
    }
    expect(compared).toBeGreaterThan(700);
    expect(withMemory).toBeGreaterThan(450);
  });
});
