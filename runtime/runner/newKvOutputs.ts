// Rewrites a decoder's ONNX graph so a step can hand back only its new KV slots: each present.* tensor's Concat input becomes an output of its own.
import protobuf from 'protobufjs/minimal.js';

const { Reader, Writer } = protobuf;

/** ONNX's protobuf field numbers (onnx.proto) that the rewrite reads or writes. */
const MODEL_GRAPH = 7;
const GRAPH_NODE = 1;
const GRAPH_OUTPUT = 12;
const NODE_INPUT = 1;
const NODE_OUTPUT = 2;
const NODE_OP_TYPE = 4;
const VALUE_INFO_NAME = 1;
const VALUE_INFO_TYPE = 2;
const TYPE_TENSOR = 1;
const TENSOR_ELEM_TYPE = 1;
const FLOAT = 1;
const LENGTH_DELIMITED = 2;

interface Field {
  field: number;
  /** The field's payload when length-delimited. */
  bytes?: Uint8Array;
  /** The whole field as it was encoded (tag included), to copy unchanged. */
  raw: Uint8Array;
}

function fields(buf: Uint8Array): Field[] {
  const r = Reader.create(buf);
  const out: Field[] = [];
  while (r.pos < r.len) {
    const start = r.pos;
    const tag = r.uint32();
    const wire = tag & 7;
    let bytes: Uint8Array | undefined;
    if (wire === LENGTH_DELIMITED) bytes = r.bytes();
    else r.skipType(wire);
    out.push({ field: tag >>> 3, bytes, raw: buf.subarray(start, r.pos) });
  }
  return out;
}

const text = (b: Uint8Array | undefined): string => (b ? Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8') : '');

/** A graph output of float tensors named `name` (ValueInfoProto, shape left to the model). */
function floatOutput(name: string): Uint8Array {
  const w = Writer.create();
  w.uint32((GRAPH_OUTPUT << 3) | LENGTH_DELIMITED).fork();
  w.uint32((VALUE_INFO_NAME << 3) | LENGTH_DELIMITED).string(name);
  w.uint32((VALUE_INFO_TYPE << 3) | LENGTH_DELIMITED).fork();
  w.uint32((TYPE_TENSOR << 3) | LENGTH_DELIMITED).fork();
  w.uint32(TENSOR_ELEM_TYPE << 3).int32(FLOAT);
  w.ldelim().ldelim().ldelim();
  return w.finish();
}

/**
 * `model` (an ONNX ModelProto) with one more output per `present` name: the tensor the model
 * concatenates after the past along the sequence axis (`present = Concat(past, new)`), [B, kv, S, hd].
 * Returns undefined when some present tensor is not made that way (another export): the caller
 * then fetches `present` as it is.
 */
export function withNewKvOutputs(model: Uint8Array, present: readonly string[]): { model: Uint8Array; newNames: string[] } | undefined {
  const top = fields(model);
  const gi = top.findIndex((f) => f.field === MODEL_GRAPH && f.bytes);
  if (gi < 0) return undefined;
  const graph = top[gi].bytes!;
  const made = new Map<string, { op: string; inputs: string[] }>();
  for (const f of fields(graph)) {
    if (f.field !== GRAPH_NODE) continue;
    const node = fields(f.bytes!);
    const inputs = node.filter((n) => n.field === NODE_INPUT).map((n) => text(n.bytes));
    const op = text(node.find((n) => n.field === NODE_OP_TYPE)?.bytes);
    for (const o of node.filter((n) => n.field === NODE_OUTPUT)) made.set(text(o.bytes), { op, inputs });
  }
  const newNames: string[] = [];
  for (const p of present) {
    const node = made.get(p);
    if (!node || node.op !== 'Concat' || node.inputs.length !== 2) return undefined;
    newNames.push(node.inputs[1]);
  }
  // repeated fields may come in any order: the new outputs go at the end of the graph
  const w = Writer.create();
  w.uint32((MODEL_GRAPH << 3) | LENGTH_DELIMITED).bytes(concat([graph, ...newNames.map(floatOutput)]));
  const rewritten = w.finish();
  return { model: concat(top.map((f, i) => (i === gi ? rewritten : f.raw))), newNames };
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  return Buffer.concat(parts.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength)));
}
