// ONNX Runtime's session settings for a served model and its router heads: threads, placement, and what memory ORT keeps.
import type * as ort from 'onnxruntime-node';
import type { ExecutionProvider } from './onnxExport.ts';

/** ORT's memory settings for a session. */
export interface SessionMemory {
  /** Keep a pre-packed copy of the weights for ORT's GEMM kernels (default true: see sessionOptions). */
  prepacking?: boolean;
  /** ORT's CPU memory arena (default true: see sessionOptions). */
  cpuArena?: boolean;
}

/** ONNX Runtime's settings for a served model's session (and its router heads). */
export function sessionOptions(
  intraOpNumThreads: number,
  place: { executionProvider?: ExecutionProvider; externalDataDir?: string } = {},
  memory: SessionMemory = {},
): ort.InferenceSession.SessionOptions {
  const session: Record<string, unknown> = {};
  // without prepacking, load peaks at 0.15-0.5x the weights instead of 1.9-2.6x, but decode at B = 8 ran 20-30 % slower (qwen3-42m)
  if (memory.prepacking === false) session.disable_prepacking = '1';
  // With more than one intra-op thread, idle pool threads would spin between steps and take the core the entry needs.
  if (intraOpNumThreads > 1) session.intra_op = { allow_spinning: '0' };
  // A model created from bytes finds its external data (model.onnx_data, ...) in this folder.
  if (place.externalDataDir) session.model_external_initializers_file_folder_path = place.externalDataDir;
  return {
    intraOpNumThreads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    // without the arena, prefill ran 1.7-3x slower (qwen3-42m, B = 1 / 8, 512 tokens) for RSS growth after steps of 356 against 349-530 MiB
    enableCpuMemArena: memory.cpuArena !== false,
    ...(place.executionProvider && place.executionProvider !== 'cpu' ? { executionProviders: [place.executionProvider, 'cpu'] } : {}),
    ...(Object.keys(session).length > 0 ? { extra: { session } } : {}),
  };
}
