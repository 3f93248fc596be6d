// Pure edits of a graph document: add, connect, remove, move, set parameters, copy and paste. No React, no store.
import type { GraphDocument, GraphEdge, GraphNode } from '../../../shared/ir/graph.ts';
import { edgeId } from '../../../shared/ir/irToGraph.ts';
import { defaultParams, nodeSpec } from '../../../shared/ir/nodeRegistry.ts';
import type { NodeType, ParamValue, PortSpec, PortType } from '../../../shared/ir/nodeTypes.ts';

export interface Fragment {
  nodes: GraphNode[];
  edges: GraphEdge[];
}

export interface PortEnd {
  node: string;
  port: string;
}

/** A fresh id like "entropy3", unique in `taken`. */
export function freshId(type: string, taken: ReadonlySet<string>): string {
  for (let i = 1; ; i++) {
    const id = `${type}${i}`;
    if (!taken.has(id)) return id;
  }
}

export function addNode(
  g: GraphDocument,
  type: NodeType,
  position: { x: number; y: number },
  params?: Record<string, ParamValue>,
): { graph: GraphDocument; id: string } {
  const id = freshId(type, new Set(g.nodes.map((n) => n.id)));
  const node: GraphNode = { id, type, params: { ...defaultParams(type), ...params }, position: { x: Math.round(position.x), y: Math.round(position.y) } };
  return { graph: { ...g, nodes: [...g.nodes, node] }, id };
}

function portSpec(g: GraphDocument, end: PortEnd, side: 'in' | 'out'): PortSpec | undefined {
  const n = g.nodes.find((x) => x.id === end.node);
  const spec = n && nodeSpec(n.type);
  return (side === 'in' ? spec?.inputs : spec?.outputs)?.find((p) => p.name === end.port);
}

export function portType(g: GraphDocument, end: PortEnd, side: 'in' | 'out'): PortType | undefined {
  return portSpec(g, end, side)?.type;
}

/** Why a connection is refused, in words naming both ports, or null when it is fine (an occupied input is replaced, not refused). */
export function connectionProblem(g: GraphDocument, from: PortEnd, to: PortEnd): string | null {
  if (from.node === to.node) return `Can't connect ${from.node} to itself: a node cannot feed its own input.`;
  const out = portSpec(g, from, 'out');
  const inp = portSpec(g, to, 'in');
  if (!out || !inp) return `Can't connect ${from.node}.${from.port} → ${to.node}.${to.port}: no such port.`;
  if (out.type !== inp.type)
    return `Can't connect ${from.node} → ${to.node}: output “${out.label}” is a ${out.type}, input “${inp.label}” expects a ${inp.type}.`;
  return null;
}

/** A handle at either end of a drag, as React Flow reports it: outputs are sources, inputs targets. */
export interface HandleEnd extends PortEnd {
  side: 'source' | 'target';
}

/** Why a drag between two handles, started at either end, makes no edge. */
export function dragProblem(g: GraphDocument, a: HandleEnd, b: HandleEnd): string | null {
  if (a.side === b.side) return `Can't connect two ${a.side === 'source' ? 'outputs' : 'inputs'}: drag from an output (right side) to an input (left side).`;
  return a.side === 'source' ? connectionProblem(g, a, b) : connectionProblem(g, b, a);
}

/** Connects from → to; an edge already on the input is replaced (one edge per input). */
export function connect(g: GraphDocument, from: PortEnd, to: PortEnd): GraphDocument {
  if (connectionProblem(g, from, to)) return g;
  const edges = g.edges.filter((e) => !(e.target === to.node && e.targetHandle === to.port));
  edges.push({ id: edgeId(from.node, from.port, to.node, to.port), source: from.node, sourceHandle: from.port, target: to.node, targetHandle: to.port });
  return { ...g, edges };
}

/** Removes nodes (with their edges) and edges; memory references to removed nodes are dropped too. */
export function remove(g: GraphDocument, nodeIds: readonly string[], edgeIds: readonly string[]): GraphDocument {
  const nodes = new Set(nodeIds);
  const edges = new Set(edgeIds);
  return {
    ...g,
    nodes: g.nodes
      .filter((n) => !nodes.has(n.id))
      .map((n) => (Array.isArray(n.params.reset) ? { ...n, params: { ...n.params, reset: (n.params.reset as string[]).filter((r) => !nodes.has(r)) } } : n)),
    edges: g.edges.filter((e) => !edges.has(e.id) && !nodes.has(e.source) && !nodes.has(e.target)),
  };
}

export function move(g: GraphDocument, positions: ReadonlyMap<string, { x: number; y: number }>): GraphDocument {
  return { ...g, nodes: g.nodes.map((n) => (positions.has(n.id) ? { ...n, position: positions.get(n.id)! } : n)) };
}

export function setParam(g: GraphDocument, id: string, name: string, value: ParamValue): GraphDocument {
  return { ...g, nodes: g.nodes.map((n) => (n.id === id ? { ...n, params: { ...n.params, [name]: value } } : n)) };
}

/** The selected nodes and the edges among them. */
export function copy(g: GraphDocument, nodeIds: readonly string[]): Fragment {
  const ids = new Set(nodeIds);
  return {
    nodes: structuredClone(g.nodes.filter((n) => ids.has(n.id))),
    edges: structuredClone(g.edges.filter((e) => ids.has(e.source) && ids.has(e.target))),
  };
}

/** Pastes a fragment with fresh ids, shifted by `offset`; returns the new node ids. */
export function paste(g: GraphDocument, f: Fragment, offset: number): { graph: GraphDocument; ids: string[] } {
  const taken = new Set(g.nodes.map((n) => n.id));
  const rename = new Map<string, string>();
  const nodes = f.nodes.map((n) => {
    const id = freshId(n.type, taken);
    taken.add(id);
    rename.set(n.id, id);
    return { ...structuredClone(n), id, position: { x: n.position.x + offset, y: n.position.y + offset } };
  });
  for (const n of nodes) if (Array.isArray(n.params.reset)) n.params.reset = (n.params.reset as string[]).map((r) => rename.get(r) ?? r);
  const edges = f.edges.map((e) => {
    const source = rename.get(e.source)!;
    const target = rename.get(e.target)!;
    return { ...e, id: edgeId(source, e.sourceHandle, target, e.targetHandle), source, target };
  });
  return { graph: { ...g, nodes: [...g.nodes, ...nodes], edges: [...g.edges, ...edges] }, ids: nodes.map((n) => n.id) };
}

/** A stable key of what validation and deploy depend on (positions excluded). */
export function structureKey(g: GraphDocument): string {
  return JSON.stringify([g.name, g.nodes.map((n) => [n.id, n.type, n.params]), g.edges.map((e) => [e.source, e.sourceHandle, e.target, e.targetHandle])]);
}

/** A stable key of the whole document, for dirty tracking. */
export function documentKey(g: GraphDocument): string {
  return JSON.stringify(g);
}
