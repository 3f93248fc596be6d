// IR checking on load: schema, every graph rule again, evaluation order, and the declared models/wants/routes against the nodes.
import { analyzeGraph, type Program } from './analyzeGraph.ts';
import type { ModelCatalogEntry } from './checkParams.ts';
import { zodIssues } from './compileGraph.ts';
import { errorsOf, issue, type IrIssue } from './irIssue.ts';
import { irSchema, type IrDocument } from './irSchema.ts';
import { irToGraph } from './irToGraph.ts';
import { NODE_REGISTRY, type NodeRegistry } from './nodeRegistry.ts';
import { isCycleBreaking } from './nodeTypeDef.ts';

export type IrCheck = { ok: true; ir: IrDocument; program: Program; issues: IrIssue[] } | { ok: false; issues: IrIssue[] };

/** Key-order-independent JSON equality for small plain values. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

const RECOMPILE = 'Recompile the graph in the designer instead of editing the IR by hand.';

/**
 * Checks an IR document from anywhere (the network included). `catalog` null accepts any model
 * names; the runtime passes its deployed models. `registry` holds the node types. Never throws.
 */
export function validateIr(raw: unknown, catalog: readonly ModelCatalogEntry[] | null, registry: NodeRegistry = NODE_REGISTRY): IrCheck {
  const parsed = irSchema.safeParse(raw);
  if (!parsed.success) return { ok: false, issues: zodIssues(parsed.error.issues, raw, 'nodes') };
  const ir = parsed.data as IrDocument;
  const { issues, program } = analyzeGraph(irToGraph(ir), catalog, ir.models, registry);
  if (!program || errorsOf(issues).length) return { ok: false, issues };

  const at = new Map(ir.nodes.map((n, i) => [n.id, i]));
  ir.nodes.forEach((n, i) => {
    for (const [port, ref] of Object.entries(n.inputs)) {
      const def = registry.get(ir.nodes[at.get(ref.node)!].type);
      if (!isCycleBreaking(def, ref.port) && at.get(ref.node)! >= i) {
        issues.push(issue(n.id, 'ir_inconsistent', `Input "${port}" reads ${ref.node}, which is evaluated later.`, RECOMPILE));
      }
    }
  });
  const declared: [string, unknown, unknown][] = [
    ['models', ir.models, program.models],
    ['entry', ir.entry, program.entry],
    ['wants', ir.wants, program.wants],
    ['routes', ir.routes, program.routes],
    ['receive', ir.receive, program.receive],
  ];
  for (const [field, said, derived] of declared) {
    if (canonical(said) !== canonical(derived)) {
      issues.push(
        issue(
          null,
          'ir_inconsistent',
          `Declared ${field} ${canonical(said).slice(0, 120)} differ from the nodes' ${canonical(derived).slice(0, 120)}.`,
          RECOMPILE,
        ),
      );
    }
  }
  if (errorsOf(issues).length) return { ok: false, issues };
  return { ok: true, ir, program, issues };
}
