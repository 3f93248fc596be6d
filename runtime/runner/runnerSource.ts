// A model runner by reference, so the thread that runs an engine can load the runner beside it.
import { pathToFileURL } from 'node:url';
import type { ModelRunner } from './modelRunner.ts';
import { OnnxRunner, type OnnxRunnerOptions } from './onnxRunner.ts';
import type { Decoder } from './detokenizer.ts';
import { loadModelFolder } from './modelFolder.ts';
import { TokenDecoder } from './tokenDecoder.ts';

/** `export` of the module at `module` (a path or file URL), called with `args`. */
export interface ModuleExport {
  module: string;
  export: string;
  args?: readonly unknown[];
}

export type RunnerSource =
  /** The model folder's tokenizer is loaded beside the runner (decoding only). */
  | { kind: 'onnx'; folder: string; opts?: OnnxRunnerOptions }
  /** Simulated runners in tests and benches; `tokenizer`, a module export that builds the decoder their vocabulary reads with (none: requests that ask for text fail there). */
  | ({ kind: 'module'; tokenizer?: ModuleExport } & ModuleExport);

async function callExport<T>(source: ModuleExport): Promise<T> {
  const url = source.module.startsWith('file:') ? source.module : pathToFileURL(source.module).href;
  const mod = (await import(url)) as Record<string, unknown>;
  const make = mod[source.export];
  if (typeof make !== 'function') throw new Error(`${source.module} exports no function "${source.export}"`);
  return (await (make as (...a: unknown[]) => T | Promise<T>)(...(source.args ?? []))) as T;
}

/**
 * The runner and the decoder beside it, so its engine detokenises. An ONNX folder is read once for
 * both, with the export variant the runner loads, and its decoder decodes only (TokenDecoder).
 */
export async function loadEngineSide(source: RunnerSource): Promise<{ runner: ModelRunner; decoder: Decoder | undefined }> {
  if (source.kind === 'onnx') {
    const folder = loadModelFolder(source.folder, { dtype: source.opts?.dtype });
    const decoder = TokenDecoder.fromFolder(folder);
    return { runner: await OnnxRunner.load(folder, source.opts ?? {}), decoder };
  }
  const [runner, decoder] = await Promise.all([callExport<ModelRunner>(source), source.tokenizer && callExport<Decoder>(source.tokenizer)]);
  return { runner, decoder };
}
