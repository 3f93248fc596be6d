// Test fixtures: the model catalog, the example graphs, and a terse graph builder.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { GraphDocument } from '../../shared/ir/graph.ts';
import type { ModelCatalogEntry } from '../../shared/ir/checkParams.ts';
import { defaultParams } from '../../shared/ir/nodeRegistry.ts';
import type { NodeType, ParamValue } from '../../shared/ir/nodeTypes.ts';

export const CATALOG: ModelCatalogEntry[] = [
  { name: 'small', heads: ['citer', 'r2r', 'colm'], vocabSize: 64 },
  { name: 'medium', heads: [], vocabSize: 64 },
  { name: 'large', heads: [], vocabSize: 64 },
];

export const EXAMPLES = ['r-stitch', 'citer', 'r2r', 'co-llm', 'me'] as const;

export function loadExample(name: string): GraphDocument {
  return JSON.parse(readFileSync(fileURLToPath(new URL(`../../examples/graphs/${name}.json`, import.meta.url)), 'utf8')) as GraphDocument;
}

export type NodeDef = [id: string, type: NodeType, params?: Record<string, ParamValue>];

/** Builds a graph from [id, type, params] triples and "source.port>target.port" edges; params merge over defaults. */
export function graph(nodes: NodeDef[], edges: string[] = []): GraphDocument {
  return {
    schemaVersion: 1,
    kind: 'tokenrouter.graph',
    name: 'test',
    nodes: nodes.map(([id, type, params], i) => ({ id, type, params: { ...defaultParams(type), ...params }, position: { x: i * 10, y: 0 } })),
    edges: edges.map((e) => {
      const [from, to] = e.split('>');
      const [source, sourceHandle] = from.split('.');
      const [target, targetHandle] = to.split('.');
      return { id: e, source, sourceHandle, target, targetHandle };
    }),
  };
}

/** A minimal sound graph: small hands off to large on high entropy, large hands back after one token. */
export function minimal(extraNodes: NodeDef[] = [], extraEdges: string[] = []): GraphDocument {
  return graph(
    [
      ['start', 'start', { model: 'small' }],
      ['h', 'entropy', { model: 'small' }],
      ['cmp', 'compare', { op: '>', value: 0.5 }],
      ['go', 'handoff', { model: 'small', to: 'large', keep: false }],
      ['back', 'handBack', { model: 'large', to: 'small', after: 1 }],
      ...extraNodes,
    ],
    ['h.out>cmp.a', 'cmp.out>go.when', ...extraEdges],
  );
}
