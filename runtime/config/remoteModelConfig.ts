// Config schema of a remote model (its runner is a sub-server reached over NATS), merged into serverConfig's model entry.
import { z } from 'zod';

export const remoteModelSchema = z
  .object({
    /** NATS server URL(s), e.g. "nats://10.0.0.5:4222"; several separated by commas. */
    nats: z.string().regex(/^nats:\/\/\S+$/, 'a nats:// URL (several separated by commas)'),
    token: z.string().optional(),
    /** NATS credentials file (JWT + nkey), instead of a token. */
    credsFile: z.string().optional(),
    /** Subject prefix shared with the sub-servers (`tokenrouter subserver --prefix`). */
    subjectPrefix: z.string().regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/).default('tokenrouter'),
    /** A replica silent this long is declared dead. Must exceed the sub-servers' heartbeat interval several times. */
    heartbeatTimeoutMs: z.number().int().min(50).default(1500),
    /** Longest one remote step may take before its replica is declared dead. */
    stepTimeoutMs: z.number().int().min(100).default(30_000),
    /** How long startup (and a restart after a failure) waits for a first replica to answer. */
    connectTimeoutMs: z.number().int().min(100).default(30_000),
    /**
     * When a replica holding caches dies: "fail" fails every request holding state on this model,
     * as for a crashed local worker (the lane restarts on the surviving replicas); "recompute"
     * re-prefills the lost caches on a surviving replica from the tokens the entry kept.
     */
    onReplicaLoss: z.enum(['fail', 'recompute']).default('fail'),
    /** Batches in flight to this model: 2 hides the network round trip between steps; 1 sends one at a time. */
    pipelineDepth: z.number().int().min(1).max(4).default(2),
    /**
     * Lookahead passes a step may ask of the replicas, streamed back as they finish (0: none). Off by
     * default: on the workload measured (docs/deploy.md) it cost more than the round trips it saved.
     */
    lookahead: z.number().int().min(0).max(64).default(0),
  })
  .strict();

export type RemoteModelConfig = z.infer<typeof remoteModelSchema>;
