// The IR: a compiled algorithm as plain JSON data (nodes in evaluation order, decisions per model), with its zod schema.
import { z } from 'zod';
import { paramsSchema } from './graph.ts';
import { LIMITS, type ParamValue } from './nodeTypes.ts';

export const IR_SCHEMA_VERSION = 1;

export interface IrPortRef {
  node: string;
  port: string;
}

export interface IrNode {
  id: string;
  type: string;
  /** Every parameter of the type, defaults filled in. */
  params: Record<string, ParamValue>;
  /** Connected inputs only; an absent optional input takes its documented default. */
  inputs: Record<string, IrPortRef>;
}

export interface IrWants {
  topK: number;
  hidden: boolean;
  heads: string[];
}

export interface IrDocument {
  schemaVersion: typeof IR_SCHEMA_VERSION;
  kind: 'tokenrouter.ir';
  name: string;
  /** Models in id order: models[0] has id 1. Only the models the entry can reach. */
  models: string[];
  entry: string;
  /** Per-model extras the runner must compute (derived from the signal nodes; checked on load). */
  wants: Record<string, IrWants>;
  /** Evaluation order: every input refers to an earlier node, except reads of a memory's `prev`. */
  nodes: IrNode[];
  /** Per model, decision node ids in the order they are tried. */
  routes: Record<string, string[]>;
  /** Per model, the receive-policy node id (absent = accept). */
  receive: Record<string, string>;
  /** Designer positions; ignored by the runtime. */
  layout?: Record<string, { x: number; y: number }>;
  description?: string;
}

const id = z.string().min(1).max(LIMITS.maxIdLength);
const name = z.string().min(1).max(LIMITS.maxNameLength);
const boundedRecord = <T extends z.ZodType>(value: T, max: number) =>
  z.record(z.string().max(LIMITS.maxIdLength), value).refine((r) => Object.keys(r).length <= max, `at most ${max} entries`);

export const irSchema = z.object({
  schemaVersion: z.literal(IR_SCHEMA_VERSION),
  kind: z.literal('tokenrouter.ir'),
  name,
  models: z.array(name).min(1).max(16),
  entry: name,
  wants: boundedRecord(z.object({ topK: z.number().int().min(0).max(LIMITS.maxTopK), hidden: z.boolean(), heads: z.array(name).max(16) }), 16),
  nodes: z
    .array(
      z.object({
        id,
        type: name,
        params: paramsSchema,
        inputs: boundedRecord(z.object({ node: id, port: id }), 8),
      }),
    )
    .max(LIMITS.maxNodes),
  routes: boundedRecord(z.array(id).max(LIMITS.maxNodes), 16),
  receive: boundedRecord(id, 16),
  layout: boundedRecord(z.object({ x: z.number().finite(), y: z.number().finite() }), LIMITS.maxNodes).optional(),
  description: z.string().max(2000).optional(),
});
