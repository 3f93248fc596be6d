// The IR interpreter: memory, hand-back counting, draws, token matching, receive policies and the compile error.
import { describe, expect, it } from 'vitest';
import type { Algorithm, RouteInput } from '../../shared/algorithm.ts';
import { compileGraph } from '../../shared/ir/compileGraph.ts';
import type { GraphDocument } from '../../shared/ir/graph.ts';
import { compileIr, IrCompileError, tryCompileIr, type CompileIrOptions } from '../../runtime/ir/compileIr.ts';
import type { IrMeta } from '../../runtime/ir/irMeta.ts';
import { routeInput, sendRequest } from '../algorithms/routeInput.ts';
import { CATALOG, graph, type NodeDef } from './fixtures.ts';

function build(g: GraphDocument, options: CompileIrOptions = {}): Algorithm<IrMeta> {
  const r = compileGraph(g, CATALOG);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return compileIr(JSON.parse(JSON.stringify(r.ir)), { models: CATALOG, ...options });
}

/** Runs route() over the inputs in order, on one meta, and returns the decisions. */
function run(alg: Algorithm<IrMeta>, inputs: Partial<RouteInput<IrMeta>>[], meta = alg.initMeta()): number[] {
  return inputs.map((over) => alg.route(routeInput(meta, over)));
}

describe('compileIr', () => {
  it('counts a visit with handBack: stays N−1 times, then returns and keeps the tokens', () => {
    const alg = build(
      graph([
        ['start', 'start', { model: 'large' }],
        ['back', 'handBack', { model: 'large', to: 'small', after: 3 }],
        ['st', 'stay', { model: 'small' }],
      ]),
    );
    const meta = alg.initMeta();
    expect(run(alg, [{ model: 2 }, { model: 2 }, { model: 2 }], meta)).toEqual([0, 0, 1]);
    const out = alg.send!(sendRequest(routeInput(meta, { model: 2, token: 5 }), 1, []));
    expect(out.keep).toBe(true);
    // A new visit starts the count again.
    expect(run(alg, [{ model: 1 }, { model: 2 }, { model: 2 }, { model: 2 }], meta)).toEqual([0, 0, 0, 1]);
  });

  it('debounces with a counter loop through prev: hands off after two unsure tokens in a row', () => {
    const g = graph(
      [
        ['start', 'start'],
        ['h', 'entropy'],
        ['unsure', 'compare', { op: '>', value: 0.5 }],
        ['sure', 'not'],
        ['run', 'counter'],
        ['twice', 'compare', { op: '>=', value: 2 }],
        ['go', 'handoff', { model: 'small', to: 'large' }],
        ['back', 'handBack', { model: 'large', to: 'small' }],
      ],
      ['h.out>unsure.a', 'unsure.out>sure.a', 'unsure.out>run.inc', 'sure.out>run.reset', 'run.value>twice.a', 'twice.out>go.when'],
    );
    const alg = build(g);
    const e = [0.9, 0.1, 0.9, 0.9, 0.9].map((entropy) => ({ model: 1, entropy }));
    expect(run(alg, e)).toEqual([0, 0, 0, 2, 2]);
  });

  it('updates a memory only on its inputs’ model, and a commit rule resets it on arrival', () => {
    const g = graph(
      [
        ['start', 'start'],
        ['h', 'entropy'],
        ['avg', 'movingAverage', { alpha: 0.5, value: 0 }],
        ['high', 'compare', { op: '>', value: 0.4 }],
        ['stayLarge', 'stay', { model: 'large', priority: 0 }],
        ['go', 'handoff', { model: 'small', to: 'large' }],
        ['back', 'handBack', { model: 'large', to: 'small', priority: 20 }],
        ['rc', 'receiveCommit', { model: 'small', reset: ['avg'] }],
      ],
      ['h.out>avg.x', 'avg.value>high.a', 'high.out>stayLarge.when'],
    );
    const alg = build(g);
    const meta = alg.initMeta();
    alg.route(routeInput(meta, { model: 1, entropy: 1 }));
    expect(meta.mem).toEqual([0.5]);
    // On large the average is readable but does not move.
    expect(alg.route(routeInput(meta, { model: 2, entropy: 0 }))).toBe(0);
    expect(meta.mem).toEqual([0.5]);
    const back = alg.send!(sendRequest(routeInput(meta, { model: 2 }), 1));
    expect(alg.receive!(back).meta.mem).toEqual([0]);
    expect(alg.receive!({ ...back, to: 2 }).meta.mem).toEqual([0.5]);
  });

  it('draws the model from weights with u, staying when it draws the current model', () => {
    const g = graph([
      ['start', 'start'],
      ['d1', 'drawModel', { model: 'small', weights: { small: 1, large: 3 }, keep: true }],
      ['d2', 'drawModel', { model: 'large', weights: { small: 1, large: 3 }, keep: true }],
    ]);
    const alg = build(g);
    expect(
      run(
        alg,
        [0, 0.2499, 0.25, 0.99].map((draw) => ({ model: 1, draw })),
      ),
    ).toEqual([0, 0, 2, 2]);
    expect(
      run(
        alg,
        [0.1, 0.5].map((draw) => ({ model: 2, draw })),
      ),
    ).toEqual([1, 0]);
  });

  it('matches tokens by id, and by text when the server gives the vocabulary', () => {
    const g = graph(
      [
        ['start', 'start'],
        ['t', 'sampledToken'],
        ['m', 'tokenMatch', { ids: [3], text: '=', match: 'exact' }],
        ['go', 'handoff', { model: 'small', to: 'large' }],
        ['back', 'handBack', { model: 'large', to: 'small' }],
      ],
      ['t.out>m.token', 'm.out>go.when'],
    );
    const vocab = { small: ['a', 'b', ' =', 'c', '=='] };
    const alg = build(g, { vocab });
    expect(
      run(
        alg,
        [0, 2, 3, 4].map((token) => ({ model: 1, token })),
      ),
    ).toEqual([0, 2, 2, 0]);
    const r = compileGraph(g, CATALOG);
    const noVocab = tryCompileIr(r.ok ? r.ir : null, { models: CATALOG });
    expect(noVocab.ok).toBe(false);
    expect(noVocab.issues).toContainEqual(expect.objectContaining({ nodeId: 'm', code: 'needs_vocab' }));
  });

  it('reads top-k from distribution nodes and asks the runner for enough of them', () => {
    const g = graph(
      [
        ['start', 'start'],
        ['d', 'distribution', { topK: 4 }],
        ['mass', 'topKMass', { k: 2 }],
        ['low', 'compare', { op: '<', value: 0.6 }],
        ['t', 'sampledToken'],
        ['p', 'probOf'],
        ['rare', 'compare', { op: '<', value: 0.05 }],
        ['either', 'or'],
        ['go', 'handoff', { model: 'small', to: 'large' }],
        ['back', 'handBack', { model: 'large', to: 'small' }],
      ],
      ['d.out>mass.dist', 'mass.out>low.a', 'd.out>p.dist', 't.out>p.token', 'p.out>rare.a', 'low.out>either.a', 'rare.out>either.b', 'either.out>go.when'],
    );
    const alg = build(g);
    expect(alg.wants?.[1]).toEqual({ topK: 4, hidden: false, heads: [] });
    const topIds = [5, 6, 7, 8];
    expect(run(alg, [{ model: 1, token: 5, topIds, topProbs: [0.5, 0.2, 0.2, 0.1] }])).toEqual([0]);
    expect(run(alg, [{ model: 1, token: 5, topIds, topProbs: [0.3, 0.2, 0.2, 0.1] }])).toEqual([2]);
    expect(run(alg, [{ model: 1, token: 99, topIds, topProbs: [0.5, 0.3, 0.1, 0.1] }])).toEqual([2]);
  });

  it('treats a head the runner did not provide as unknown: no comparison holds', () => {
    const g = graph(
      [
        ['start', 'start'],
        ['s', 'head', { head: 'citer' }],
        ['c', 'compare', { op: '<', value: 0.9 }],
        ['go', 'handoff', { model: 'small', to: 'large' }],
        ['back', 'handBack', { model: 'large', to: 'small' }],
      ],
      ['s.out>c.a', 'c.out>go.when'],
    );
    const alg = build(g);
    expect(
      run(alg, [
        { model: 1, heads: {} },
        { model: 1, heads: { citer: 0.5 } },
      ]),
    ).toEqual([0, 2]);
  });

  it('computes a value read by several nodes once per step: a chain of And(x, x) stays linear', () => {
    // Each And reads the one before it twice: giving every reader its own copy would make a 2^22-leaf tree.
    const n = 22;
    const nodes: NodeDef[] = [
      ['start', 'start'],
      ['h', 'entropy'],
      ['c', 'compare', { op: '>', value: 0.5 }],
    ];
    const edges = ['h.out>c.a', 'c.out>x0.a', 'c.out>x0.b'];
    for (let i = 0; i < n; i++) {
      nodes.push([`x${i}`, 'and']);
      if (i > 0) edges.push(`x${i - 1}.out>x${i}.a`, `x${i - 1}.out>x${i}.b`);
    }
    nodes.push(['go', 'handoff', { model: 'small', to: 'large' }], ['back', 'handBack', { model: 'large', to: 'small' }]);
    edges.push(`x${n - 1}.out>go.when`);
    const g = graph(nodes, edges);
    const t0 = performance.now();
    const alg = build(g);
    expect(run(alg, [{ entropy: 0.9 }, { entropy: 0.1 }, { entropy: 0.6 }])).toEqual([2, 0, 2]);
    // Milliseconds when shared; building and running 2^22-leaf trees takes many seconds.
    expect(performance.now() - t0).toBeLessThan(2000);
  });

  it('keeps its metadata plain: it survives JSON and structured clone', () => {
    const alg = build(
      graph(
        [
          ['start', 'start'],
          ['c', 'counter'],
          ['k', 'compare', { value: 2 }],
          ['st', 'stay', { model: 'small' }],
        ],
        ['c.value>k.a', 'k.out>st.when'],
      ),
    );
    const meta = alg.initMeta();
    run(alg, [{ model: 1 }, { model: 1 }], meta);
    expect(JSON.parse(JSON.stringify(meta))).toEqual(meta);
    expect(structuredClone(meta)).toEqual(meta);
    expect(meta.mem).toEqual([2]);
  });

  it('throws IrCompileError with one detail per broken rule', () => {
    try {
      compileIr({ schemaVersion: 1, kind: 'tokenrouter.ir' });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(IrCompileError);
      const details = (e as IrCompileError).details;
      expect(details.length).toBeGreaterThan(0);
      for (const d of details) expect(Object.keys(d).sort()).toEqual(['code', 'fix', 'message', 'nodeId', 'severity']);
    }
  });
});
