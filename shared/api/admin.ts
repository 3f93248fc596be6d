// Admin API wire messages (/admin/*): one zod schema per request and response body; the server validates requests and the designer parses responses with them.
import { z } from 'zod';

/** Names the registry accepts for an algorithm. */
export const ALGORITHM_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** A name an algorithm can be deployed under: the pattern, and not `draft` (the playground's name for an unsaved graph). */
export function isDeployableName(name: string): boolean {
  return ALGORITHM_NAME.test(name) && name !== 'draft';
}

const version = z.number().int().min(1);
const params = z.record(z.string(), z.unknown());

/** What the registry stores for one version: a bundled algorithm with parameters, or an IR document. */
export const algorithmSpecSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('builtin'), factory: z.string(), params: params.optional() }),
  z.object({ kind: z.literal('ir'), ir: z.unknown() }),
]);
export type AlgorithmSpec = z.infer<typeof algorithmSpecSchema>;

// ---- POST /admin/algorithms/:name/versions --------------------------------------------------

const deployFlags = {
  activate: z.boolean().optional(),
  /** Required when the name exists already: a deploy never replaces an algorithm by accident. */
  replace: z.boolean().optional(),
};
export const deployRequestSchema = z.union([
  z.object({ ir: z.unknown().refine((v) => v !== undefined, 'ir is required'), ...deployFlags }).strict(),
  z.object({ builtin: z.string(), params: params.optional(), ...deployFlags }).strict(),
]);
export type DeployRequest = z.infer<typeof deployRequestSchema>;

export const deployResponseSchema = z.object({ name: z.string(), version, activeVersion: version.nullable() });
export type DeployResponse = z.infer<typeof deployResponseSchema>;

// ---- GET /admin/algorithms --------------------------------------------------------------------

/** A stored version as listed; `ir` is what was stored, which an older build may not have checked. */
export const versionViewSchema = z.discriminatedUnion('kind', [
  z.object({ version, createdAt: z.string(), kind: z.literal('ir'), ir: z.unknown() }),
  z.object({ version, createdAt: z.string(), kind: z.literal('builtin'), factory: z.string(), params }),
]);
export type VersionView = z.infer<typeof versionViewSchema>;

export const algorithmViewSchema = z.object({
  name: z.string(),
  activeVersion: version.nullable(),
  /** The version a rollback re-activates now; null when there is none to go back to. */
  rollbackTo: version.nullable(),
  /** The server's `defaultAlgorithm`, which cannot be deleted. */
  isDefault: z.boolean(),
  /** Requests for this name run: a version is active and loads on the served models (a seeded built-in may not). */
  served: z.boolean(),
  versions: z.array(versionViewSchema),
});
export type AlgorithmView = z.infer<typeof algorithmViewSchema>;

export const algorithmListSchema = z.object({ algorithms: z.array(algorithmViewSchema) });
export type AlgorithmList = z.infer<typeof algorithmListSchema>;

// ---- activate, rollback, delete -----------------------------------------------------------------

export const activateRequestSchema = z.object({ version }).strict();

/** The answer of activate and of rollback (which takes no body). */
export const activeVersionSchema = z.object({ name: z.string(), activeVersion: version });
export type ActiveVersion = z.infer<typeof activeVersionSchema>;

/** DELETE /admin/algorithms/:name (no body). */
export const deleteResponseSchema = z.object({ name: z.string(), deletedVersions: z.number().int().min(0) });
export type DeleteResponse = z.infer<typeof deleteResponseSchema>;

// ---- models, status, thresholds, load ------------------------------------------------------------

export const modelViewSchema = z.object({
  name: z.string(),
  vocabSize: z.number().int(),
  /** Router heads the model folder ships (for IR signal nodes). */
  heads: z.array(z.string()),
  maxContext: z.number().int(),
  kvBytesPerToken: z.number(),
  /** Absent for a model without a plan here. */
  memory: z
    .object({
      name: z.string(),
      weightBytes: z.number(),
      workspaceBytes: z.number().optional(),
      kvBytes: z.number(),
      kvTokens: z.number(),
      fullContextRequests: z.number(),
    })
    .optional(),
});
export const modelListSchema = z.object({ models: z.array(modelViewSchema) });
export type ModelList = z.infer<typeof modelListSchema>;

export const loadRequestSchema = z
  .object({
    concurrency: z.number().int().min(1).max(256),
    requests: z.number().int().min(1).max(10_000),
    maxTokens: z.number().int().min(1).max(1024),
    model: z.string().optional(),
  })
  .strict();
export type LoadRequest = z.infer<typeof loadRequestSchema>;

export const loadProgressSchema = z.object({ running: z.boolean(), sent: z.number(), done: z.number(), failed: z.number(), total: z.number() });
export const loadResponseSchema = loadProgressSchema.extend({ started: z.literal(true) });
export type LoadResponse = z.infer<typeof loadResponseSchema>;

const laneStatsSchema = z.object({
  name: z.string(),
  threshold: z.number(),
  ready: z.number(),
  running: z.number(),
  waitingAdmission: z.number(),
  pendingReturn: z.number(),
  executing: z.boolean(),
  kvBytes: z.number(),
  kvReservedBytes: z.number(),
  batches: z.number(),
  rows: z.number(),
  admissions: z.number(),
  evictions: z.number(),
  busyMs: z.number(),
});
export const statusResponseSchema = z.object({
  mode: z.string(),
  retainState: z.boolean(),
  maxWaitMs: z.number(),
  active: z.number(),
  queued: z.number(),
  committed: z.number(),
  lanes: z.array(laneStatsSchema),
  load: loadProgressSchema,
});
export type StatusResponse = z.infer<typeof statusResponseSchema>;

/** PUT /admin/thresholds: model name → threshold; the answer has every model's. */
export const thresholdsRequestSchema = z.record(z.string(), z.number().int().min(1).max(1024));
export const thresholdsResponseSchema = z.object({ thresholds: z.record(z.string(), z.number()) });
export type ThresholdsResponse = z.infer<typeof thresholdsResponseSchema>;
