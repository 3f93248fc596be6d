// Valid IR documents for deploy tests: the bundled example graphs compiled against the served models, and a maximal legal graph.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { compileGraph } from '../../shared/ir/compileGraph.ts';
import type { ModelCatalogEntry } from '../../shared/ir/checkParams.ts';
import type { GraphDocument } from '../../shared/ir/graph.ts';
import type { IrDocument } from '../../shared/ir/irSchema.ts';
import { defaultParams } from '../../shared/ir/nodeRegistry.ts';
import { LIMITS, type NodeType } from '../../shared/ir/nodeTypes.ts';

/** What the reliability rig serves: the char vocabulary and the heads its simulated runners emit. */
export const RIG_CATALOG: ModelCatalogEntry[] = [
  { name: 'small', heads: [], vocabSize: 30 },
  { name: 'medium', heads: [], vocabSize: 30 },
  { name: 'large', heads: [], vocabSize: 30 },
];

export function exampleGraph(name: string): GraphDocument {
  return JSON.parse(fs.readFileSync(fileURLToPath(new URL(`../../examples/graphs/${name}.json`, import.meta.url)), 'utf8')) as GraphDocument;
}

function mustCompile(g: GraphDocument, catalog = RIG_CATALOG): IrDocument {
  const r = compileGraph(g, catalog);
  if (!r.ok) throw new Error(`fixture graph ${g.name} does not compile: ${JSON.stringify(r.issues)}`);
  return JSON.parse(JSON.stringify(r.ir)) as IrDocument;
}

/** R-Stitch drawn as a graph and compiled: a deployable IR. */
export function rStitchIr(): IrDocument {
  return mustCompile(exampleGraph('r-stitch'));
}

/**
 * The largest graph the limits allow: `nodes` nodes, most of them arithmetic on one another, with a
 * hand-off on small and a hand-back on large, so every step evaluates the whole chain.
 */
export function chainGraph(nodes: number = LIMITS.maxNodes): GraphDocument {
  const fixed: [string, NodeType, Record<string, unknown>][] = [
    ['start', 'start', { model: 'small' }],
    ['h', 'entropy', { model: 'small' }],
    ['cmp', 'compare', { op: '>', value: 1e8 }],
    ['go', 'handoff', { model: 'small', to: 'large', keep: false }],
    ['back', 'handBack', { model: 'large', to: 'small', after: 1 }],
  ];
  const chain = nodes - fixed.length;
  const ops = ['+', '*', '-', '/'];
  const list = [...fixed];
  const edges: string[] = ['cmp.out>go.when'];
  for (let i = 0; i < chain; i++) {
    list.push([`a${i}`, 'arith', { op: ops[i % 4], value: 1.0001 }]);
    edges.push(`${i === 0 ? 'h.out' : `a${i - 1}.out`}>a${i}.a`);
  }
  edges.push(`a${chain - 1}.out>cmp.a`);
  return {
    schemaVersion: 1,
    kind: 'tokenrouter.graph',
    name: `chain-${nodes}`,
    nodes: list.map(([id, type, params], i) => ({
      id,
      type,
      params: { ...defaultParams(type), ...params } as GraphDocument['nodes'][number]['params'],
      position: { x: i, y: 0 },
    })),
    edges: edges.map((e) => {
      const [from, to] = e.split('>');
      const [source, sourceHandle] = from.split('.');
      const [target, targetHandle] = to.split('.');
      return { id: e, source, sourceHandle, target, targetHandle };
    }),
  };
}

export function chainIr(nodes: number = LIMITS.maxNodes): IrDocument {
  return mustCompile(chainGraph(nodes));
}
