// A model runner by reference, so the thread that runs an engine can load the runner beside it.
import { pathToFileURL } from 'node:url';
import type { ModelRunner } from './modelRunner.ts';
import { OnnxRunner, type OnnxRunnerOptions } from './onnxRunner.ts';

export type RunnerSource =
  | { kind: 'onnx'; folder: string; opts?: OnnxRunnerOptions }
  /** `export` of the module at `module` (a path or file URL), called with `args`: simulated runners in tests and benches. */
  | { kind: 'module'; module: string; export: string; args?: readonly unknown[] };

export async function loadRunner(source: RunnerSource): Promise<ModelRunner> {
  if (source.kind === 'onnx') return OnnxRunner.load(source.folder, source.opts ?? {});
  const url = source.module.startsWith('file:') ? source.module : pathToFileURL(source.module).href;
  const mod = (await import(url)) as Record<string, unknown>;
  const make = mod[source.export];
  if (typeof make !== 'function') throw new Error(`${source.module} exports no function "${source.export}"`);
  return (await (make as (...a: unknown[]) => ModelRunner | Promise<ModelRunner>)(...(source.args ?? []))) as ModelRunner;
}
