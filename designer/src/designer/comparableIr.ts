// The IR a stored version runs, as the designer compares drafts with it: its own, or for a seeded built-in the bundled example graph of that name.
import { compileGraph } from '../../../shared/ir/compileGraph.ts';
import type { ModelCatalogEntry } from '../../../shared/ir/checkParams.ts';
import type { IrDocument } from '../../../shared/ir/irSchema.ts';
import { versionIr, type ApiVersion } from './api.ts';
import { EXAMPLES } from './examples.ts';

/**
 * A built-in is code, not a graph, so it has no IR of its own; the server seeds r-stitch and the rest
 * as built-ins with default parameters, and each bundled example graph decides exactly as its built-in
 * does with those (test/ir/parity.test.ts). Without this a fresh page, whose draft is that example,
 * reported the draft as differing from live v1 in every node. A built-in with parameters of its own
 * has no graph to stand for it: null, as before.
 */
export function comparableIr(v: ApiVersion, catalog: readonly ModelCatalogEntry[]): IrDocument | null {
  if (v.kind === 'ir') return versionIr(v);
  if (Object.keys(v.params ?? {}).length > 0) return null;
  const example = EXAMPLES.find((e) => e.name === v.factory);
  if (!example) return null;
  const r = compileGraph(example.graph, catalog);
  return r.ok ? r.ir : null;
}
