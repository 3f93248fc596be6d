// What the palette lists: the registry's node types matching a search, grouped by category in drawing order.
import { NODE_REGISTRY, type NodeRegistry } from '../../../shared/ir/nodeRegistry.ts';
import type { NodeCategory } from '../../../shared/ir/nodeTypes.ts';
import type { NodeTypeDef } from '../../../shared/ir/nodeTypeDef.ts';

/** From the entry, through signals and what reads them, to the decisions and receive policies. */
const ORDER: readonly NodeCategory[] = ['start', 'signal', 'constant', 'logic', 'memory', 'decision', 'receive'];

export interface PaletteGroup {
  category: NodeCategory;
  defs: NodeTypeDef[];
}

/** Non-empty groups of the node types whose label, name, description or category contains `query` (any case). */
export function paletteGroups(query: string, registry: NodeRegistry = NODE_REGISTRY): PaletteGroup[] {
  const q = query.trim().toLowerCase();
  const defs = registry.defs.filter((d) => !q || `${d.label} ${d.type} ${d.description} ${d.category}`.toLowerCase().includes(q));
  return ORDER.map((category) => ({ category, defs: defs.filter((d) => d.category === category) })).filter((g) => g.defs.length);
}
