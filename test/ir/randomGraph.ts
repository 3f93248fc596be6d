// Random graph and IR documents for the fuzz test: fully random, mutated examples, and malformed JSON.
import type { GraphDocument, GraphNode } from '../../shared/ir/graph.ts';
import { defaultParams, NODE_REGISTRY } from '../../shared/ir/nodeRegistry.ts';
import type { ParamSpec, ParamValue } from '../../shared/ir/nodeTypes.ts';
import { int, pick, type Rng } from './rng.ts';

const TYPES = NODE_REGISTRY.defs.map((d) => d.type);
const MODELS = ['small', 'medium', 'large', 'huge', ''];
const JUNK: unknown[] = [
  null,
  undefined,
  -1,
  0,
  1,
  1e308,
  -0.5,
  Number.NaN,
  'x',
  '',
  '__proto__',
  true,
  [],
  {},
  [1, 'a'],
  { small: 'heavy' },
  { __proto__: 1 },
];

function junk(r: Rng, depth = 0): unknown {
  const k = r();
  if (depth > 2 || k < 0.6) return pick(r, JUNK);
  if (k < 0.8) return Array.from({ length: int(r, 0, 3) }, () => junk(r, depth + 1));
  return Object.fromEntries(Array.from({ length: int(r, 0, 3) }, () => [pick(r, ['id', 'type', 'nodes', 'x', 'model', 'constructor']), junk(r, depth + 1)]));
}

function paramValue(r: Rng, p: ParamSpec): unknown {
  if (r() < 0.08) return junk(r);
  switch (p.kind) {
    case 'number':
    case 'int':
      return r() < 0.5 ? p.default : r() < 0.8 ? p.min + r() * (p.max - p.min) : p.min + (r() - 0.5) * 4;
    case 'boolean':
      return r() < 0.5;
    case 'enum':
      return r() < 0.9 ? pick(r, p.options) : 'nope';
    case 'model':
      return pick(r, MODELS.slice(0, r() < 0.9 ? 3 : 5));
    case 'head':
      return pick(r, ['citer', 'r2r', 'colm', 'x']);
    case 'text':
      return r() < 0.8 ? '' : 'ab';
    case 'ids':
      return Array.from({ length: int(r, 0, 3) }, () => int(r, -1, 70));
    case 'weights':
      return Object.fromEntries(MODELS.slice(0, int(r, 1, 4)).map((m) => [m, r() < 0.8 ? r() : -1]));
    case 'memoryRefs':
      return [];
  }
}

/** A graph of random nodes and mostly type-compatible edges. */
export function randomGraph(r: Rng): GraphDocument {
  const n = int(r, 0, 24);
  const nodes: GraphNode[] = [];
  for (let i = 0; i < n; i++) {
    const type = i === 0 && r() < 0.8 ? 'start' : pick(r, TYPES);
    const params: Record<string, ParamValue> = {};
    for (const p of NODE_REGISTRY.get(type)!.params) if (r() < 0.95) params[p.name] = paramValue(r, p) as ParamValue;
    nodes.push({ id: r() < 0.03 && i > 0 ? nodes[0].id : `n${i}`, type: r() < 0.02 ? 'bogus' : type, params, position: { x: i * 50, y: 0 } });
  }
  const memories = nodes.filter((x) => NODE_REGISTRY.get(x.type)?.category === 'memory');
  for (const x of nodes) if (x.type === 'receiveCommit' && memories.length && r() < 0.7) x.params.reset = [pick(r, memories).id];
  const edges: GraphDocument['edges'] = [];
  const m = n ? int(r, 0, n * 2) : 0;
  for (let i = 0; i < m; i++) {
    const s = pick(r, nodes);
    const t = pick(r, nodes);
    const sSpec = NODE_REGISTRY.get(s.type);
    const tSpec = NODE_REGISTRY.get(t.type);
    const out = sSpec?.outputs.length ? pick(r, sSpec.outputs) : undefined;
    const compatible = tSpec?.inputs.filter((p) => !out || p.type === out.type) ?? [];
    const inp = compatible.length && r() < 0.85 ? pick(r, compatible) : tSpec?.inputs.length ? pick(r, tSpec.inputs) : undefined;
    edges.push({
      id: `e${i}`,
      source: r() < 0.03 ? 'ghost' : s.id,
      sourceHandle: out?.name ?? 'out',
      target: t.id,
      targetHandle: inp?.name ?? 'in',
    });
  }
  return { schemaVersion: 1, kind: 'tokenrouter.graph', name: 'fuzz', nodes, edges };
}

/** A known-good graph with a few random edits: most stay close to valid, which reaches the deeper checks. */
export function mutateGraph(r: Rng, base: GraphDocument): GraphDocument {
  const g: GraphDocument = structuredClone(base);
  const edits = int(r, 1, 4);
  for (let i = 0; i < edits; i++) {
    const k = r();
    if (k < 0.3 && g.nodes.length) {
      const node = pick(r, g.nodes);
      const spec = NODE_REGISTRY.get(node.type);
      if (spec?.params.length) {
        const p = pick(r, spec.params);
        node.params[p.name] = paramValue(r, p) as ParamValue;
      }
    } else if (k < 0.45 && g.nodes.length) {
      g.nodes.splice(int(r, 0, g.nodes.length - 1), 1);
    } else if (k < 0.6 && g.edges.length) {
      g.edges.splice(int(r, 0, g.edges.length - 1), 1);
    } else if (k < 0.75 && g.nodes.length) {
      const s = pick(r, g.nodes);
      const t = pick(r, g.nodes);
      const sSpec = NODE_REGISTRY.get(s.type);
      const tSpec = NODE_REGISTRY.get(t.type);
      if (sSpec?.outputs.length && tSpec?.inputs.length) {
        g.edges.push({ id: `m${i}`, source: s.id, sourceHandle: pick(r, sSpec.outputs).name, target: t.id, targetHandle: pick(r, tSpec.inputs).name });
      }
    } else if (k < 0.9) {
      const type = pick(r, TYPES);
      g.nodes.push({ id: `x${i}`, type, params: defaultParams(type), position: { x: 0, y: 0 } });
    } else if (g.nodes.length) {
      pick(r, g.nodes).type = pick(r, TYPES);
    }
  }
  return g;
}

/** An IR with random edits to its fields, order and references. */
export function mutateIr(r: Rng, base: unknown): unknown {
  const ir = structuredClone(base) as Record<string, unknown> & { nodes: Record<string, unknown>[] };
  const k = r();
  if (k < 0.15) ir[pick(r, ['models', 'entry', 'wants', 'routes', 'receive', 'nodes', 'name', 'schemaVersion', 'kind'])] = junk(r);
  else if (k < 0.3 && ir.nodes.length > 1) ir.nodes.reverse();
  else if (k < 0.45 && ir.nodes.length) {
    const n = pick(r, ir.nodes);
    const inputs = n.inputs as Record<string, { node: string; port: string }>;
    const ports = Object.keys(inputs);
    if (ports.length) inputs[pick(r, ports)] = { node: String(pick(r, ir.nodes).id), port: pick(r, ['out', 'value', 'prev', 'x']) };
  } else if (k < 0.6 && ir.nodes.length) {
    const n = pick(r, ir.nodes);
    const params = n.params as Record<string, unknown>;
    const keys = Object.keys(params);
    if (keys.length) params[pick(r, keys)] = junk(r);
  } else if (k < 0.7) {
    (ir as Record<string, unknown>).routes = { small: [], large: ['nope'] };
  } else if (k < 0.8 && ir.nodes.length) {
    ir.nodes.splice(int(r, 0, ir.nodes.length - 1), 1);
  } else if (k < 0.9) {
    ir.models = [...((ir.models as string[]) ?? [])].reverse();
  } else {
    return junk(r);
  }
  return ir;
}
