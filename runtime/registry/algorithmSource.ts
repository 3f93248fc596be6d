// An algorithm by reference: data an engine thread can rebuild it from (a stored spec, a single model, or a TS module).
import { pathToFileURL } from 'node:url';
import type { Algorithm } from '../../shared/algorithm.ts';
import type { ModelCatalogEntry } from '../../shared/ir/checkParams.ts';
import { compileIr, IrCompileError } from '../ir/compileIr.ts';
import { TokenRouterError } from '../errors.ts';
import type { AlgorithmSpec } from '../../shared/api/admin.ts';
import { builtinFactory, builtinNames, singleModelAlgorithm } from './builtins.ts';

export type AlgorithmSource =
  | AlgorithmSpec
  | { kind: 'single'; model: string }
  /** `export` of the module at `module` (a path or file URL), called with `args`: how tests send their own algorithms to threads. */
  | { kind: 'module'; module: string; export: string; args?: readonly unknown[] };

/**
 * What travels instead of the functions: `key` names one built algorithm (a name and version), so
 * an engine builds each once and a request carries only the key.
 */
export interface AlgorithmRef {
  readonly key: string;
  readonly source: AlgorithmSource;
  /** The served models, for compiling IR against their heads and vocabulary. */
  readonly catalog?: readonly ModelCatalogEntry[];
}

/** Builds a stored spec or a single model's algorithm (synchronous: what the service validates deploys with). */
export function buildAlgorithm(source: Exclude<AlgorithmSource, { kind: 'module' }>, catalog: readonly ModelCatalogEntry[] = []): Algorithm<unknown> {
  if (source.kind === 'single') return singleModelAlgorithm(source.model) as Algorithm<unknown>;
  if (source.kind === 'builtin') {
    const f = builtinFactory(source.factory);
    if (!f) throw new TokenRouterError('invalid_request', `no built-in algorithm "${source.factory}"; built-ins: ${builtinNames().join(', ')}`, 'builtin');
    try {
      return f(source.params) as Algorithm<unknown>;
    } catch (e) {
      throw new TokenRouterError('invalid_request', (e as Error).message, 'params');
    }
  }
  try {
    return compileIr(source.ir, { models: [...catalog] }) as Algorithm<unknown>;
  } catch (e) {
    if (e instanceof IrCompileError) throw e;
    throw new TokenRouterError('invalid_request', `invalid IR: ${(e as Error).message}`, 'ir');
  }
}

/** Builds any source, importing a module source first. */
export async function loadAlgorithm(ref: AlgorithmRef): Promise<Algorithm<unknown>> {
  const { source } = ref;
  if (source.kind !== 'module') return buildAlgorithm(source, ref.catalog);
  const url = source.module.startsWith('file:') ? source.module : pathToFileURL(source.module).href;
  const mod = (await import(url)) as Record<string, unknown>;
  const make = mod[source.export];
  if (typeof make !== 'function') throw new TokenRouterError('invalid_request', `${source.module} exports no function "${source.export}"`, 'algorithm');
  return (make as (...a: unknown[]) => Algorithm<unknown>)(...(source.args ?? []));
}
