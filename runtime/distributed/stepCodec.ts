// Binary wire format between NatsRunner and a remote sub-server: step rows, token signals, releases, control.
import type { StepWants, TokenSignals } from '../../shared/algorithm.ts';
import type { SamplingParams, SamplingPenalties, StepRow } from '../runner/modelRunner.ts';
import { RemoteRunnerError } from './remoteRunnerError.ts';

/**
 * Every message is one envelope: a 16-byte little-endian header, a small UTF-8 JSON section for
 * strings (request ids, head names, routing notes), then typed-array columns aligned to 8 bytes.
 * Token ids, positions and probabilities never go through JSON: a decode row costs 4 bytes per
 * token and a few fixed columns, and probabilities travel as float64 so a remote step returns
 * exactly the numbers an in-process step would (routing decisions must not drift).
 */
const MAGIC = 0x54; // 'T'
const VERSION = 1;
const HEADER = 16;

export const WireKind = { Step: 1, Result: 2, Error: 3, Release: 4, Hello: 5, Info: 6, Yield: 7 } as const;
export type WireKind = (typeof WireKind)[keyof typeof WireKind];
type ControlKind = typeof WireKind.Hello | typeof WireKind.Info | typeof WireKind.Error | typeof WireKind.Yield;

/** Who sent a step part: an entry step sends at most one part to each replica. */
export interface StepMeta {
  /** Entry instance id: cache ids are only unique per entry. */
  entry: string;
  /** Entry step number (per NatsRunner). */
  seq: number;
  /** Where the replica streams the step's lookahead passes, one message each as they finish, then an end. */
  aheadTo?: string;
}

export interface ResultMeta {
  /** Subject of the replica instance that ran the step (where its new caches now live). */
  replica: string;
  modelMs?: number;
  /** How long the part waited at the replica for its batch to start (behind a batch in flight). */
  queuedMs?: number;
  /** On a streamed lookahead message: the entry step it belongs to, and its pass (1, 2, …) or the end. */
  seq?: number;
  pass?: number;
  end?: boolean;
}

export interface DecodedStep {
  meta: StepMeta;
  rows: StepRow[];
}

export interface DecodedResult {
  meta: ResultMeta;
  rows: TokenSignals[];
  /** On a streamed lookahead pass: ahead[i] holds row i's result of that pass, or nothing where the row did not step. */
  ahead?: TokenSignals[][];
}

/** Sequential writer of one envelope into an exactly-sized buffer. */
class Writer {
  readonly bytes: Uint8Array;
  private readonly view: DataView;
  private off = HEADER;

  constructor(kind: WireKind, rows: number, count2: number, json: Uint8Array, columnBytes: number) {
    const size = HEADER + align8(json.length) + columnBytes;
    this.bytes = new Uint8Array(size);
    this.view = new DataView(this.bytes.buffer);
    this.view.setUint8(0, MAGIC);
    this.view.setUint8(1, VERSION);
    this.view.setUint8(2, kind);
    this.view.setUint32(4, rows, true);
    this.view.setUint32(8, count2, true);
    this.view.setUint32(12, json.length, true);
    this.bytes.set(json, HEADER);
    this.off = HEADER + align8(json.length);
  }

  f64(n: number): Float64Array {
    const a = new Float64Array(this.bytes.buffer, this.off, n);
    this.off += n * 8;
    return a;
  }

  i32(n: number): Int32Array {
    const a = new Int32Array(this.bytes.buffer, this.off, n);
    this.off += align8(n * 4);
    return a;
  }

  f32(n: number): Float32Array {
    const a = new Float32Array(this.bytes.buffer, this.off, n);
    this.off += align8(n * 4);
    return a;
  }
}

/** Sequential reader; copies the payload once when the transport hands an unaligned view. */
class Reader {
  readonly kind: WireKind;
  readonly rows: number;
  readonly count2: number;
  readonly json: unknown;
  private readonly buf: ArrayBuffer;
  private off: number;
  private readonly end: number;

  constructor(data: Uint8Array) {
    if (data.length < HEADER || data[0] !== MAGIC) throw new RemoteRunnerError('protocol', 'not a tokenrouter wire message');
    if (data[1] !== VERSION) throw new RemoteRunnerError('protocol', `wire version ${data[1]}, this build speaks ${VERSION}`);
    // new Uint8Array(x) copies; Buffer.prototype.slice (what NATS hands over) would not
    const aligned = data.byteOffset % 8 === 0 ? data : new Uint8Array(data);
    this.buf = aligned.buffer as ArrayBuffer;
    const base = aligned.byteOffset;
    const view = new DataView(this.buf, base, aligned.length);
    this.kind = view.getUint8(2) as WireKind;
    this.rows = view.getUint32(4, true);
    this.count2 = view.getUint32(8, true);
    const jsonLen = view.getUint32(12, true);
    this.end = base + aligned.length;
    if (HEADER + jsonLen > aligned.length) throw new RemoteRunnerError('protocol', 'truncated wire message');
    this.json = jsonLen ? JSON.parse(DECODER.decode(aligned.subarray(HEADER, HEADER + jsonLen))) : null;
    this.off = base + HEADER + align8(jsonLen);
  }

  private take(bytes: number): number {
    const at = this.off;
    if (at + bytes > this.end) throw new RemoteRunnerError('protocol', 'truncated wire message');
    this.off += align8(bytes);
    return at;
  }

  f64(n: number): Float64Array {
    return new Float64Array(this.buf, this.take(n * 8), n);
  }

  i32(n: number): Int32Array {
    return new Int32Array(this.buf, this.take(n * 4), n);
  }

  f32(n: number): Float32Array {
    return new Float32Array(this.buf, this.take(n * 4), n);
  }
}

const ENCODER = new TextEncoder();
const DECODER = new TextDecoder();

function align8(n: number): number {
  return (n + 7) & ~7;
}

/** The kind of a wire message without decoding it. */
export function wireKind(data: Uint8Array): WireKind {
  if (data.length < HEADER || data[0] !== MAGIC) throw new RemoteRunnerError('protocol', 'not a tokenrouter wire message');
  return data[2] as WireKind;
}

// --- steps: entry → sub-server ---

interface StepJson extends StepMeta {
  ids: string[];
  /** Distinct head lists; each row points at one by index (usually every row shares one). */
  heads: (readonly string[])[];
  /** Rare per-row sampling extras (logprobs, penalties) by row index; absent when no row has any. */
  extras?: Record<number, { topLogprobs?: number; penalties?: SamplingPenalties }>;
}

/** Per-row flag bits of a step message. */
const SUPPRESS_EOS = 1;

export function encodeStep(meta: StepMeta, rows: readonly StepRow[]): Uint8Array {
  const n = rows.length;
  let tokens = 0;
  const headLists: (readonly string[])[] = [];
  const headKeys = new Map<string, number>();
  const headIdx = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    tokens += rows[i].tokens.length;
    const h = rows[i].wants.heads;
    const key = h.join('\u0000');
    let k = headKeys.get(key);
    if (k === undefined) {
      k = headLists.length;
      headLists.push(h);
      headKeys.set(key, k);
    }
    headIdx[i] = k;
  }
  const json: StepJson = { ...meta, ids: rows.map((r) => r.requestId), heads: headLists };
  for (let i = 0; i < n; i++) {
    const sp = rows[i].sampling;
    if (sp.topLogprobs === undefined && sp.penalties === undefined) continue;
    json.extras ??= {};
    json.extras[i] = { ...(sp.topLogprobs !== undefined ? { topLogprobs: sp.topLogprobs } : {}), ...(sp.penalties ? { penalties: sp.penalties } : {}) };
  }
  const jsonBytes = ENCODER.encode(JSON.stringify(json));
  const w = new Writer(WireKind.Step, n, tokens, jsonBytes, 4 * n * 8 + 8 * align8(n * 4) + align8(tokens * 4));
  const cacheId = w.f64(n);
  const seed = w.f64(n);
  const temperature = w.f64(n);
  const topP = w.f64(n);
  const position = w.i32(n);
  const tokenLen = w.i32(n);
  const topK = w.i32(n);
  const wantsTopK = w.i32(n);
  const wantsHidden = w.i32(n);
  const heads = w.i32(n);
  const flags = w.i32(n);
  const ahead = w.i32(n);
  const tok = w.i32(tokens);
  let t = 0;
  for (let i = 0; i < n; i++) {
    const r = rows[i];
    cacheId[i] = r.cacheId;
    seed[i] = r.sampling.seed;
    temperature[i] = r.sampling.temperature;
    topP[i] = r.sampling.topP;
    position[i] = r.position;
    tokenLen[i] = r.tokens.length;
    topK[i] = r.sampling.topK;
    wantsTopK[i] = r.wants.topK;
    wantsHidden[i] = r.wants.hidden ? 1 : 0;
    heads[i] = headIdx[i];
    flags[i] = r.sampling.suppressEos ? SUPPRESS_EOS : 0;
    ahead[i] = r.ahead ?? 0;
    const src = r.tokens;
    for (let j = 0; j < src.length; j++) tok[t++] = src[j];
  }
  return w.bytes;
}

export function decodeStep(data: Uint8Array): DecodedStep {
  const r = new Reader(data);
  if (r.kind !== WireKind.Step) throw new RemoteRunnerError('protocol', `expected a step message, got kind ${r.kind}`);
  const n = r.rows;
  const json = r.json as StepJson;
  const cacheId = r.f64(n);
  const seed = r.f64(n);
  const temperature = r.f64(n);
  const topP = r.f64(n);
  const position = r.i32(n);
  const tokenLen = r.i32(n);
  const topK = r.i32(n);
  const wantsTopK = r.i32(n);
  const wantsHidden = r.i32(n);
  const heads = r.i32(n);
  const flags = r.i32(n);
  const ahead = r.i32(n);
  const tok = r.i32(r.count2);
  const wants = new Map<string, StepWants>();
  const rows: StepRow[] = new Array(n);
  let t = 0;
  for (let i = 0; i < n; i++) {
    const len = tokenLen[i];
    const key = `${heads[i]}/${wantsTopK[i]}/${wantsHidden[i]}`;
    // rows share one wants object per distinct value, as they do in-process
    let w = wants.get(key);
    if (!w) wants.set(key, (w = { topK: wantsTopK[i], hidden: wantsHidden[i] === 1, heads: json.heads[heads[i]] ?? [] }));
    const sampling: SamplingParams = flags[i] & SUPPRESS_EOS ? { temperature: temperature[i], topP: topP[i], topK: topK[i], seed: seed[i], suppressEos: true } : { temperature: temperature[i], topP: topP[i], topK: topK[i], seed: seed[i] };
    const extra = json.extras?.[i];
    if (extra?.topLogprobs !== undefined) sampling.topLogprobs = extra.topLogprobs;
    if (extra?.penalties) sampling.penalties = extra.penalties;
    rows[i] = {
      cacheId: cacheId[i],
      requestId: json.ids[i],
      tokens: Array.from(tok.subarray(t, t + len)),
      position: position[i],
      sampling,
      wants: w,
    };
    if (ahead[i] > 0) rows[i].ahead = ahead[i];
    t += len;
  }
  const { ids: _ids, heads: _heads, extras: _extras, ...meta } = json;
  return { meta, rows };
}

// --- results: sub-server → entry ---

interface ResultJson extends ResultMeta {
  /** Head names used anywhere in this result, indexed by the head-name column. */
  headNames: string[];
  /** Lookahead: each row's count of extra results, which follow the rows' own in row order. */
  aheadLens?: number[];
}

/** Signals of `main`, then of each row's lookahead results (`ahead[i]`, in order), in one message. */
export function encodeResult(meta: ResultMeta, main: readonly TokenSignals[], ahead?: readonly (readonly TokenSignals[])[]): Uint8Array {
  const withAhead = ahead?.some((a) => a.length > 0) ?? false;
  const rows = withAhead ? main.concat(...ahead!) : main;
  const n = rows.length;
  let tops = 0;
  let hidden = 0;
  let headCount = 0;
  const names: string[] = [];
  const nameIdx = new Map<string, number>();
  for (const s of rows) {
    tops += s.topIds.length;
    hidden += s.hidden?.length ?? 0;
    for (const k in s.heads) {
      headCount++;
      if (!nameIdx.has(k)) {
        nameIdx.set(k, names.length);
        names.push(k);
      }
    }
  }
  const json: ResultJson = { ...meta, headNames: names, ...(withAhead ? { aheadLens: ahead!.map((a) => a.length) } : {}) };
  const jsonBytes = ENCODER.encode(JSON.stringify(json));
  const w = new Writer(WireKind.Result, n, 0, jsonBytes, 4 * n * 8 + 4 * align8(n * 4) + align8(tops * 4) + align8(headCount * 4) + tops * 8 + headCount * 8 + align8(hidden * 4));
  const entropy = w.f64(n);
  const maxProb = w.f64(n);
  const margin = w.f64(n);
  const tokenProb = w.f64(n);
  const token = w.i32(n);
  const topCount = w.i32(n);
  const hiddenLen = w.i32(n);
  const headLen = w.i32(n);
  const topIds = w.i32(tops);
  const headName = w.i32(headCount);
  const topProbs = w.f64(tops);
  const headValue = w.f64(headCount);
  const hid = w.f32(hidden);
  let t = 0;
  let h = 0;
  let x = 0;
  for (let i = 0; i < n; i++) {
    const s = rows[i];
    entropy[i] = s.entropy;
    maxProb[i] = s.maxProb;
    margin[i] = s.margin;
    tokenProb[i] = s.tokenProb;
    token[i] = s.token;
    topCount[i] = s.topIds.length;
    for (let j = 0; j < s.topIds.length; j++) {
      topIds[t] = s.topIds[j];
      topProbs[t++] = s.topProbs[j];
    }
    let hl = 0;
    for (const k in s.heads) {
      headName[h] = nameIdx.get(k)!;
      headValue[h++] = s.heads[k];
      hl++;
    }
    headLen[i] = hl;
    if (s.hidden) {
      hid.set(s.hidden, x);
      x += s.hidden.length;
      hiddenLen[i] = s.hidden.length;
    } else hiddenLen[i] = -1;
  }
  return w.bytes;
}

export function decodeResult(data: Uint8Array): DecodedResult {
  const r = new Reader(data);
  if (r.kind === WireKind.Error) throw new RemoteRunnerError('remote_error', String((r.json as { message?: string } | null)?.message ?? 'remote step failed'));
  if (r.kind !== WireKind.Result) throw new RemoteRunnerError('protocol', `expected a result message, got kind ${r.kind}`);
  const n = r.rows;
  const json = r.json as ResultJson;
  const entropy = r.f64(n);
  const maxProb = r.f64(n);
  const margin = r.f64(n);
  const tokenProb = r.f64(n);
  const token = r.i32(n);
  const topCount = r.i32(n);
  const hiddenLen = r.i32(n);
  const headLen = r.i32(n);
  let tops = 0;
  let headCount = 0;
  let hidden = 0;
  for (let i = 0; i < n; i++) {
    tops += topCount[i];
    headCount += headLen[i];
    if (hiddenLen[i] > 0) hidden += hiddenLen[i];
  }
  const topIds = r.i32(tops);
  const headName = r.i32(headCount);
  const topProbs = r.f64(tops);
  const headValue = r.f64(headCount);
  const hid = r.f32(hidden);
  const out: TokenSignals[] = new Array(n);
  let t = 0;
  let h = 0;
  let x = 0;
  for (let i = 0; i < n; i++) {
    const k = topCount[i];
    const heads: Record<string, number> = {};
    for (let j = 0; j < headLen[i]; j++, h++) heads[json.headNames[headName[h]]] = headValue[h];
    const sig: TokenSignals = {
      token: token[i],
      entropy: entropy[i],
      maxProb: maxProb[i],
      margin: margin[i],
      tokenProb: tokenProb[i],
      topIds: k ? Array.from(topIds.subarray(t, t + k)) : EMPTY,
      topProbs: k ? Array.from(topProbs.subarray(t, t + k)) : EMPTY,
      heads,
    };
    t += k;
    const hl = hiddenLen[i];
    if (hl >= 0) {
      // a copy: the row may outlive the message buffer in an algorithm's metadata
      sig.hidden = hid.slice(x, x + hl);
      x += hl;
    }
    out[i] = sig;
  }
  const { headNames: _names, aheadLens, ...meta } = json;
  if (!aheadLens) return { meta, rows: out };
  // the rows' own results first (none in a streamed pass), then each row's lookahead results
  let at = n - aheadLens.reduce((a, b) => a + b, 0);
  const main = out.slice(0, at);
  const ahead = aheadLens.map((len) => out.slice(at, (at += len)));
  return { meta, rows: main, ahead };
}

const EMPTY: readonly number[] = Object.freeze([]);

// --- releases and control ---

export function encodeRelease(entry: string, cacheIds: readonly number[]): Uint8Array {
  const w = new Writer(WireKind.Release, cacheIds.length, 0, ENCODER.encode(JSON.stringify({ entry })), cacheIds.length * 8);
  w.f64(cacheIds.length).set(cacheIds);
  return w.bytes;
}

export function decodeRelease(data: Uint8Array): { entry: string; cacheIds: Float64Array } {
  const r = new Reader(data);
  if (r.kind !== WireKind.Release) throw new RemoteRunnerError('protocol', `expected a release message, got kind ${r.kind}`);
  return { entry: (r.json as { entry: string }).entry, cacheIds: r.f64(r.rows) };
}

/** Hello, Info and Error messages: rare, so their body is JSON. */
export function encodeControl(kind: ControlKind, body: unknown): Uint8Array {
  return new Writer(kind, 0, 0, ENCODER.encode(JSON.stringify(body ?? null)), 0).bytes;
}

export function decodeControl<T>(data: Uint8Array, kind: typeof WireKind.Hello | typeof WireKind.Info | typeof WireKind.Yield): T {
  const r = new Reader(data);
  if (r.kind === WireKind.Error) throw new RemoteRunnerError('remote_error', String((r.json as { message?: string } | null)?.message ?? 'remote error'));
  if (r.kind !== kind) throw new RemoteRunnerError('protocol', `expected message kind ${kind}, got ${r.kind}`);
  return r.json as T;
}
