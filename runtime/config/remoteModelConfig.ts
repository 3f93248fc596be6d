// Config schema of a remote model (its engine runs in `tokenrouter subserver` processes, reached over NATS), merged into serverConfig's model entry.
import { z } from 'zod';
import { TokenRouterError } from '../errors.ts';

/** Keys of a per-step remote runner, which this runtime does not have: refused by name, so a config says what to drop. */
const REMOVED = {
  stepTimeoutMs: 'the remote engine runs its own steps; a replica is judged by its heartbeats (heartbeatTimeoutMs)',
  pipelineDepth: 'steps no longer cross the network',
  lookahead: 'lookahead was removed (it only hid the per-step round trip)',
} as const;

export const remoteModelSchema = z
  .object({
    /** NATS server URL(s), e.g. "nats://10.0.0.5:4222"; several separated by commas. */
    nats: z.string().regex(/^nats:\/\/\S+$/, 'a nats:// URL (several separated by commas)'),
    token: z.string().optional(),
    /** NATS credentials file (JWT + nkey), instead of a token. */
    credsFile: z.string().optional(),
    /** Subject prefix shared with the sub-servers (`tokenrouter subserver --prefix`). */
    subjectPrefix: z
      .string()
      .regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/)
      .default('tokenrouter'),
    /** A replica silent this long is declared dead. Must exceed the sub-servers' heartbeat interval several times. */
    heartbeatTimeoutMs: z.number().int().min(50).default(1500),
    /** How long startup waits for a first replica to announce itself. */
    connectTimeoutMs: z.number().int().min(100).default(30_000),
    /**
     * Cut off from NATS longer than this, the model is down (503 model_unavailable, /health) and the
     * requests held there fail; new requests are refused from the first moment of the cut, so none
     * waits holding an admission slot. The entry reconnects by itself and serves the model again.
     */
    unreachableAfterMs: z.number().int().min(100).default(5000),
    /**
     * When a replica dies, the requests decoding there fail (their routing state was there) and new
     * ones go to the surviving replicas. "recompute": the requests homed there but away at another
     * model go on, re-prefilled on a live replica with their whole sequence when they come back (as
     * in thread placement); "fail": they fail too.
     */
    onReplicaLoss: z.enum(['fail', 'recompute']).default('recompute'),
    ...Object.fromEntries(Object.entries(REMOVED).map(([k, why]) => [k, z.never({ error: `remote.${k} was removed: ${why}` }).optional()])),
  })
  .strict();

export type RemoteModelConfig = z.infer<typeof remoteModelSchema>;

/** A remote block as written in the config, or handed to the remote engine directly (tests, benches): the same shape, checked the same way. */
export type RemoteModelInput = z.input<typeof remoteModelSchema>;

/** Checks a remote block and fills its defaults; the error names the key (`remote.heartbeatTimeoutMs: …`). */
export function parseRemoteModel(raw: unknown, model: string): RemoteModelConfig {
  const r = remoteModelSchema.safeParse(raw);
  if (r.success) return r.data;
  const lines = r.error.issues.map((i) => `remote.${i.path.join('.')}: ${i.message}`);
  throw new TokenRouterError('invalid_request', `model ${model}: ${lines.join('; ')}`, `remote.${r.error.issues[0]?.path.join('.') ?? ''}`);
}
