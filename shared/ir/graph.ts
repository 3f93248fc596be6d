// The designer's document: nodes with positions and parameters, edges between typed handles; zod-checked at every boundary.
import { z } from 'zod';
import { LIMITS, type ParamValue } from './nodeTypes.ts';

export const GRAPH_SCHEMA_VERSION = 1;

export interface GraphNode {
  id: string;
  type: string;
  params: Record<string, ParamValue>;
  position: { x: number; y: number };
}

export interface GraphEdge {
  id: string;
  source: string;
  sourceHandle: string;
  target: string;
  targetHandle: string;
}

export interface GraphDocument {
  schemaVersion: typeof GRAPH_SCHEMA_VERSION;
  kind: 'tokenrouter.graph';
  name: string;
  description?: string;
  nodes: GraphNode[];
  edges: GraphEdge[];
}

const id = z.string().min(1).max(LIMITS.maxIdLength);
const finite = z.number().finite();

/** Parameter values as JSON can carry them; each node type's own ranges are checked later, with node ids. */
export const paramValueSchema = z.union([
  finite,
  z.boolean(),
  z.string().max(256),
  z.array(finite).max(LIMITS.maxTokenIds),
  z.array(z.string().max(LIMITS.maxIdLength)).max(LIMITS.maxNodes),
  z.record(z.string().max(LIMITS.maxNameLength), finite).refine((r) => Object.keys(r).length <= 32, 'too many keys'),
]);

export const paramsSchema = z.record(z.string().max(LIMITS.maxNameLength), paramValueSchema).refine((r) => Object.keys(r).length <= 32, 'too many parameters');

export const graphSchema = z.object({
  schemaVersion: z.literal(GRAPH_SCHEMA_VERSION),
  kind: z.literal('tokenrouter.graph'),
  name: z.string().min(1).max(LIMITS.maxNameLength),
  description: z.string().max(2000).optional(),
  nodes: z
    .array(z.object({ id, type: z.string().max(LIMITS.maxNameLength), params: paramsSchema, position: z.object({ x: finite, y: finite }) }))
    .max(LIMITS.maxNodes),
  edges: z.array(z.object({ id, source: id, sourceHandle: id, target: id, targetHandle: id })).max(LIMITS.maxEdges),
});

export function emptyGraph(name = 'untitled'): GraphDocument {
  return { schemaVersion: GRAPH_SCHEMA_VERSION, kind: 'tokenrouter.graph', name, nodes: [], edges: [] };
}
