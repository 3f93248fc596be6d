// A node type defined here, in one module plus its registry entry, reaches the palette, the graph compiler, IR validation and the IR interpreter.
import { describe, expect, it } from 'vitest';
import { compileGraph } from '../../shared/ir/compileGraph.ts';
import type { GraphDocument } from '../../shared/ir/graph.ts';
import { BUILTIN_NODE_TYPES, createNodeRegistry } from '../../shared/ir/nodeRegistry.ts';
import type { ValueDef } from '../../shared/ir/nodeTypeDef.ts';
import { validateIr } from '../../shared/ir/validateIr.ts';
import { compileIr, tryCompileIr } from '../../runtime/ir/compileIr.ts';
import { paletteGroups } from '../../designer/src/designer/paletteGroups.ts';
import { routeInput } from '../algorithms/routeInput.ts';
import { CATALOG, graph } from './fixtures.ts';

// The toy module: one number in, twice it out.
const double: ValueDef = {
  type: 'double',
  category: 'logic',
  label: 'Double',
  description: 'Twice its input.',
  inputs: [{ name: 'a', type: 'number', label: 'a' }],
  outputs: [{ name: 'out', type: 'number', label: '2a' }],
  params: [],
  evaluate(ctx) {
    const a = ctx.num('a');
    return { num: (x) => 2 * a(x) };
  },
  summary: () => '2 · a',
};
// Its registry entry.
const registry = createNodeRegistry([...BUILTIN_NODE_TYPES, double]);

/** Small hands off to large when twice the entropy exceeds 0.5; `params` go on the Double node. */
function doubled(params: Record<string, number> = {}): GraphDocument {
  const g = graph(
    [
      ['start', 'start', { model: 'small' }],
      ['h', 'entropy', { model: 'small' }],
      ['cmp', 'compare', { op: '>', value: 0.5 }],
      ['go', 'handoff', { model: 'small', to: 'large' }],
      ['back', 'handBack', { model: 'large', to: 'small' }],
    ],
    ['h.out>x2.a', 'x2.out>cmp.a', 'cmp.out>go.when'],
  );
  g.nodes.push({ id: 'x2', type: 'double', params, position: { x: 0, y: 0 } });
  return g;
}

describe('a node type added in a test', () => {
  it('is listed by the palette, among the logic nodes and by search', () => {
    const logic = paletteGroups('', registry).find((g) => g.category === 'logic')!;
    expect(logic.defs.map((d) => d.type)).toContain('double');
    expect(paletteGroups('twice', registry).flatMap((g) => g.defs.map((d) => d.type))).toEqual(['double']);
    expect(paletteGroups('twice')).toEqual([]);
  });

  it('compiles to IR with the registry that holds it, and is unknown without it', () => {
    const r = compileGraph(doubled(), CATALOG, registry);
    expect(r.issues).toEqual([]);
    expect(r.ok && r.ir.nodes.find((n) => n.id === 'x2')).toEqual({ id: 'x2', type: 'double', params: {}, inputs: { a: { node: 'h', port: 'out' } } });
    const without = compileGraph(doubled(), CATALOG);
    expect(without.issues).toContainEqual(expect.objectContaining({ nodeId: 'x2', code: 'unknown_node_type' }));
  });

  it('is checked like any node: unknown parameters and wrong wiring are refused, in the graph and in the IR', () => {
    expect(compileGraph(doubled({ factor: 3 }), CATALOG, registry).issues).toContainEqual(expect.objectContaining({ nodeId: 'x2', code: 'invalid_param' }));
    const boolIn = doubled();
    boolIn.edges[0] = { ...boolIn.edges[0], source: 'cmp', sourceHandle: 'out' };
    expect(compileGraph(boolIn, CATALOG, registry).issues).toContainEqual(expect.objectContaining({ nodeId: 'x2', code: 'type_mismatch' }));
    const r = compileGraph(doubled(), CATALOG, registry);
    if (!r.ok) throw new Error('unreachable: compiled above');
    const ir = structuredClone(r.ir);
    ir.nodes.find((n) => n.id === 'x2')!.params = { factor: 3 };
    expect(validateIr(ir, CATALOG, registry).issues).toContainEqual(expect.objectContaining({ nodeId: 'x2', code: 'invalid_param' }));
  });

  it('runs in the IR interpreter: its closure decides the handoff', () => {
    const r = compileGraph(doubled(), CATALOG, registry);
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    const alg = compileIr(JSON.parse(JSON.stringify(r.ir)), { models: CATALOG, registry });
    const meta = alg.initMeta();
    // 2 × 0.3 > 0.5 hands off; 2 × 0.2 does not, and neither would 0.3 undoubled.
    expect([0.3, 0.2].map((entropy) => alg.route(routeInput(meta, { model: 1, entropy })))).toEqual([2, 0]);
    expect(tryCompileIr(r.ir, { models: CATALOG }).issues).toContainEqual(expect.objectContaining({ nodeId: 'x2', code: 'unknown_node_type' }));
  });

  it('may not reuse a name the registry already holds', () => {
    expect(() => createNodeRegistry([...BUILTIN_NODE_TYPES, { ...double, type: 'compare' }])).toThrow(/"compare" is defined twice/);
  });
});
