// What an ONNX decoder export must be for OnnxRunner to drive it, checked at load, and the session it gets on its execution provider.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import protobuf from 'protobufjs/minimal.js';

const { Reader } = protobuf;

export const EXECUTION_PROVIDERS = ['cpu', 'cuda'] as const;
export type ExecutionProvider = (typeof EXECUTION_PROVIDERS)[number];

/** A model export this runner cannot drive, or a provider that cannot start: names the file and what it lacks. */
export class OnnxExportError extends Error {
  override readonly name = 'OnnxExportError';
}

const MODEL_GRAPH = 7;
const GRAPH_NODE = 1;
const NODE_OP_TYPE = 4;
const NODE_DOMAIN = 7;

/** The op types of the graph's nodes (domain-qualified when not the default one), read from the ModelProto bytes. */
export function graphOps(model: Uint8Array): Set<string> {
  const ops = new Set<string>();
  const top = Reader.create(model);
  while (top.pos < top.len) {
    const tag = top.uint32();
    if (tag >>> 3 !== MODEL_GRAPH || (tag & 7) !== 2) {
      top.skipType(tag & 7);
      continue;
    }
    const graph = Reader.create(top.bytes());
    while (graph.pos < graph.len) {
      const gt = graph.uint32();
      if (gt >>> 3 !== GRAPH_NODE || (gt & 7) !== 2) {
        graph.skipType(gt & 7);
        continue;
      }
      const node = Reader.create(graph.bytes());
      let op = '';
      let domain = '';
      while (node.pos < node.len) {
        const nt = node.uint32();
        if ((nt >>> 3 === NODE_OP_TYPE || nt >>> 3 === NODE_DOMAIN) && (nt & 7) === 2) {
          const s = node.string();
          if (nt >>> 3 === NODE_OP_TYPE) op = s;
          else domain = s;
        } else node.skipType(nt & 7);
      }
      ops.add(domain && domain !== 'ai.onnx' ? `${domain}.${op}` : op);
    }
  }
  return ops;
}

/** Inputs the runner feeds; any other input of the export would be left unfed. */
const FED = new Set(['input_ids', 'attention_mask', 'position_ids', 'num_logits_to_keep', 'logits_to_keep']);

/**
 * Refuses, naming what is missing, an export the runner cannot drive: ORT-GenAI's
 * GroupQueryAttention layout (a fixed-size KV buffer indexed by seqlens_k), no KV cache inputs, a
 * KV cache that is not float32, or inputs the runner does not know how to feed.
 */
export function refuseUndrivable(
  file: string,
  model: Uint8Array,
  session: ort.InferenceSession,
  pastNames: readonly string[],
  alsoFed: readonly string[] = [],
): void {
  const ops = graphOps(model);
  const gqa = [...ops].find((o) => o.endsWith('GroupQueryAttention'));
  if (gqa) {
    throw new OnnxExportError(
      `${file}: this runner cannot drive it: it uses ${gqa} (ONNX Runtime GenAI's layout, a fixed-size KV buffer fed with seqlens_k and total_sequence_length); it needs an Optimum / transformers.js export whose present.N.key/value are Concat(past_key_values.N.key/value, new)`,
    );
  }
  const inputs = session.inputNames;
  if (!inputs.some((n) => n.startsWith('past_key_values.'))) {
    throw new OnnxExportError(
      `${file}: this runner cannot drive it: it has no past_key_values.* inputs (an export without a KV cache; export with past, e.g. Optimum's --task text-generation-with-past). Inputs: ${inputs.join(', ')}`,
    );
  }
  const missing = pastNames.filter((n) => !inputs.includes(n));
  if (missing.length > 0)
    throw new OnnxExportError(
      `${file}: this runner cannot drive it: inputs ${missing.slice(0, 4).join(', ')}${missing.length > 4 ? ` and ${missing.length - 4} more` : ''} are missing (config.json's num_hidden_layers asks for ${pastNames.length / 2} layers)`,
    );
  const unknown = inputs.filter((n) => !FED.has(n) && !alsoFed.includes(n) && !n.startsWith('past_key_values.'));
  if (unknown.length > 0) throw new OnnxExportError(`${file}: this runner cannot drive it: it takes inputs the runner does not feed: ${unknown.join(', ')}`);
  const meta = session.inputMetadata.find((m) => m.name === pastNames[0]);
  const type = meta && meta.isTensor ? meta.type : 'float32';
  if (type !== 'float32') {
    throw new OnnxExportError(
      `${file}: this runner cannot drive it: its KV cache (${pastNames[0]}) is ${type}, and the runner keeps float32 KV (choose a dtype whose file keeps float32 inputs and outputs: fp32, q8, int8, uint8, q4)`,
    );
  }
}

/** Where onnxruntime-node's native libraries are, and which provider libraries are absent there. */
function providerLibraries(ep: ExecutionProvider): { dir: string; missing: string[] } {
  let dir = '';
  try {
    const pkg = path.dirname(createRequire(import.meta.url).resolve('onnxruntime-node/package.json'));
    dir = path.join(pkg, 'bin', 'napi-v6', process.platform, process.arch);
  } catch {
    return { dir: 'onnxruntime-node', missing: [] };
  }
  const libs = ep === 'cuda' ? ['libonnxruntime_providers_shared.so', 'libonnxruntime_providers_cuda.so'] : [];
  return { dir, missing: libs.filter((l) => !fs.existsSync(path.join(dir, l))) };
}

/**
 * The session for `model` (bytes; its external data in `so`'s folder). A provider that cannot start
 * is an error naming the provider and what it needs, rather than ONNX Runtime's bare message.
 */
export async function createSession(
  file: string,
  model: Uint8Array,
  so: ort.InferenceSession.SessionOptions,
  ep: ExecutionProvider,
): Promise<ort.InferenceSession> {
  try {
    return await ort.InferenceSession.create(model, so);
  } catch (e) {
    if (ep === 'cpu') throw e;
    const { dir, missing } = providerLibraries(ep);
    const what = missing.length > 0 ? `${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} missing from ${dir}` : `a library it needs did not load`;
    throw new OnnxExportError(
      `${file}: executionProvider "${ep}" cannot start: ${what}; it needs onnxruntime-node's CUDA provider libraries (installed with ONNXRUNTIME_NODE_INSTALL_CUDA=v12) and CUDA 12 with cuDNN 9 on the library path (ONNX Runtime: ${(e as Error).message.split('\n')[0]})`,
    );
  }
}
