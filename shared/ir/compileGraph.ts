// Graph → IR: validates the designer's document against the deployable models and emits the IR when no rule is broken.
import { analyzeGraph } from './analyzeGraph.ts';
import type { ModelCatalogEntry } from './checkParams.ts';
import { graphSchema, type GraphDocument } from './graph.ts';
import { errorsOf, issue, type IrIssue } from './irIssue.ts';
import { IR_SCHEMA_VERSION, type IrDocument } from './irSchema.ts';
import { NODE_REGISTRY, type NodeRegistry } from './nodeRegistry.ts';

export type CompileResult = { ok: true; ir: IrDocument; issues: IrIssue[] } | { ok: false; issues: IrIssue[] };

/** Compiles `graph` (any JSON) for the models in `catalog`, with the node types of `registry`. Never throws. */
export function compileGraph(graph: unknown, catalog: readonly ModelCatalogEntry[], registry: NodeRegistry = NODE_REGISTRY): CompileResult {
  const parsed = graphSchema.safeParse(graph);
  if (!parsed.success) return { ok: false, issues: zodIssues(parsed.error.issues, graph, 'nodes') };
  const doc = parsed.data as GraphDocument;
  const { issues, program } = analyzeGraph(doc, catalog, [], registry);
  if (!program || errorsOf(issues).length) return { ok: false, issues };
  const layout: Record<string, { x: number; y: number }> = {};
  for (const n of doc.nodes) layout[n.id] = { x: Math.round(n.position.x), y: Math.round(n.position.y) };
  const ir: IrDocument = {
    schemaVersion: IR_SCHEMA_VERSION,
    kind: 'tokenrouter.ir',
    name: doc.name,
    models: program.models,
    entry: program.entry,
    wants: program.wants,
    nodes: program.nodes.map((n) => ({ id: n.id, type: n.type, params: n.params, inputs: n.inputs })),
    routes: program.routes,
    receive: program.receive,
    layout,
    ...(doc.description ? { description: doc.description } : {}),
  };
  return { ok: true, ir, issues };
}

interface ZodLikeIssue {
  code?: string;
  path: PropertyKey[];
  message: string;
}

/** Schema failures as issues, attributed to the node they sit in when the path says so. */
export function zodIssues(list: readonly ZodLikeIssue[], doc: unknown, nodesKey: string): IrIssue[] {
  return list.slice(0, 20).map((z) => {
    let nodeId: string | null = null;
    if (z.path[0] === nodesKey && typeof z.path[1] === 'number') {
      const nodes = (doc as Record<string, unknown>)[nodesKey];
      const n = Array.isArray(nodes) ? (nodes[z.path[1]] as { id?: unknown } | undefined) : undefined;
      if (n && typeof n.id === 'string' && n.id.length > 0 && n.id.length <= 64) nodeId = n.id;
    }
    const where = z.path.map(String).join('.') || 'document';
    if (z.code === 'too_big' && z.path.length === 1 && (z.path[0] === 'nodes' || z.path[0] === 'edges')) {
      return issue(null, 'too_large', `${where}: ${z.message}`, 'Keep to 200 nodes and 400 edges: split the algorithm or share constants.');
    }
    const versionProblem = z.path[0] === 'schemaVersion';
    return issue(
      nodeId,
      versionProblem ? 'unsupported_version' : 'invalid_document',
      `${where}: ${z.message}`,
      versionProblem ? 'Re-export the document from this version of the designer.' : 'Fix this field, or re-export the document from the designer.',
    );
  });
}
