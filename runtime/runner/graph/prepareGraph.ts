// The load-time rewrites of a decoder's ONNX graph, composed: new-KV outputs, logits at the last position only, and the signal nodes.
import {
  concat,
  defaultOpset,
  fields,
  GRAPH_INPUT,
  GRAPH_NODE,
  GRAPH_OUTPUT,
  GRAPH_VALUE_INFO,
  INT64,
  FLOAT,
  initializer,
  MODEL_GRAPH,
  node,
  nodeInfo,
  valueInfo,
  valueInfoName,
  withInput,
  wrap,
  type NodeInfo,
} from './onnxProto.ts';
import { signalHead } from './signalHead.ts';

/** How the graph yields logits for each row's last position only. */
export type LogitsMode =
  /** The LM head's input is sliced to the last position: logits are [B, 1, V]. */
  | 'sliced'
  /** The export takes this input (e.g. `num_logits_to_keep`): the runner feeds 1. */
  | { input: string }
  /** Neither: logits stay [B, S, V] and the last row is read. */
  | 'full';

export interface PreparedGraph {
  model: Uint8Array;
  /** The outputs holding a step's new KV slots (present order); undefined: not rewritten. */
  newNames?: string[];
  logits: LogitsMode;
  /** Why logits stay [B, S, V] (for the load log line). */
  logitsNote?: string;
  /** The signal nodes (graph/signalHead.ts) were appended. */
  signals: boolean;
  /** With the masked rows' group (graph/signalHead.ts MASKED). */
  masked: boolean;
}

export interface PrepareOptions {
  /** The `present.*` outputs, in order: each becomes `Concat(past, new)`'s `new` as an output (newKvInputs). */
  present: readonly string[];
  /** Rewrite for new KV outputs (false: `present` is fetched whole). */
  newKv: boolean;
  /** The vocabulary size (the logits' last dimension). */
  vocab: number;
  /** Compute logits at each row's last position only (default true; false keeps [B, S, V], for comparisons). */
  lastPosition?: boolean;
  /** Append the signal nodes (default true). */
  signals?: boolean;
  /** With the signal nodes, the masked rows' group (signalHead.ts MASKED; default true). */
  masked?: boolean;
}

const KEEP_INPUTS = ['num_logits_to_keep', 'logits_to_keep'];
const LAST_HIDDEN = 'tr/last_hidden';
/** Ops an LM head multiplies by (MatMulNBits: a q4 export's, over [.., K] like MatMul). */
const HEAD_OPS = new Set(['Gemm', 'MatMul', 'MatMulNBits']);

/** The `new` inputs of each present tensor's `Concat(past, new)`, or undefined when some present is made another way. */
export function newKvInputs(made: ReadonlyMap<string, NodeInfo>, present: readonly string[]): string[] | undefined {
  const names: string[] = [];
  for (const p of present) {
    const n = made.get(p);
    if (!n || n.op !== 'Concat' || n.inputs.length !== 2) return undefined;
    names.push(n.inputs[1]);
  }
  return names;
}

function indexOf(nodes: ReadonlyMap<number, NodeInfo>, n: NodeInfo): number {
  for (const [i, m] of nodes) if (m === n) return i;
  throw new Error('prepareGraph: node not in the graph');
}

/** `model` (ModelProto bytes; weights may be external) with the rewrites applied; a rewrite that does not fit this export is left out. */
export function prepareGraph(model: Uint8Array, opts: PrepareOptions): PreparedGraph {
  const top = fields(model);
  const gi = top.findIndex((f) => f.field === MODEL_GRAPH && f.bytes);
  if (gi < 0) throw new Error('prepareGraph: the ONNX model has no graph');
  const graph = fields(top[gi].bytes!);
  const nodes = new Map<number, NodeInfo>();
  const made = new Map<string, NodeInfo>();
  graph.forEach((f, i) => {
    if (f.field !== GRAPH_NODE) return;
    const n = nodeInfo(f.bytes!);
    nodes.set(i, n);
    for (const o of n.outputs) made.set(o, n);
  });
  const inputs = graph.filter((f) => f.field === GRAPH_INPUT).map((f) => valueInfoName(f.bytes!));
  const added: Uint8Array[] = [];
  const newNames = opts.newKv ? newKvInputs(made, opts.present) : undefined;
  if (newNames) for (const n of newNames) added.push(valueInfo(GRAPH_OUTPUT, n, FLOAT));

  // logits at the last position: the export's own input, else the LM head's input sliced
  let logits: LogitsMode = 'full';
  let logitsNote: string | undefined;
  let head: { index: number; node: NodeInfo } | undefined;
  let outer: { index: number; node: NodeInfo } | undefined;
  const reshaped = new Set<string>(['logits']);
  const keep = KEEP_INPUTS.find((n) => inputs.includes(n));
  if (opts.lastPosition === false) logitsNote = 'asked to keep logits at every position';
  else if (keep) logits = { input: keep };
  else {
    let p = made.get('logits');
    // Llama exports end in Identity(MatMul) (untied head), fp16 ones in Cast: sliced, llama3-tiny's 256-token prefill took 6.7 ms against 60
    while (p && (p.op === 'Cast' || p.op === 'Identity')) {
      reshaped.add(p.inputs[0]);
      p = made.get(p.inputs[0]);
    }
    // Optimum-style: MatMul over [B, S, H]; or 2-D: Reshape(Gemm|MatMul(Reshape(h, [-1, H]), W), [B, S, V])
    const mm = p?.op === 'Reshape' ? made.get(p.inputs[0]) : undefined;
    const flat = mm && HEAD_OPS.has(mm.op) ? made.get(mm.inputs[0]) : undefined;
    if (p && (p.op === 'MatMul' || p.op === 'MatMulNBits')) {
      head = { index: indexOf(nodes, p), node: p };
      logits = 'sliced';
    } else if (p && mm && flat?.op === 'Reshape') {
      for (const n of [p, mm, flat]) for (const o of n.outputs) reshaped.add(o);
      head = { index: indexOf(nodes, flat), node: flat };
      // the outer Reshape's target [B, S, V] becomes [B, -1, V] (0: B, copied from the 2-D [B, V])
      outer = { index: indexOf(nodes, p), node: p };
      logits = 'sliced';
    } else
      logitsNote = `logits are made by ${p ? `a ${p.op}` : 'no node found'}, not a MatMul (possibly behind a Cast or Identity) nor Reshape(Gemm/MatMul(Reshape(hidden)))`;
  }

  const parts: Uint8Array[] = [];
  graph.forEach((f, i) => {
    if (head && i === head.index) {
      parts.push(
        initializer('tr/last_start', INT64, [1], [-1]),
        initializer('tr/last_end', INT64, [1], [2 ** 53 - 1]),
        initializer('tr/last_axis', INT64, [1], [1]),
      );
      parts.push(node('Slice', [head.node.inputs[0], 'tr/last_start', 'tr/last_end', 'tr/last_axis'], [LAST_HIDDEN]));
      parts.push(withInput(head.node, 0, LAST_HIDDEN));
      return;
    }
    if (outer && i === outer.index) {
      parts.push(initializer('tr/logits_shape', INT64, [3], [0, -1, opts.vocab]));
      parts.push(withInput(outer.node, 1, 'tr/logits_shape'));
      return;
    }
    // shapes recorded for the tensors the slice makes shorter would no longer hold
    if (head && (f.field === GRAPH_VALUE_INFO || f.field === GRAPH_OUTPUT) && reshaped.has(valueInfoName(f.bytes!))) {
      if (f.field === GRAPH_OUTPUT) parts.push(valueInfo(GRAPH_OUTPUT, 'logits', FLOAT));
      return;
    }
    parts.push(f.raw);
  });
  const signals = opts.signals !== false;
  const masked = signals && opts.masked !== false;
  if (signals) added.push(...signalHead('logits', { opset: defaultOpset(top), vocab: opts.vocab, lastOnly: logits === 'sliced', masked }));
  const rewritten = wrap(MODEL_GRAPH, concat([...parts, ...added]));
  return { model: concat(top.map((f, i) => (i === gi ? rewritten : f.raw))), newNames, logits, logitsNote, signals, masked };
}
