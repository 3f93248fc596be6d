// Every validation rule: a graph built to break it is rejected at the offending node with the rule's code and a fix.
import { describe, expect, it } from 'vitest';
import { compileGraph } from '../../shared/ir/compileGraph.ts';
import type { GraphDocument } from '../../shared/ir/graph.ts';
import type { IssueCode } from '../../shared/ir/irIssue.ts';
import { validateIr } from '../../shared/ir/validateIr.ts';
import { CATALOG, graph, loadExample, minimal } from './fixtures.ts';

interface RuleCase {
  code: IssueCode;
  nodeId: string | null;
  build: () => unknown;
}

const withEdges = (g: GraphDocument, edges: GraphDocument['edges']): GraphDocument => ({ ...g, edges: [...g.edges, ...edges] });

const errorCases: RuleCase[] = [
  { code: 'invalid_document', nodeId: null, build: () => ({ ...minimal(), nodes: 'none' }) },
  {
    code: 'invalid_document',
    nodeId: 'h',
    build: () => ({ ...minimal(), nodes: minimal().nodes.map((n) => (n.id === 'h' ? { ...n, position: { x: 'left' } } : n)) }),
  },
  { code: 'unsupported_version', nodeId: null, build: () => ({ ...minimal(), schemaVersion: 99 }) },
  { code: 'duplicate_node_id', nodeId: 'h', build: () => minimal([['h', 'entropy', { model: 'large' }]]) },
  {
    code: 'unknown_node_type',
    nodeId: 'x',
    build: () => ({ ...minimal(), nodes: [...minimal().nodes, { id: 'x', type: 'teleport', params: {}, position: { x: 0, y: 0 } }] }),
  },
  { code: 'invalid_param', nodeId: 'cmp', build: () => patch(minimal(), 'cmp', { op: '≈' }) },
  { code: 'invalid_param', nodeId: 'cmp', build: () => patch(minimal(), 'cmp', { colour: 'red' }) },
  { code: 'param_out_of_range', nodeId: 'back', build: () => patch(minimal(), 'back', { after: 0 }) },
  { code: 'param_out_of_range', nodeId: 'ema', build: () => minimal([['ema', 'movingAverage', { alpha: 0 }]], ['h.out>ema.x']) },
  { code: 'invalid_param', nodeId: 'back', build: () => patch(minimal(), 'back', { after: 1.5 }) },
  { code: 'unknown_model', nodeId: 'go', build: () => patch(minimal(), 'go', { to: 'huge' }) },
  {
    code: 'unknown_head',
    nodeId: 'hd',
    build: () =>
      minimal(
        [
          ['hd', 'head', { model: 'large', head: 'citer' }],
          ['c2', 'compare'],
          ['st', 'stay', { model: 'large', priority: 0 }],
        ],
        ['hd.out>c2.a', 'c2.out>st.when'],
      ),
  },
  {
    code: 'unknown_head',
    nodeId: 'hd',
    build: () =>
      minimal(
        [
          ['hd', 'head', { model: 'small', head: 'medusa' }],
          ['c2', 'compare'],
          ['st', 'stay', { model: 'small', priority: 0 }],
        ],
        ['hd.out>c2.a', 'c2.out>st.when'],
      ),
  },
  { code: 'invalid_weights', nodeId: 'dm', build: () => minimal([['dm', 'drawModel', { model: 'large', weights: { small: 0, large: 0 }, priority: 0 }]]) },
  { code: 'invalid_weights', nodeId: 'dm', build: () => minimal([['dm', 'drawModel', { model: 'large', weights: { small: -1 }, priority: 0 }]]) },
  { code: 'unknown_model', nodeId: 'dm', build: () => minimal([['dm', 'drawModel', { model: 'large', weights: { gigantic: 1 }, priority: 0 }]]) },
  { code: 'unknown_memory', nodeId: 'rc', build: () => minimal([['rc', 'receiveCommit', { model: 'large', reset: ['h'] }]]) },
  { code: 'self_handoff', nodeId: 'go', build: () => patch(minimal(), 'go', { to: 'small' }) },
  {
    code: 'dangling_edge',
    nodeId: 'go',
    build: () => withEdges(minimal(), [{ id: 'e', source: 'ghost', sourceHandle: 'out', target: 'go', targetHandle: 'when' }]),
  },
  { code: 'unknown_port', nodeId: 'cmp', build: () => minimal([['h2', 'entropy', { model: 'small' }]], ['h2.out>cmp.c']) },
  {
    code: 'unknown_port',
    nodeId: 'h',
    build: () =>
      minimal(
        [
          ['c2', 'compare'],
          ['st', 'stay', { model: 'small', priority: 0 }],
        ],
        ['h.value>c2.a', 'c2.out>st.when'],
      ),
  },
  { code: 'type_mismatch', nodeId: 'cmp', build: () => minimal([['f', 'flag']], ['f.out>cmp.b']) },
  {
    code: 'type_mismatch',
    nodeId: 'n',
    build: () =>
      minimal(
        [
          ['n', 'not'],
          ['st', 'stay', { model: 'small', priority: 0 }],
        ],
        ['h.out>n.a', 'n.out>st.when'],
      ),
  },
  { code: 'duplicate_input', nodeId: 'go', build: () => minimal([['c2', 'compare']], ['h.out>c2.a', 'c2.out>go.when']) },
  { code: 'missing_input', nodeId: 'cmp', build: () => ({ ...minimal(), edges: minimal().edges.filter((e) => e.target !== 'cmp') }) },
  {
    code: 'cycle',
    nodeId: 'x',
    build: () =>
      minimal(
        [
          ['x', 'arith', { op: '+' }],
          ['y', 'arith'],
          ['c2', 'compare'],
          ['st', 'stay', { model: 'small', priority: 0 }],
        ],
        ['y.out>x.a', 'x.out>y.a', 'x.out>c2.a', 'c2.out>st.when'],
      ),
  },
  {
    code: 'cycle',
    nodeId: 'cnt',
    build: () =>
      minimal(
        [
          ['cnt', 'counter'],
          ['c2', 'compare'],
          ['st', 'stay', { model: 'small', priority: 0 }],
        ],
        ['cnt.value>c2.a', 'c2.out>cnt.inc', 'c2.out>st.when'],
      ),
  },
  {
    code: 'mixed_models',
    nodeId: 'sum',
    build: () =>
      minimal(
        [
          ['hl', 'entropy', { model: 'large' }],
          ['sum', 'arith', { op: '+' }],
          ['c2', 'compare'],
          ['st', 'stay', { model: 'large', priority: 0 }],
        ],
        ['h.out>sum.a', 'hl.out>sum.b', 'sum.out>c2.a', 'c2.out>st.when'],
      ),
  },
  {
    code: 'wrong_model_scope',
    nodeId: 'st',
    build: () =>
      minimal(
        [
          ['c2', 'compare'],
          ['st', 'stay', { model: 'large', priority: 0 }],
        ],
        ['h.out>c2.a', 'c2.out>st.when'],
      ),
  },
  { code: 'missing_start', nodeId: null, build: () => ({ ...minimal(), nodes: minimal().nodes.filter((n) => n.id !== 'start') }) },
  { code: 'duplicate_start', nodeId: 's2', build: () => minimal([['s2', 'start', { model: 'large' }]]) },
  { code: 'missing_decision', nodeId: 'go', build: () => ({ ...minimal(), nodes: minimal().nodes.filter((n) => n.id !== 'back') }) },
  {
    code: 'missing_decision',
    nodeId: 'start',
    build: () =>
      graph([
        ['start', 'start', { model: 'large' }],
        ['st', 'stay', { model: 'small' }],
      ]),
  },
  {
    code: 'duplicate_receive',
    nodeId: 'r2',
    build: () =>
      minimal([
        ['r1', 'receiveAccept', { model: 'large' }],
        ['r2', 'receiveAccept', { model: 'large' }],
      ]),
  },
  { code: 'too_large', nodeId: null, build: () => minimal(Array.from({ length: 300 }, (_, i) => [`k${i}`, 'constant'] as [string, 'constant'])) },
];

function patch(g: GraphDocument, id: string, params: Record<string, unknown>): GraphDocument {
  return { ...g, nodes: g.nodes.map((n) => (n.id === id ? { ...n, params: { ...n.params, ...params } as GraphDocument['nodes'][number]['params'] } : n)) };
}

describe('the minimal fixture', () => {
  it('is sound, so each case below fails for its own reason only', () => {
    const r = compileGraph(minimal(), CATALOG);
    expect(r.issues.filter((i) => i.severity === 'error')).toEqual([]);
    expect(r.ok).toBe(true);
  });
});

describe.each(errorCases)('rule $code at $nodeId', ({ code, nodeId, build }) => {
  it('rejects the graph at the offending node with a one-line fix', () => {
    const r = compileGraph(build(), CATALOG);
    expect(r.ok).toBe(false);
    const hit = r.issues.find((i) => i.code === code && i.nodeId === nodeId);
    expect(hit, JSON.stringify(r.issues, null, 1)).toBeDefined();
    expect(hit!.severity).toBe('error');
    expect(hit!.fix.length).toBeGreaterThan(5);
    expect(hit!.fix).not.toContain('\n');
  });
});

describe('allowed shapes', () => {
  it('accepts a loop that goes through a memory node prev output', () => {
    const g = minimal(
      [
        ['cnt', 'counter'],
        ['c2', 'compare', { op: '<', value: 3 }],
        ['st', 'stay', { model: 'small', priority: 0 }],
      ],
      ['cnt.prev>c2.a', 'c2.out>cnt.inc', 'c2.out>st.when'],
    );
    const r = compileGraph(g, CATALOG);
    expect(r.issues.filter((i) => i.severity === 'error')).toEqual([]);
  });

  it('carries a signal across models through memory without a scope error', () => {
    const g = minimal(
      [
        ['ema', 'movingAverage'],
        ['c2', 'compare'],
        ['st', 'stay', { model: 'large', priority: 0 }],
      ],
      ['h.out>ema.x', 'ema.value>c2.a', 'c2.out>st.when'],
    );
    expect(compileGraph(g, CATALOG).ok).toBe(true);
  });
});

describe('warnings', () => {
  it('flags a decision no request reaches, without blocking', () => {
    const r = compileGraph(minimal([['m', 'stay', { model: 'medium' }]]), CATALOG);
    expect(r.ok).toBe(true);
    expect(r.issues).toContainEqual(expect.objectContaining({ nodeId: 'm', code: 'unreachable_decision', severity: 'warning' }));
  });

  it('flags a decision shadowed by an unconditional one', () => {
    const r = compileGraph(minimal([['st', 'stay', { model: 'small', priority: 0 }]]), CATALOG);
    expect(r.ok).toBe(true);
    expect(r.issues).toContainEqual(expect.objectContaining({ nodeId: 'go', code: 'shadowed_decision' }));
  });

  it('flags a node whose output feeds nothing', () => {
    const r = compileGraph(minimal([['lonely', 'maxProb']]), CATALOG);
    expect(r.issues).toContainEqual(expect.objectContaining({ nodeId: 'lonely', code: 'unused_node', severity: 'warning' }));
  });
});

describe('IR-only rules', () => {
  const ir = () => {
    const r = compileGraph(loadExample('r-stitch'), CATALOG);
    if (!r.ok) throw new Error('example did not compile');
    return structuredClone(r.ir);
  };

  it('rejects an IR whose node order reads a value before it is computed', () => {
    const bad = ir();
    bad.nodes.reverse();
    const r = validateIr(bad, CATALOG);
    expect(r.ok).toBe(false);
    expect(r.issues).toContainEqual(expect.objectContaining({ code: 'ir_inconsistent', nodeId: 'toLarge' }));
  });

  it('rejects an IR whose declared routes or wants disagree with its nodes', () => {
    const bad = ir();
    bad.routes.small = [];
    expect(validateIr(bad, CATALOG).issues).toContainEqual(expect.objectContaining({ code: 'ir_inconsistent', nodeId: null }));
    const greedy = ir();
    greedy.wants.small.heads = ['r2r'];
    expect(validateIr(greedy, CATALOG).ok).toBe(false);
  });

  it('rejects an IR naming a model the server does not deploy', () => {
    const r = validateIr(ir(), [CATALOG[0]]);
    expect(r.issues).toContainEqual(expect.objectContaining({ code: 'unknown_model', nodeId: 'entropyLarge' }));
  });

  it('rejects an unsupported schema version', () => {
    expect(validateIr({ ...ir(), schemaVersion: 2 }, CATALOG).issues[0].code).toBe('unsupported_version');
  });
});
