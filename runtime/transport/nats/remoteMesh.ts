// The remote models of one entry: one session at all their replicas, and each told of the others' replicas, so that handoffs between them go engine to engine.
import crypto from 'node:crypto';
import type { RemotePeer } from '../../../shared/protocol/engineProtocol.ts';

/** A remote model in the mesh, as the others see it. */
export interface MeshMember {
  readonly name: string;
  /** The entry it was last begun with: only members of one deployment are peers. */
  readonly deployment: object | null;
  /** Its live replicas, with what the placement rule reads. */
  peerReplicas(): RemotePeer['replicas'];
  /** Tells its replicas where the other members' replicas are now. */
  sendPeers(): void;
  /** A peer engine sent request `id` straight to this model's replica `subject`. */
  placedByPeer(id: string, subject: string): void;
}

/**
 * Without a mesh, a remote engine knows no peer: its handoffs go through the entry, which passes
 * them on. The engines of one mesh share a session, so a replica finds the deployment a peer's
 * frame belongs to by it.
 */
export class RemoteMesh {
  readonly session = crypto.randomBytes(6).toString('hex');
  private readonly members = new Map<string, MeshMember>();

  add(m: MeshMember): void {
    this.members.set(m.name, m);
    this.changed();
  }

  remove(m: MeshMember): void {
    if (this.members.get(m.name) === m) this.members.delete(m.name);
    this.changed();
  }

  /** The other members begun with the same entry, for `m`'s replicas. */
  peersOf(m: MeshMember): RemotePeer[] {
    if (m.deployment === null) return [];
    return [...this.members.values()].filter((o) => o !== m && o.deployment === m.deployment).map((o) => ({ model: o.name, replicas: o.peerReplicas() }));
  }

  /** A member's replicas changed (joined, lost, draining): every member tells its replicas. */
  changed(): void {
    for (const m of this.members.values()) m.sendPeers();
  }

  /** A `moved` event a member heard names the replica of another member it went to. */
  placed(model: string, id: string, subject: string): void {
    this.members.get(model)?.placedByPeer(id, subject);
  }
}
