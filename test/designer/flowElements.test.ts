// The canvas's data mapping: graph → React Flow elements, and React Flow's changes → store edits.
import { describe, expect, it } from 'vitest';
import type { GraphDocument } from '../../shared/ir/graph.ts';
import { edgeSelection, flowEdges, flowNodes, nodeEdits } from '../../designer/src/designer/flowElements.ts';
import { PORT_COLORS } from '../../designer/src/designer/theme.ts';

const graph: GraphDocument = {
  schemaVersion: 1,
  kind: 'tokenrouter.graph',
  name: 'g',
  nodes: [
    { id: 'e', type: 'entropy', position: { x: 0, y: 0 }, params: { model: 'small' } },
    { id: 'c', type: 'compare', position: { x: 200, y: 0 }, params: { op: '>', value: 0.5 } },
    { id: 'x', type: 'noSuchType', position: { x: 400, y: 0 }, params: {} },
  ],
  edges: [
    { id: 'ok', source: 'e', sourceHandle: 'out', target: 'c', targetHandle: 'a' },
    { id: 'bad', source: 'e', sourceHandle: 'out', target: 'x', targetHandle: 'in' },
  ],
};
const catalog = [{ name: 'small' }, { name: 'large' }];
const issue = { nodeId: 'c', code: 'missing_input' as const, message: 'm', fix: 'f', severity: 'error' as const };

describe('flowNodes / flowEdges', () => {
  it('carries selection, issues, connected inputs and the model colour; an unknown type gets a placeholder spec', () => {
    const ns = flowNodes(graph, ['c'], { e: { width: 180, height: 60 } }, [issue], catalog);
    expect(ns.map((n) => [n.id, n.selected])).toEqual([
      ['e', false],
      ['c', true],
      ['x', false],
    ]);
    expect(ns[0].measured).toEqual({ width: 180, height: 60 });
    expect(ns[0].data.modelColor).not.toBeNull();
    expect(ns[1].data.modelColor).toBeNull();
    expect(ns[1].data.issues).toEqual([issue]);
    expect([...ns[1].data.connected]).toEqual(['a']);
    expect(ns[2].data.spec.label).toBe('Unknown “noSuchType”');
  });

  it('colours an edge by its port type, red when an end is unknown, thick when selected', () => {
    const [ok, bad] = flowEdges(graph, ['bad']);
    expect([ok.className, ok.style?.stroke, ok.style?.strokeWidth]).toEqual([undefined, PORT_COLORS.number, 1.8]);
    expect([bad.className, bad.style?.stroke, bad.style?.strokeWidth]).toEqual(['edge-bad', '#f4645d', 3]);
  });
});

describe('nodeEdits / edgeSelection', () => {
  it('rounds dragged positions, puts a finished drag back to the stored position, toggles selection and records sizes', () => {
    const edits = nodeEdits(
      [
        { type: 'position', id: 'e', position: { x: 10.4, y: 19.6 }, dragging: true },
        { type: 'position', id: 'c', dragging: false },
        { type: 'select', id: 'x', selected: true },
        { type: 'select', id: 'c', selected: false },
        { type: 'dimensions', id: 'e', dimensions: { width: 100, height: 40 } },
        { type: 'remove', id: 'x' },
      ],
      graph,
      { nodes: ['c'], edges: [] },
    );
    expect([...edits.positions]).toEqual([
      ['e', { x: 10, y: 20 }],
      ['c', { x: 200, y: 0 }],
    ]);
    expect(edits.dragging).toBe(true);
    expect(edits.selected).toEqual(['x']);
    expect(edits.measured).toEqual([['e', { width: 100, height: 40 }]]);
  });

  it('leaves selection alone when nothing selects, and toggles edges otherwise', () => {
    expect(nodeEdits([{ type: 'dimensions', id: 'e', dimensions: { width: 1, height: 1 } }], graph, { nodes: ['c'], edges: [] }).selected).toBeNull();
    expect(edgeSelection([{ type: 'remove', id: 'ok' }], { nodes: [], edges: ['ok'] })).toBeNull();
    expect(
      edgeSelection(
        [
          { type: 'select', id: 'bad', selected: true },
          { type: 'select', id: 'ok', selected: false },
        ],
        { nodes: [], edges: ['ok'] },
      ),
    ).toEqual(['bad']);
  });
});
