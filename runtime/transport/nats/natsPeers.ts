// Engine to engine over NATS, on a sub-server: handoffs go straight to a peer model's replica (the request's home there, or one placed), on one ordered link per replica.
import crypto from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { toPeerSchema, type LinkFrame, type RemotePeer, type ToPeer, type WireArrival } from '../../../shared/protocol/engineProtocol.ts';
import type { PeerRouter, PortedEngine } from '../serveEngine.ts';
import { keepsOneReplica } from '../../core/servingPolicy.ts';
import { NatsLink } from './natsLink.ts';

/** Where a replica takes frames from its peers (the entry's link uses `${subject}.in`). */
export const peerSubject = (replica: string): string => `${replica}.peer`;

type Replicas = RemotePeer['replicas'];

/** `direct`: handoffs sent to a peer replica; `placed`: first visits placed; `recomputed`: of those, re-placed with the whole sequence after their home was lost; `viaEntry`: left to the entry (no live replica); `malformed`: peers' messages refused. */
export interface PeerStats {
  direct: number;
  placed: number;
  recomputed: number;
  viaEntry: number;
  malformed: number;
}

export const newPeerStats = (): PeerStats => ({ direct: 0, placed: 0, recomputed: 0, viaEntry: 0, malformed: 0 });

export interface NatsPeersOptions {
  nc: NatsConnection;
  /** This engine's model and replica subject: a peer's return comes home here. */
  model: string;
  subject: string;
  log(line: string): void;
  /** Counted into (the sub-server's, over all its entries). */
  stats: PeerStats;
}

/**
 * One entry's deployment as one replica sees its remote peers. A request's first visit to a peer
 * model is placed by the entry's rule (fewest requests per KV token of capacity, never on a
 * draining replica; sync modes on the first replica) over the requests this engine knows there;
 * later visits go to that home, which the arrivals carry from engine to engine (`homes`). A home
 * the entry no longer lists (lost) is placed again, and the whole sequence goes with the request
 * so that the new replica re-prefills it. Peers' frames are untrusted: checked with the protocol's
 * schema, and only from replicas the entry listed.
 */
export class NatsPeers implements PeerRouter {
  private readonly session = crypto.randomBytes(6).toString('hex');
  private entry = '';
  private readonly links = new Map<string, NatsLink>();
  private models = new Map<string, Replicas>();
  /** Per request: per model, the replica (subject) holding its state. */
  private readonly homes = new Map<string, Record<string, string>>();
  private server: PortedEngine | null = null;
  private readonly stats: PeerStats;

  constructor(private readonly opts: NatsPeersOptions) {
    this.stats = opts.stats;
  }

  /** The entry named its remote models and their live replicas (after `begin`, and at every change). */
  setPeers(server: PortedEngine, session: string, peers: readonly RemotePeer[]): void {
    this.server = server;
    this.entry = session;
    this.models = new Map(peers.filter((p) => p.model !== this.opts.model).map((p) => [p.model, p.replicas]));
    const live = new Set([...this.models.values()].flatMap((rs) => rs.map((r) => r.subject)));
    for (const [subject, link] of this.links) {
      if (live.has(subject)) continue;
      // gone: what was unacked there died with it (the entry fails or re-places those requests)
      link.close();
      this.links.delete(subject);
    }
    server.routeTo(this, [...this.models.keys()]);
  }

  arrived(arrivals: readonly WireArrival[]): void {
    for (const w of arrivals) {
      const h = this.homes.get(w.spec.id) ?? {};
      // the holder's view is the latest: its homes win
      if (w.homes) Object.assign(h, w.homes);
      h[this.opts.model] = this.opts.subject;
      this.homes.set(w.spec.id, h);
    }
  }

  ended(id: string): void {
    this.homes.delete(id);
  }

  sentTo(id: string, to: string): string | undefined {
    return this.homes.get(id)?.[to];
  }

  send(to: string, arrivals: readonly WireArrival[]): void {
    const replicas = this.models.get(to) ?? [];
    const batches = new Map<string, WireArrival[]>();
    const viaEntry: WireArrival[] = [];
    for (const w of arrivals) {
      const id = w.spec.id;
      const h = this.homes.get(id) ?? {};
      this.homes.set(id, h);
      let wire = w;
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
          wire = { ...w, context: whole };
          this.stats.recomputed++;
        }
        h[to] = target;
        this.stats.placed++;
      }
      const list = batches.get(h[to]) ?? [];
      list.push({ ...wire, homes: { ...h } });
      batches.set(h[to], list);
    }
    for (const [subject, list] of batches) {
      this.stats.direct += list.length;
      this.link(subject).postMessage({ type: 'arrive', arrivals: list } satisfies ToPeer);
    }
    if (viaEntry.length > 0) {
      this.stats.viaEntry += viaEntry.length;
      this.server?.post({ type: 'deliver', to, arrivals: viaEntry });
    }
  }

  /**
   * A request placed on a replica that holds nothing of it although its peer had seen part of the
   * sequence (its home was lost): the whole committed sequence, which the engine holding it has.
   * null: it has not (then the entry, which has every commit, decides).
   */
  private wholeSequence(w: WireArrival): readonly number[] | null {
    const tokens = this.server?.engine.locals.get(w.spec.id)?.tokens;
    return tokens && tokens.length === w.handoff.anchor + w.handoff.tokens.length ? tokens.slice() : null;
  }

  /** The entry's rule over the requests this engine knows on each replica. */
  private place(model: string, replicas: Replicas): string | undefined {
    const open = replicas.filter((r) => !r.draining);
    if (open.length === 0) return undefined;
    const mode = this.server?.host.policy.mode;
    if (!mode || keepsOneReplica(mode)) return open.map((r) => r.subject).sort((a, b) => a.localeCompare(b))[0];
    const held = new Map<string, number>();
    for (const h of this.homes.values()) if (h[model]) held.set(h[model], (held.get(h[model]) ?? 0) + 1);
    let best: string | undefined;
    let bestLoad = Infinity;
    for (const r of open) {
      const load = ((held.get(r.subject) ?? 0) + 1) / Math.max(1, r.kvCapacityTokens);
      if (load < bestLoad) [best, bestLoad] = [r.subject, load];
    }
    return best;
  }

  private link(subject: string): NatsLink {
    let link = this.links.get(subject);
    if (link) return link;
    link = new NatsLink({ session: this.session, reply: this.opts.subject, entry: this.entry, publish: (b) => this.opts.nc.publish(peerSubject(subject), b) });
    link.on('message', (m) => this.receive(subject, m));
    this.links.set(subject, link);
    return link;
  }

  /** A frame from a peer replica of this entry's deployment; false: not from a replica the entry listed. */
  receiveFrame(f: LinkFrame): boolean {
    if (!f.reply || ![...this.models.values()].some((rs) => rs.some((r) => r.subject === f.reply))) return false;
    this.link(f.reply).receive(f);
    return true;
  }

  private receive(from: string, m: unknown): void {
    const parsed = toPeerSchema.safeParse(m);
    if (!parsed.success) {
      this.stats.malformed++;
      return this.opts.log(`refused a malformed handoff from peer ${from}: ${parsed.error.issues[0]?.message}`);
    }
    this.server?.arrive(parsed.data.arrivals);
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
