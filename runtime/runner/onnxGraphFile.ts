// Reads an ONNX model's graph proto without its weights: inline initializers are referred to where they lie in the file, or moved once to a data file in a cache folder.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import protobuf from 'protobufjs/minimal.js';
import { GRAPH_INITIALIZER, LENGTH_DELIMITED, MODEL_GRAPH, TENSOR_DATA_LOCATION, TENSOR_EXTERNAL_DATA, TENSOR_RAW_DATA } from './graph/onnxProto.ts';

const { Writer } = protobuf;

/** TensorProto.DataLocation EXTERNAL, and a StringStringEntryProto's key and value. */
const EXTERNAL = 1;
const ENTRY_KEY = 1;
const ENTRY_VALUE = 2;

/** Inline tensors at least this big move to the data file; smaller ones (shapes, scalars) stay in the graph. */
const MOVE_FROM_BYTES = 1024;
/** Offsets in the data file are page aligned, so ONNX Runtime may map the file instead of copying it. */
const ALIGN = 4096;
/** Inline-weights files at most this big are read in place; bigger ones are converted to a page-aligned data file once. */
export const DEFAULT_INLINE_LIMIT = 64 * 2 ** 20;

export interface GraphFile {
  /** The ModelProto bytes to hand to the graph rewrite and to ONNX Runtime. */
  model: Uint8Array;
  /** The folder its external data lives in (ORT resolves `location` there). */
  dataDir: string;
  /**
   * How it was read: 'whole' (the file as is: its weights are external already), 'in-place' (its
   * inline weights referred to in the file itself), or 'converted' / 'cached' (weights moved to `dataDir`).
   */
  how: 'whole' | 'in-place' | 'converted' | 'cached';
}

export interface GraphFileOptions {
  /** Files above this size with inline weights are converted; others are read in place (default DEFAULT_INLINE_LIMIT). */
  inlineLimitBytes?: number;
  /** Where converted models are kept (default `$TMPDIR/tokenrouter-onnx`). */
  cacheDir?: string;
}

/** Reads varints, bytes and ranges of a file through a small window, never the whole file. */
class FileCursor {
  private buf = Buffer.alloc(1 << 16);
  private start = 0;
  private end = 0;
  pos = 0;
  constructor(
    readonly fd: number,
    readonly size: number,
  ) {}

  private fill(n: number): void {
    if (this.pos >= this.start && this.pos + n <= this.end) return;
    if (n > this.buf.length) this.buf = Buffer.alloc(n);
    this.start = this.pos;
    this.end = this.pos + fs.readSync(this.fd, this.buf, 0, this.buf.length, this.pos);
    if (this.pos + n > this.end) throw new Error(`truncated ONNX file: needs ${n} bytes at offset ${this.pos}, has ${this.end - this.pos}`);
  }

  varint(): number {
    let v = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      this.fill(1);
      const b = this.buf[this.pos - this.start];
      this.pos++;
      v += (b & 0x7f) * mul;
      if (b < 0x80) return v;
      mul *= 128;
    }
    throw new Error(`malformed varint at offset ${this.pos}`);
  }

  bytes(n: number): Buffer {
    this.fill(n);
    const out = Buffer.from(this.buf.subarray(this.pos - this.start, this.pos - this.start + n));
    this.pos += n;
    return out;
  }

  /** Skips a field's payload of wire type `wire` (the tag already read). */
  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 5) this.pos += 4;
    else if (wire === LENGTH_DELIMITED) this.pos += this.varint();
    else throw new Error(`unsupported protobuf wire type ${wire} at offset ${this.pos}`);
  }
}

interface FieldAt {
  field: number;
  wire: number;
  /** Where the field starts (its tag) and where its payload starts and ends. */
  start: number;
  body: number;
  end: number;
}

/** The fields of the message spanning [from, to) of the file, located but not read. */
function fieldsAt(c: FileCursor, from: number, to: number): FieldAt[] {
  const out: FieldAt[] = [];
  c.pos = from;
  while (c.pos < to) {
    const start = c.pos;
    const tag = c.varint();
    const wire = tag & 7;
    let body = c.pos;
    if (wire === LENGTH_DELIMITED) {
      const n = c.varint();
      body = c.pos;
      c.pos += n;
    } else c.skip(wire);
    out.push({ field: tag >>> 3, wire, start, body, end: c.pos });
  }
  if (c.pos !== to) throw new Error(`malformed ONNX message: fields run past offset ${to}`);
  return out;
}

const read = (c: FileCursor, from: number, to: number): Buffer => {
  c.pos = from;
  return c.bytes(to - from);
};

/** Copies [from, to) of the cursor's file to `out` at `at`, a window at a time. */
function copyRange(c: FileCursor, from: number, to: number, out: number, at: number): void {
  const chunk = Buffer.alloc(Math.min(16 * 2 ** 20, Math.max(to - from, 1)));
  for (let p = from; p < to; ) {
    const n = fs.readSync(c.fd, chunk, 0, Math.min(chunk.length, to - p), p);
    if (n <= 0) throw new Error(`truncated ONNX file at offset ${p}`);
    fs.writeSync(out, chunk, 0, n, at + (p - from));
    p += n;
  }
}

function entry(w: protobuf.Writer, key: string, value: string): void {
  w.uint32((TENSOR_EXTERNAL_DATA << 3) | LENGTH_DELIMITED).fork();
  w.uint32((ENTRY_KEY << 3) | LENGTH_DELIMITED).string(key);
  w.uint32((ENTRY_VALUE << 3) | LENGTH_DELIMITED).string(value);
  w.ldelim();
}

/**
 * Writes `src`'s graph with every inline tensor of MOVE_FROM_BYTES or more moved to `dataFile`
 * (named `location` in the graph), streaming the weights file to file; returns the new ModelProto.
 * Without `dataFile`, nothing is written: each such tensor is referred to where it lies in `src`
 * itself (its bytes at their offset in the file named `location`), so ONNX Runtime reads the weights
 * from the model file and JavaScript holds only the graph.
 */
export function convertToExternalData(src: string, dataFile?: string, location = path.basename(dataFile ?? src)): Uint8Array {
  const fd = fs.openSync(src, 'r');
  const out = dataFile === undefined ? undefined : fs.openSync(dataFile, 'w');
  try {
    const c = new FileCursor(fd, fs.fstatSync(fd).size);
    let at = 0;
    const top = fieldsAt(c, 0, c.size);
    const parts: Uint8Array[] = [];
    for (const f of top) {
      if (f.field !== MODEL_GRAPH || f.wire !== LENGTH_DELIMITED) {
        parts.push(read(c, f.start, f.end));
        continue;
      }
      const graph: Uint8Array[] = [];
      for (const g of fieldsAt(c, f.body, f.end)) {
        const fields = g.field === GRAPH_INITIALIZER && g.wire === LENGTH_DELIMITED ? fieldsAt(c, g.body, g.end) : [];
        const raw = fields.find((t) => t.field === TENSOR_RAW_DATA && t.wire === LENGTH_DELIMITED);
        if (!raw || raw.end - raw.body < MOVE_FROM_BYTES) {
          graph.push(read(c, g.start, g.end));
          continue;
        }
        const length = raw.end - raw.body;
        if (out === undefined) at = raw.body;
        else copyRange(c, raw.body, raw.end, out, at);
        const w = Writer.create();
        const kept = fields
          .filter((t) => t !== raw && t.field !== TENSOR_DATA_LOCATION && t.field !== TENSOR_EXTERNAL_DATA)
          .map((t) => read(c, t.start, t.end));
        entry(w, 'location', location);
        entry(w, 'offset', String(at));
        entry(w, 'length', String(length));
        w.uint32(TENSOR_DATA_LOCATION << 3).int32(EXTERNAL);
        const tensor = Buffer.concat([...kept, w.finish()]);
        const h = Writer.create();
        h.uint32((GRAPH_INITIALIZER << 3) | LENGTH_DELIMITED).uint32(tensor.length);
        graph.push(h.finish(), tensor);
        at = Math.ceil((at + length) / ALIGN) * ALIGN;
      }
      const body = Buffer.concat(graph);
      const h = Writer.create();
      h.uint32((MODEL_GRAPH << 3) | LENGTH_DELIMITED).uint32(body.length);
      parts.push(h.finish(), body);
    }
    return Buffer.concat(parts);
  } finally {
    fs.closeSync(fd);
    if (out !== undefined) fs.closeSync(out);
  }
}

/**
 * The model at `onnxPath` as graph bytes plus the folder of its weights. An export with external
 * data is read whole (its graph is all the file holds); one with inline weights up to the limit is
 * read in place (its graph refers to the weights where they lie in the file, so they never pass
 * through JavaScript: reading the file whole and rewriting it left four copies of the weights for
 * the garbage collector, 159 MiB at 42 MB); a bigger one is converted once into `cacheDir` (keyed by
 * path, size and mtime, page aligned) and its graph read from there.
 */
export function readGraphFile(onnxPath: string, externalData: readonly string[], opts: GraphFileOptions = {}): GraphFile {
  const st = fs.statSync(onnxPath);
  if (externalData.length > 0) return { model: fs.readFileSync(onnxPath), dataDir: path.dirname(onnxPath), how: 'whole' };
  if (st.size <= (opts.inlineLimitBytes ?? DEFAULT_INLINE_LIMIT))
    return { model: convertToExternalData(onnxPath), dataDir: path.dirname(onnxPath), how: 'in-place' };
  const key = crypto
    .createHash('sha256')
    .update(`${path.resolve(onnxPath)}\0${st.size}\0${st.mtimeMs}`)
    .digest('hex')
    .slice(0, 24);
  const dir = path.join(opts.cacheDir ?? path.join(os.tmpdir(), 'tokenrouter-onnx'), key);
  const graphFile = path.join(dir, 'model.onnx');
  if (fs.existsSync(graphFile)) return { model: fs.readFileSync(graphFile), dataDir: dir, how: 'cached' };
  fs.mkdirSync(dir, { recursive: true });
  // written under temporary names and renamed last, so a crash mid-way leaves no graph that looks complete
  const tmp = `.tmp-${crypto.randomUUID()}`;
  const model = convertToExternalData(onnxPath, path.join(dir, `model.onnx_data${tmp}`), 'model.onnx_data');
  fs.renameSync(path.join(dir, `model.onnx_data${tmp}`), path.join(dir, 'model.onnx_data'));
  fs.writeFileSync(graphFile + tmp, model);
  fs.renameSync(graphFile + tmp, graphFile);
  return { model, dataDir: dir, how: 'converted' };
}
