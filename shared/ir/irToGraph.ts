// IR → graph: rebuilds the designer document from an IR (nodes, edges, layout) for editing and for re-validation.
import type { GraphDocument, GraphEdge } from './graph.ts';
import { GRAPH_SCHEMA_VERSION } from './graph.ts';
import type { IrDocument } from './irSchema.ts';

export function edgeId(source: string, sourceHandle: string, target: string, targetHandle: string): string {
  return `${source}.${sourceHandle}-${target}.${targetHandle}`;
}

export function irToGraph(ir: IrDocument): GraphDocument {
  const edges: GraphEdge[] = [];
  for (const n of ir.nodes) {
    for (const [port, ref] of Object.entries(n.inputs)) {
      edges.push({ id: edgeId(ref.node, ref.port, n.id, port).slice(0, 64), source: ref.node, sourceHandle: ref.port, target: n.id, targetHandle: port });
    }
  }
  const depth = new Map<string, number>();
  for (const n of ir.nodes) {
    const d = Math.max(-1, ...Object.values(n.inputs).map((r) => depth.get(r.node) ?? 0));
    depth.set(n.id, d + 1);
  }
  const rows = new Map<number, number>();
  const nodes = ir.nodes.map((n) => {
    const col = depth.get(n.id) ?? 0;
    const row = rows.get(col) ?? 0;
    rows.set(col, row + 1);
    const placed = ir.layout && Object.hasOwn(ir.layout, n.id) ? ir.layout[n.id] : { x: col * 260, y: row * 140 };
    return { id: n.id, type: n.type, params: { ...n.params }, position: { x: placed.x, y: placed.y } };
  });
  return {
    schemaVersion: GRAPH_SCHEMA_VERSION,
    kind: 'tokenrouter.graph',
    name: ir.name,
    ...(ir.description ? { description: ir.description } : {}),
    nodes,
    edges,
  };
}
