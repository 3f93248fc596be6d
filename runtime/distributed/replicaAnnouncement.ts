// What a sub-server tells entries about itself (hello answer and heartbeats): the contract both sides of the wire share.
import type { ModelInfo } from '../runner/modelRunner.ts';

export const WIRE_PROTOCOL = 3;

/** What a sub-server answers to hello and repeats in every heartbeat. */
export interface ReplicaAnnouncement {
  protocol: number;
  /** Human name (`--replica`). */
  replica: string;
  /** Sticky subject of this replica instance (a restarted process gets a new one). */
  subject: string;
  info: ModelInfo;
  kvCapacityTokens: number;
  heartbeatMs: number;
  /** Caches held, over all entries. */
  caches: number;
  /** KV tokens those caches hold: the replica's load, for placing new caches (absent from older sub-servers). */
  kvTokens?: number;
  /** Lookahead passes its runner takes in one step (ModelRunner.maxAhead); 0 or absent: none. */
  maxAhead?: number;
  /** Leaving gracefully: serves the caches it holds, takes no new ones. */
  draining?: boolean;
  /** Set in the last heartbeat of a sub-server shutting down. */
  bye?: boolean;
}
