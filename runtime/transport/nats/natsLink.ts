// One ordered, loss-free link over NATS, between an entry and a remote engine or between two remote engines: numbered frames, cumulative acks, resends.
import v8 from 'node:v8';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { PortLike } from '../../../shared/protocol/engineProtocol.ts';
import { linkFrameSchema, type LinkFrame } from './natsConnection.ts';

/** 5: engine-to-engine handoffs (`remote-peers`, `${subject}.peer` frames). 6: a frame carries the messages of one turn and an ack. */
export const WIRE_PROTOCOL = 6;

/** Structured clone, as a MessagePort carries messages: Infinity, typed arrays and undefined survive, which JSON would lose. */
export const encodeFrame = (f: LinkFrame): Uint8Array => v8.serialize(f);

export function decodeFrame(bytes: Uint8Array): LinkFrame | null {
  try {
    return linkFrameSchema.safeParse(v8.deserialize(bytes)).data ?? null;
  } catch {
    return null;
  }
}

/** The frames published on `subject`, decoded (null: malformed). */
export function onFrames(nc: NatsConnection, subject: string, take: (f: LinkFrame | null) => void): Subscription {
  return nc.subscribe(subject, { callback: (err, msg) => void (err || take(decodeFrame(msg.data))) });
}

export interface NatsLinkOptions {
  /** This side's session id: a peer that sees a new one knows this side started over. */
  session: string;
  /** Sends one frame's bytes to the other side (a NATS publish). */
  publish(bytes: Uint8Array): void;
  /** Sent with every frame: where the other side answers (the entry's inbox; a replica's subject between engines). */
  reply?: string;
  /** Sent with every frame of a link between two engines: the entry session whose deployment it serves. */
  entry?: string;
  /**
   * An ack goes alone this long after new frames arrived if none of this side's frames carried it
   * (and every 250 ms as a keepalive). Default 100 ms: an ack only frees the sender's copies, which
   * wait `resendMs` (500) before going again, and one alone costs a socket write at each end and at nats-server.
   */
  ackMs?: number;
  /** Frames unacked this long are sent again (a NATS restart loses what was in flight). */
  resendMs?: number;
}

/** A frame this big carries one message: several together could pass NATS's payload limit (1 MiB by default). */
const MAX_SHARED_FRAME = 256 * 1024;
const KEEPALIVE_MS = 250;

/**
 * NATS core delivers in order but may lose what was in flight when a server restarts. So every
 * frame is numbered; the receiver takes only the next number (a gap means a loss: what follows
 * is dropped and comes again) and acks cumulatively; the sender keeps frames until acked and
 * sends the unacked again after `resendMs`, or at once when its connection is back.
 *
 * The messages posted in one turn of the event loop travel as one frame, which carries the ack of
 * what this side has received: a NATS message costs a socket write at both ends and at
 * nats-server, which on a loaded machine cost more than the encoding (a CPU profile).
 */
export class NatsLink implements PortLike {
  private seq = 0;
  private readonly unacked: { seq: number; bytes: Uint8Array; at: number }[] = [];
  /** Posted this turn, sent together at its end. */
  private pending: unknown[] = [];
  private expected = 1;
  private peerSession: string | null = null;
  private ackDue = false;
  private readonly listeners: ((m: unknown) => void)[] = [];
  private readonly timer: NodeJS.Timeout;
  private closed = false;
  /** When the other side was last heard (any frame; an entry counts a replica's heartbeats too). */
  lastHeard = performance.now();
  /** Frames sent again, and dropped out of order. */
  readonly stats = { resent: 0, dropped: 0 };

  constructor(private readonly opts: NatsLinkOptions) {
    const resendMs = opts.resendMs ?? 500;
    let lastAck = 0;
    this.timer = setInterval(() => {
      const now = performance.now();
      if (this.ackDue || now - lastAck >= KEEPALIVE_MS) {
        this.ackDue = false;
        lastAck = now;
        this.publish(this.encode({ ack: this.expected - 1 }));
      }
      if (this.unacked.length > 0 && now - this.unacked[0].at >= resendMs) this.resend();
    }, opts.ackMs ?? 100);
    this.timer.unref();
  }

  postMessage(message: unknown): void {
    if (this.closed) return;
    if (this.pending.push(message) === 1) queueMicrotask(this.flush);
  }

  /** Sends what was posted and not sent yet, now (before this side closes or waits for NATS to flush). */
  readonly flush = (): void => {
    if (this.pending.length === 0 || this.closed) return;
    const messages = this.pending;
    this.pending = [];
    const bytes = this.numbered(messages);
    if (bytes.length > MAX_SHARED_FRAME && messages.length > 1) for (const m of messages) this.push(this.numbered([m]));
    else this.push(bytes);
  };

  private numbered(messages: unknown[]): Uint8Array {
    this.ackDue = false;
    return this.encode({ seq: this.seq + 1, messages, ack: this.expected - 1 });
  }

  private push(bytes: Uint8Array): void {
    this.unacked.push({ seq: ++this.seq, bytes, at: performance.now() });
    this.publish(bytes);
  }

  on(_event: 'message', listener: (message: unknown) => void): this {
    this.listeners.push(listener);
    return this;
  }

  /** Every unacked frame again, in order (the connection is back: what was in flight may be lost). */
  resend(): void {
    const now = performance.now();
    for (const u of this.unacked) {
      u.at = now;
      this.stats.resent++;
      this.publish(u.bytes);
    }
  }

  /** A frame from the other side (the owner subscribes and routes frames here). */
  receive(f: LinkFrame): void {
    if (this.closed) return;
    this.lastHeard = performance.now();
    if (f.session !== this.peerSession) {
      // the other side started over: its numbering too
      this.peerSession = f.session;
      this.expected = 1;
    }
    if (f.ack !== undefined) {
      const n = this.unacked.findIndex((u) => u.seq > f.ack!);
      this.unacked.splice(0, n === -1 ? this.unacked.length : n);
    }
    if (f.seq === undefined) return;
    this.ackDue = true;
    if (f.seq !== this.expected) {
      this.stats.dropped++;
      return;
    }
    this.expected++;
    for (const m of f.messages ?? []) for (const l of this.listeners) l(m);
  }

  /** What was posted goes first. */
  close(): void {
    this.flush();
    this.closed = true;
    clearInterval(this.timer);
    this.unacked.length = 0;
  }

  private encode(f: Omit<LinkFrame, 'session'>): Uint8Array {
    return encodeFrame({ session: this.opts.session, reply: this.opts.reply, entry: this.opts.entry, ...f });
  }

  private publish(bytes: Uint8Array): void {
    try {
      this.opts.publish(bytes);
    } catch {
      // reconnecting or closing: the resend timer covers it
    }
  }
}
