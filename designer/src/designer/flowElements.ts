// The graph document as React Flow elements, and React Flow's changes as store edits: plain data both ways, no rendering.
import type { Edge, EdgeChange, NodeChange } from '@xyflow/react';
import type { GraphDocument } from '../../../shared/ir/graph.ts';
import type { IrIssue } from '../../../shared/ir/irIssue.ts';
import { nodeSpec } from '../../../shared/ir/nodeRegistry.ts';
import type { NodeSpec } from '../../../shared/ir/nodeTypes.ts';
import type { AlgoFlowNode } from './AlgoNode.tsx';
import { portType } from './graphEdits.ts';
import { modelColor } from './modelColors.ts';
import { PORT_COLORS } from './theme.ts';

type Size = { width: number; height: number };
type Selection = { nodes: readonly string[]; edges: readonly string[] };

function unknownSpec(type: string): NodeSpec {
  return { type, category: 'logic', label: `Unknown “${type}”`, description: 'Not a node type of this designer.', inputs: [], outputs: [], params: [] };
}

/** One flow node per graph node, carrying its spec, issues, connected inputs and model colour. */
export function flowNodes(
  graph: GraphDocument,
  selectedNodes: readonly string[],
  measured: Readonly<Record<string, Size>>,
  issues: readonly IrIssue[],
  catalog: readonly { name: string }[],
): AlgoFlowNode[] {
  const selected = new Set(selectedNodes);
  const byNode = new Map<string, IrIssue[]>();
  for (const i of issues) if (i.nodeId) byNode.set(i.nodeId, [...(byNode.get(i.nodeId) ?? []), i]);
  const connected = new Map<string, Set<string>>();
  for (const e of graph.edges) connected.set(e.target, (connected.get(e.target) ?? new Set()).add(e.targetHandle));
  return graph.nodes.map((n) => {
    const spec = nodeSpec(n.type) ?? unknownSpec(n.type);
    const hasModel = spec.params.some((p) => p.name === 'model') && typeof n.params.model === 'string';
    return {
      id: n.id,
      type: 'algo',
      position: n.position,
      selected: selected.has(n.id),
      measured: measured[n.id],
      data: {
        spec,
        params: n.params,
        issues: byNode.get(n.id) ?? [],
        connected: connected.get(n.id) ?? new Set(),
        modelColor: hasModel ? modelColor(n.params.model as string, catalog) : null,
      },
    };
  });
}

/** One flow edge per graph edge, coloured by its port type; red when the two ends' types differ. */
export function flowEdges(graph: GraphDocument, selectedEdges: readonly string[]): Edge[] {
  const selected = new Set(selectedEdges);
  return graph.edges.map((e) => {
    const out = portType(graph, { node: e.source, port: e.sourceHandle }, 'out');
    const inp = portType(graph, { node: e.target, port: e.targetHandle }, 'in');
    const bad = !out || !inp || out !== inp;
    return {
      id: e.id,
      source: e.source,
      sourceHandle: e.sourceHandle,
      target: e.target,
      targetHandle: e.targetHandle,
      selected: selected.has(e.id),
      className: bad ? 'edge-bad' : undefined,
      style: { stroke: bad ? '#f4645d' : out ? PORT_COLORS[out] : '#7d8896', strokeWidth: selected.has(e.id) ? 3 : 1.8 },
    };
  });
}

export interface NodeEdits {
  /** Node positions (snapped to whole pixels); a drag that ended puts the stored position back. */
  positions: Map<string, { x: number; y: number }>;
  dragging: boolean;
  /** The new node selection, when it changed. */
  selected: string[] | null;
  measured: [string, Size][];
}

/** What a batch of node changes means for the store. 'remove' is left to onDelete, so a deletion is one undo step. */
export function nodeEdits(changes: readonly NodeChange<AlgoFlowNode>[], graph: GraphDocument, selection: Selection): NodeEdits {
  const edits: NodeEdits = { positions: new Map(), dragging: false, selected: null, measured: [] };
  let sel: Set<string> | null = null;
  for (const c of changes) {
    if (c.type === 'position' && c.position) {
      edits.positions.set(c.id, { x: Math.round(c.position.x), y: Math.round(c.position.y) });
      edits.dragging ||= c.dragging === true;
    } else if (c.type === 'position' && c.dragging === false) {
      edits.positions.set(c.id, graph.nodes.find((n) => n.id === c.id)?.position ?? { x: 0, y: 0 });
    } else if (c.type === 'select') {
      sel ??= new Set(selection.nodes);
      if (c.selected) sel.add(c.id);
      else sel.delete(c.id);
    } else if (c.type === 'dimensions' && c.dimensions) {
      edits.measured.push([c.id, c.dimensions]);
    }
  }
  edits.selected = sel ? [...sel] : null;
  return edits;
}

/** The new edge selection a batch of edge changes makes, or null when they select nothing. */
export function edgeSelection(changes: readonly EdgeChange[], selection: Selection): string[] | null {
  let sel: Set<string> | null = null;
  for (const c of changes) {
    if (c.type !== 'select') continue;
    sel ??= new Set(selection.edges);
    if (c.selected) sel.add(c.id);
    else sel.delete(c.id);
  }
  return sel ? [...sel] : null;
}
