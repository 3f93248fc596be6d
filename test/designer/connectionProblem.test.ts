// A refused connection says why in words: both nodes, both ports and both types; a drag between two outputs or two inputs is explained too.
import { describe, expect, it } from 'vitest';
import type { GraphDocument } from '../../shared/ir/graph.ts';
import { addNode, connect, connectionProblem, dragProblem } from '../../designer/src/designer/graphEdits.ts';

let g: GraphDocument = { schemaVersion: 1, kind: 'tokenrouter.graph', name: 't', nodes: [], edges: [] };
for (const t of ['entropy', 'handoff', 'compare'] as const) g = addNode(g, t, { x: 0, y: 0 }).graph;

describe('connectionProblem', () => {
  it('names both nodes, ports and types when the types differ', () => {
    expect(connectionProblem(g, { node: 'entropy1', port: 'out' }, { node: 'handoff1', port: 'when' })).toBe(
      "Can't connect entropy1 → handoff1: output “entropy” is a number, input “when” expects a boolean.",
    );
  });

  it('accepts matching types, and connect() adds the edge', () => {
    expect(connectionProblem(g, { node: 'entropy1', port: 'out' }, { node: 'compare1', port: 'a' })).toBeNull();
    expect(connect(g, { node: 'entropy1', port: 'out' }, { node: 'compare1', port: 'a' }).edges).toHaveLength(1);
  });

  it('explains a drag started at the input end the same way', () => {
    expect(dragProblem(g, { node: 'handoff1', port: 'when', side: 'target' }, { node: 'entropy1', port: 'out', side: 'source' })).toMatch(
      /output “entropy” is a number, input “when” expects a boolean/,
    );
  });

  it('explains two outputs', () => {
    expect(dragProblem(g, { node: 'entropy1', port: 'out', side: 'source' }, { node: 'compare1', port: 'out', side: 'source' })).toMatch(/two outputs/);
  });
});
