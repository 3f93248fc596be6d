// What only the NATS transport sends: replicas' heartbeats, link frames, and the entry's list of remote peers.
import { z } from 'zod';
import { amount, list } from '../../../shared/protocol/engineControl.ts';
import { modelInfoSchema } from '../../../shared/protocol/runnerProtocol.ts';

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
