// The engine's side of a port: one engine host served over a worker's MessagePort or a NATS link, messages as data.
import type { Algorithm } from '../../shared/algorithm.ts';
import { createRealClock } from '../clock/clock.ts';
import { TokenRouterError, toWireError } from '../errors.ts';
import { loadAlgorithm } from '../registry/algorithmSource.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import {
  toEngineSchema,
  toPeerSchema,
  type AlgorithmRef,
  type Arrival,
  type EngineOutlet,
  type EngineEvent,
  type EngineSettings,
  type FromEngine,
  type PeerLink,
  type PortLike,
  type ToEngine,
  type ToPeer,
  type WireArrival,
  type WireEvent,
} from '../../shared/protocol/engineProtocol.ts';
import type { ThreadStats } from '../../shared/protocol/laneStats.ts';
import { EngineHost } from '../core/engineHost.ts';
import type { Decoder } from '../runner/detokenizer.ts';
import { forgetModel } from './engineControls.ts';

/** Over NATS, the peer mesh (nats/natsPeers.ts) follows where each request's state is: every arrival, every end, the replica a handoff went to. */
export interface PeerRouter {
  arrived(arrivals: readonly WireArrival[]): void;
  ended(id: string): void;
  leaving(e: WireEvent): WireEvent;
}

/** An engine host with what a port adds: algorithms built from their references, arrivals parked until their deploy comes. */
export class PortedEngine {
  readonly host: EngineHost;
  private readonly algorithms = new Map<string, { alg: Algorithm<unknown>; ref: AlgorithmRef }>();
  /** Arrivals whose algorithm's deploy has not come yet (it travels on the entry's link, they on a peer's). */
  private readonly parked = new Map<string, WireArrival[]>();
  router: PeerRouter | null = null;
  private readonly trusted: boolean;

  constructor(
    private readonly port: PortLike,
    settings: EngineSettings,
    runner: ModelRunner,
    trusted: boolean,
    decoder: Decoder | undefined,
    threadStats?: () => ThreadStats,
  ) {
    // under checkInvariants every message is checked, our own thread's too
    this.trusted = trusted && !settings.checkInvariants;
    const outlet: EngineOutlet = {
      inProcess: false,
      report: (r) => {
        if (threadStats) r.lane!.thread = threadStats();
        const events = r.events.map((e) => (this.router ? this.router.leaving(toWireEvent(e)) : toWireEvent(e)));
        port.postMessage({ type: 'step', events, trace: r.trace, lane: r.lane!, returned: r.returned } satisfies FromEngine);
      },
      viaEntry: (to, arrivals) => this.post({ type: 'deliver', to, arrivals: arrivals.map(toWireArrival) }),
    };
    this.host = new EngineHost(outlet, settings, runner, decoder, createRealClock(settings.origin));
  }

  addPeer(name: string, port: PortLike): void {
    const link: PeerLink = {
      arrive: (arrivals: readonly Arrival[]) => port.postMessage({ type: 'arrive', arrivals: arrivals.map(toWireArrival) } satisfies ToPeer),
      close: () => port.close(),
    };
    port.on('message', (m) => {
      const { arrivals } = this.trusted ? (m as ToPeer) : toPeerSchema.parse(m);
      // not the link handoffs to `name` take now: sent just before that peer died (or was replaced), what it had seen of these requests died with it
      this.arrive(this.host.peers.get(name) === link ? arrivals : arrivals.map((w) => forgetModel(w, name)));
    });
    this.host.addPeer(name, link);
  }

  release(id: string, serial: number, status: 'done' | 'failed' | 'cancelled'): void {
    this.host.release(id, serial, status);
    this.router?.ended(id);
  }

  async deploy(ref: AlgorithmRef): Promise<void> {
    if (!this.algorithms.has(ref.key)) this.algorithms.set(ref.key, { alg: await loadAlgorithm(ref), ref });
    const waiting = this.parked.get(ref.key);
    this.parked.delete(ref.key);
    if (waiting) this.arrive(waiting);
  }

  arrive(arrivals: readonly WireArrival[]): void {
    this.router?.arrived(arrivals);
    const ready: Arrival[] = [];
    for (const w of arrivals) {
      const found = this.algorithms.get(w.spec.algorithm);
      if (found) ready.push({ ...w, spec: { ...w.spec, algorithm: found.alg, ref: found.ref } });
      else {
        const list = this.parked.get(w.spec.algorithm) ?? [];
        list.push(w);
        this.parked.set(w.spec.algorithm, list);
      }
    }
    this.host.arrive(ready);
  }

  post(m: FromEngine): void {
    this.port.postMessage(m);
  }
}

interface ServeOptions {
  /** The entry said `close`: a worker closes its runner and leaves; a sub-server outlives its entries and only forgets this one. */
  onClose(): Promise<void>;
  /** A message that cannot be handled (a bug, a malformed message): a worker dies as a crash would. */
  onError(e: Error): void;
  onBegin?(server: PortedEngine): void;
  /** The entry is this program in another thread: its messages and its peers' are not checked. */
  trusted?: boolean;
  decoder?: Decoder;
  /** An engine alone in its thread: the thread's figures, sent with its lane. */
  threadStats?: () => ThreadStats;
}

/** Serves the engine protocol on `port` with `runner`: each `begin` builds an engine host; messages are handled in order (later ones wait for a deploy). */
export function serveEngine(
  port: PortLike,
  runner: ModelRunner,
  opts: ServeOptions,
): { readonly server: PortedEngine | null; inOrder(fn: (server: PortedEngine) => void): void } {
  let server: PortedEngine | null = null;
  let chain: Promise<void> = Promise.resolve();
  const handle = async (m: Exclude<ToEngine, { type: 'crash' }>): Promise<void> => {
    if (m.type === 'begin') {
      server?.host.dispose();
      server = new PortedEngine(port, m.settings, runner, opts.trusted ?? false, opts.decoder, opts.threadStats);
      for (const [name, p] of Object.entries(m.peers)) server.addPeer(name, p);
      opts.onBegin?.(server);
      return;
    }
    if (m.type === 'close') {
      server?.host.dispose();
      server = null;
      return opts.onClose();
    }
    if (!server) throw new Error(`engine got "${m.type}" before "begin"`);
    switch (m.type) {
      case 'peer':
        return server.addPeer(m.name, m.port);
      case 'deploy':
        return server.deploy(m.ref);
      case 'arrive':
        return server.arrive(m.arrivals);
      case 'release':
        return server.release(m.id, m.serial, m.status);
      default:
        server.host.call(m);
    }
  };
  port.on('message', (raw: unknown): void => {
    let m = raw as ToEngine;
    if (!opts.trusted || server?.host.settings.checkInvariants) {
      const parsed = toEngineSchema.safeParse(raw);
      if (!parsed.success) return opts.onError(new Error(`malformed engine message: ${parsed.error.issues[0]?.message}`));
      m = parsed.data;
    }
    if (m.type === 'crash') return opts.onError(new Error(m.message));
    chain = chain.then(() => handle(m)).catch((e: Error) => opts.onError(e));
  });
  return {
    get server() {
      return server;
    },
    /** Runs `fn` after the messages before it (a transport's own message, e.g. NATS's `remote-peers`). */
    inOrder(fn) {
      chain = chain
        .then(() => {
          if (!server) throw new Error('engine got a message before "begin"');
          fn(server);
        })
        .catch((e: Error) => opts.onError(e));
    },
  };
}

/** An arrival as it crosses a port: its algorithm by key (the engine built it from a `deploy`). */
export function toWireArrival(a: Arrival): WireArrival {
  const { algorithm, ref, ...rest } = a.spec;
  if (!ref)
    throw new TokenRouterError(
      'invalid_request',
      `algorithm ${algorithm.name} has no reference (AlgorithmRef), so it cannot run on an engine in another thread`,
      'algorithm',
    );
  return { ...a, spec: { ...rest, algorithm: ref.key } };
}

/** An event as it leaves for the entry: an error as its code and message, a commit without the hidden state (it stays in the engine's thread). */
function toWireEvent(e: EngineEvent): WireEvent {
  if (e.type === 'finish' && e.error) return { ...e, error: toWireError(e.error) };
  if (e.type === 'commit' && e.signals?.hidden) {
    const { hidden: _, ...signals } = e.signals;
    return { ...e, signals };
  }
  return e as WireEvent;
}
