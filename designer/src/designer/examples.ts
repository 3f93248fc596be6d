// The example graphs, bundled at build time from examples/graphs/*.json.
import { graphSchema, type GraphDocument } from '../../../shared/ir/graph.ts';
import citer from '../../../examples/graphs/citer.json';
import coLlm from '../../../examples/graphs/co-llm.json';
import me from '../../../examples/graphs/me.json';
import r2r from '../../../examples/graphs/r2r.json';
import rStitch from '../../../examples/graphs/r-stitch.json';

export interface Example {
  name: string;
  title: string;
  graph: GraphDocument;
}

/** Checked against the schema on load, so a broken example file fails loudly, not on the canvas. */
function load(json: unknown): GraphDocument {
  return graphSchema.parse(json) as GraphDocument;
}

export const EXAMPLES: readonly Example[] = [
  { name: 'r-stitch', title: 'R-Stitch', graph: load(rStitch) },
  { name: 'citer', title: 'CITER', graph: load(citer) },
  { name: 'r2r', title: 'R2R', graph: load(r2r) },
  { name: 'co-llm', title: 'Co-LLM', graph: load(coLlm) },
  { name: 'me', title: 'ME (three-model draw)', graph: load(me) },
];
