// Engine to engine over NATS, on a sub-server: handoffs go straight to a peer model's replica (the request's home there, or one placed), on one ordered link per replica.
import crypto from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { toPeerSchema, type ToPeer, type WireArrival, type WireEvent } from '../../../shared/protocol/engineProtocol.ts';
import type { LinkFrame, RemotePeer } from './natsConnection.ts';
import { toWireArrival, type PeerRouter, type PortedEngine } from '../serveEngine.ts';
import { keepsOneReplica } from '../../core/servingPolicy.ts';
import { NatsLink } from './natsLink.ts';
import { pickReplica } from './remoteReplicas.ts';

/** Where a replica takes frames from its peers (the entry's link uses `${subject}.in`). */
export const peerSubject = (replica: string): string => `${replica}.peer`;

/** `direct`: handoffs sent to a peer replica; `placed`: first visits placed; `recomputed`: of those, re-placed with the whole sequence after their home was lost; `viaEntry`: left to the entry (no live replica); `malformed`: peers' messages refused. */
export const newPeerStats = () => ({ direct: 0, placed: 0, recomputed: 0, viaEntry: 0, malformed: 0 });

export interface NatsPeersOptions {
  nc: NatsConnection;
  /** The engine begun by the entry whose session is `entry` (the mesh's: its peers' frames carry it). */
  server: PortedEngine;
  entry: string;
  /** This engine's model and replica subject: a peer's return comes home here. */
  model: string;
  subject: string;
  log(line: string): void;
  /** Counted into (the sub-server's, over all its entries). */
  stats: ReturnType<typeof newPeerStats>;
}

/**
 * One entry's deployment as one replica sees its remote peers. A request's first visit to a peer
 * model is placed by the entry's rule over the requests this engine knows there; later visits go
 * to that home, which the arrivals carry from engine to engine (`homes`). A home the entry no
 * longer lists (lost) is placed again, and the whole sequence goes with the request so that the
 * new replica re-prefills it. Peers' frames are untrusted: checked with the protocol's schema, and
 * only from replicas the entry listed.
 */
export class NatsPeers implements PeerRouter {
  private readonly session = crypto.randomBytes(6).toString('hex');
  private readonly links = new Map<string, NatsLink>();
  private models = new Map<string, RemotePeer['replicas']>();
  /** Per request: per model, the replica (subject) holding its state. */
  private readonly homes = new Map<string, Record<string, string>>();

  constructor(private readonly opts: NatsPeersOptions) {}

  /** The entry named its remote models and their live replicas (after `begin`, and at every change). */
  setPeers(peers: readonly RemotePeer[]): void {
    this.models = new Map(peers.filter((p) => p.model !== this.opts.model).map((p) => [p.model, p.replicas]));
    for (const [subject, link] of this.links) {
      if (this.listed(subject)) continue;
      // gone: what was unacked there died with it (the entry fails or re-places those requests)
      link.close();
      this.links.delete(subject);
    }
    // handoffs to these models go through this mesh (models with a port of their own keep it)
    const { server } = this.opts;
    server.router = this;
    for (const name of this.models.keys()) server.host.addPeer(name, { arrive: (as) => this.send(name, as.map(toWireArrival)), close: () => {} });
  }

  private listed(subject: string): boolean {
    return [...this.models.values()].some((rs) => rs.some((r) => r.subject === subject));
  }

  arrived(arrivals: readonly WireArrival[]): void {
    for (const w of arrivals) {
      // the holder's view is the latest: its homes win
      const h = { ...this.homes.get(w.spec.id), ...w.homes, [this.opts.model]: this.opts.subject };
      this.homes.set(w.spec.id, h);
    }
  }

  ended(id: string): void {
    this.homes.delete(id);
  }

  /** An event leaving for the entry: a finish ends the request here, a handoff names the replica it went to. */
  leaving(e: WireEvent): WireEvent {
    if (e.type === 'finish') this.ended(e.requestId);
    if (e.type !== 'moved') return e;
    const replica = this.homes.get(e.requestId)?.[e.to];
    return replica === undefined ? e : { ...e, replica };
  }

  send(to: string, arrivals: readonly WireArrival[]): void {
    const { stats } = this.opts;
    const replicas = this.models.get(to) ?? [];
    const batches = new Map<string, WireArrival[]>();
    const viaEntry: WireArrival[] = [];
    for (let w of arrivals) {
      const h = this.homes.get(w.spec.id) ?? {};
      this.homes.set(w.spec.id, h);
      if (!replicas.some((r) => r.subject === h[to])) {
        const target = this.place(to, replicas);
        const whole = w.handoff.anchor > 0 && !w.context ? this.wholeSequence(w) : undefined;
        // no live replica, or the state there is lost and this engine cannot rebuild it: the entry decides (it fails the request)
        if (!target || whole === null) {
          delete h[to];
          viaEntry.push(w);
          continue;
        }
        if (whole) {
          w = { ...w, context: whole };
          stats.recomputed++;
        }
        h[to] = target;
        stats.placed++;
      }
      const wire = { ...w, homes: { ...h } };
      batches.get(h[to])?.push(wire) ?? batches.set(h[to], [wire]);
    }
    for (const [subject, list] of batches) {
      stats.direct += list.length;
      this.link(subject).postMessage({ type: 'arrive', arrivals: list } satisfies ToPeer);
    }
    if (viaEntry.length > 0) {
      stats.viaEntry += viaEntry.length;
      this.opts.server.post({ type: 'deliver', to, arrivals: viaEntry });
    }
  }

  /**
   * A request placed on a replica that holds nothing of it although its peer had seen part of the
   * sequence (its home was lost): the whole committed sequence, which the engine holding it has.
   * null: it has not (then the entry, which has every commit, decides).
   */
  private wholeSequence(w: WireArrival): readonly number[] | null {
    const tokens = this.opts.server.host.engine.locals.get(w.spec.id)?.tokens;
    return tokens && tokens.length === w.handoff.anchor + w.handoff.tokens.length ? tokens.slice() : null;
  }

  /** The entry's rule over the requests this engine knows on each replica. */
  private place(model: string, replicas: RemotePeer['replicas']): string | undefined {
    const held = new Map<string, number>();
    for (const { [model]: at } of this.homes.values()) if (at) held.set(at, (held.get(at) ?? 0) + 1);
    return pickReplica(replicas, (s) => held.get(s) ?? 0, keepsOneReplica(this.opts.server.host.settings.mode));
  }

  private link(subject: string): NatsLink {
    let link = this.links.get(subject);
    if (link) return link;
    link = new NatsLink({
      session: this.session,
      reply: this.opts.subject,
      entry: this.opts.entry,
      publish: (b) => this.opts.nc.publish(peerSubject(subject), b),
    });
    link.on('message', (m) => this.receive(subject, m));
    this.links.set(subject, link);
    return link;
  }

  /** A frame from a peer replica of this entry's deployment; false: not from a replica the entry listed. */
  receiveFrame(f: LinkFrame): boolean {
    if (!f.reply || !this.listed(f.reply)) return false;
    this.link(f.reply).receive(f);
    return true;
  }

  private receive(from: string, m: unknown): void {
    const parsed = toPeerSchema.safeParse(m);
    if (parsed.success) return this.opts.server.arrive(parsed.data.arrivals);
    this.opts.stats.malformed++;
    this.opts.log(`refused a malformed handoff from peer ${from}: ${parsed.error.issues[0]?.message}`);
  }

  /** Back on NATS: what was in flight to the peers goes again. */
  resend(): void {
    for (const l of this.links.values()) l.resend();
  }

  close(): void {
    for (const l of this.links.values()) l.close();
    this.links.clear();
    this.homes.clear();
  }
}
