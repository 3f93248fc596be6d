// NATS as both sides reach it: the connection, subject names, the transport's error type, and what only NATS carries: heartbeats, link frames, remote peers.
import fs from 'node:fs';
import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { z } from 'zod';
import { amount, list } from '../../../shared/protocol/engineControl.ts';
import { modelInfoSchema } from '../../../shared/protocol/runnerProtocol.ts';

/** What went wrong reaching a remote model: `no_replicas` (no NATS, or no sub-server announced itself), `protocol` (unreadable credentials). */
export class RemoteRunnerError extends Error {
  override readonly name = 'RemoteRunnerError';
  constructor(
    readonly code: 'no_replicas' | 'protocol',
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** `servers`: nats://host:port, or several separated by commas (a NATS cluster); `credsFile`: a .creds file (JWT + nkey seed), as `nsc` writes them; the token defaults to $NATS_TOKEN. */
export async function openNats(opts: { servers: string; name: string; token?: string; credsFile?: string }): Promise<NatsConnection> {
  const servers = opts.servers.match(/[^,\s]+/g) ?? [];
  let authenticator: ReturnType<typeof credsAuthenticator> | undefined;
  if (opts.credsFile) {
    try {
      authenticator = credsAuthenticator(fs.readFileSync(opts.credsFile));
    } catch (e) {
      throw new RemoteRunnerError('protocol', `cannot read NATS credentials ${opts.credsFile}: ${(e as Error).message}`);
    }
  }
  try {
    // a sub-server or entry outlives NATS restarts: the client reconnects and resubscribes by itself (the entry
    // bounds what waits for it: it refuses new requests while cut off, and fails held ones past unreachableAfterMs)
    const { name, token = process.env.NATS_TOKEN } = opts;
    return await connect({ servers, name, token, authenticator, maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout: 10_000 });
  } catch (e) {
    throw new RemoteRunnerError('no_replicas', `cannot connect to NATS at ${servers.join(',')}: ${(e as Error).message}`, { cause: e });
  }
}

/** Calls `down` when the link to NATS drops and `up` when the client has reconnected. */
export function watchLink(nc: NatsConnection, on: { down(): void; up(): void }): void {
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') on.down();
      else if (status.type === 'reconnect') on.up();
    }
  })();
}

export const DEFAULT_SUBJECT_PREFIX = 'tokenrouter';

/** Subject tokens may not contain '.', '*', '>' or whitespace: model and replica names are escaped. */
const token = (s: string): string => s.replace(/[.*>\s%]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`);

/**
 * One model's subjects: `heartbeat`, where replicas announce themselves, their load and their leave;
 * `entries`, the prefix of the entries' inboxes (`${entries}.${session}`); `replica`, one replica
 * instance's subject (entries link to `${subject}.in`, its peers to `${subject}.peer`).
 */
export function modelSubjects(prefix: string, model: string) {
  const base = `${prefix}.${token(model)}`;
  return {
    heartbeat: `${base}.heartbeat`,
    entries: `${base}.entries`,
    replica: (name: string, incarnation: string) => `${base}.r.${token(name)}.${incarnation}`,
  };
}

const int = z.number().int();

/** A remote model as a peer engine reaches it: its live replicas, with what the entry's placement rule reads. */
const remotePeerSchema = z.object({
  model: z.string(),
  replicas: list(z.object({ subject: z.string(), kvCapacityTokens: amount, draining: z.boolean() })),
});

/** Entry → remote engine: the entry's other remote models and their live replicas, whenever they change; `session` tags the peer frames. */
export const remotePeersSchema = z.object({ type: z.literal('remote-peers'), session: z.string(), peers: list(remotePeerSchema) });

/** What a remote engine (`tokenrouter subserver`) publishes on its model's heartbeat subject. */
export const replicaAnnouncementSchema = z.object({
  protocol: int,
  /** `--replica`. */
  replica: z.string(),
  /** This process's (a restart gets a new one): entries link to `${subject}.in`. */
  subject: z.string(),
  info: modelInfoSchema,
  kvCapacityTokens: amount,
  heartbeatMs: z.number(),
  /** Load, for placing new requests. */
  requests: int,
  kvTokens: z.number(),
  /** Leaving gracefully: serves what it holds, takes nothing new. */
  draining: z.boolean(),
  bye: z.boolean(),
  /** Messages it dropped or failed to handle since it started; absent from older replicas. */
  ignoredMessages: int.optional(),
});

/**
 * One frame of a link over NATS, either way: the messages its sender posted in one turn, numbered
 * within the sender's session, and an ack of every frame up to `ack`. `reply`: where the other side
 * answers; `entry`: on engine → engine frames, the session of the entry they belong to.
 */
export const linkFrameSchema = z.object({
  session: z.string(),
  reply: z.string().optional(),
  entry: z.string().optional(),
  seq: int.optional(),
  messages: z.array(z.unknown()).optional(),
  ack: int.optional(),
});

export type RemotePeer = z.infer<typeof remotePeerSchema>;
export type RemotePeers = z.infer<typeof remotePeersSchema>;
export type ReplicaAnnouncement = z.infer<typeof replicaAnnouncementSchema>;
export type LinkFrame = z.infer<typeof linkFrameSchema>;
