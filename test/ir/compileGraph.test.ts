// Graph → IR: the example graphs compile cleanly, the IR round-trips, and what the IR declares matches the graph.
import { describe, expect, it } from 'vitest';
import { compileGraph } from '../../shared/ir/compileGraph.ts';
import { irToGraph } from '../../shared/ir/irToGraph.ts';
import { validateIr } from '../../shared/ir/validateIr.ts';
import { CATALOG, EXAMPLES, loadExample } from './fixtures.ts';

describe.each(EXAMPLES)('example graph %s', (name) => {
  it('compiles with no issue at all', () => {
    const r = compileGraph(loadExample(name), CATALOG);
    expect(r.issues).toEqual([]);
    expect(r.ok).toBe(true);
  });

  it('round-trips: IR → graph → IR gives the same IR, and the IR validates on its own', () => {
    const r = compileGraph(loadExample(name), CATALOG);
    if (!r.ok) throw new Error('did not compile');
    const again = compileGraph(irToGraph(JSON.parse(JSON.stringify(r.ir))), CATALOG);
    expect(again.ok && again.ir).toEqual(r.ir);
    expect(validateIr(JSON.parse(JSON.stringify(r.ir)), CATALOG).ok).toBe(true);
    expect(validateIr(r.ir, null).ok).toBe(true);
  });
});

describe('compiled IR', () => {
  it('declares models in catalog order, the entry, and the heads each model must compute', () => {
    const r = compileGraph(loadExample('citer'), CATALOG);
    if (!r.ok) throw new Error('did not compile');
    expect(r.ir.schemaVersion).toBe(1);
    expect(r.ir.models).toEqual(['small', 'large']);
    expect(r.ir.entry).toBe('small');
    expect(r.ir.wants.small.heads).toEqual(['citer']);
    expect(r.ir.wants.large.heads).toEqual([]);
    expect(r.ir.routes).toEqual({ small: ['toLarge'], large: ['handBack'] });
  });

  it('orders nodes so every input is computed before it is read', () => {
    const r = compileGraph(loadExample('r-stitch'), CATALOG);
    if (!r.ok) throw new Error('did not compile');
    const at = new Map(r.ir.nodes.map((n, i) => [n.id, i]));
    for (const [i, n] of r.ir.nodes.entries()) for (const ref of Object.values(n.inputs)) expect(at.get(ref.node)!).toBeLessThan(i);
  });

  it('includes a third model only when a decision can reach it', () => {
    const me = compileGraph(loadExample('me'), CATALOG);
    expect(me.ok && me.ir.models).toEqual(['small', 'medium', 'large']);
  });
});
