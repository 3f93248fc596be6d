// The bundled algorithms (examples/algorithms) as the registry's built-in factories: the server and the eval tool reach them only through here.
import type { Algorithm } from '../../shared/algorithm.ts';
import { builtinAlgorithms, singleModel, type AlgorithmFactory } from '../../examples/algorithms/index.ts';

export type { AlgorithmFactory, AlgorithmParams } from '../../examples/algorithms/index.ts';

/** The factory a `{ kind: 'builtin', factory }` spec names, or undefined when no bundled algorithm has that name. */
export function builtinFactory(name: string): AlgorithmFactory | undefined {
  return builtinAlgorithms.get(name);
}

/** Names of the bundled algorithms, in registration order (for error messages). */
export function builtinNames(): string[] {
  return [...builtinAlgorithms.keys()];
}

/** The algorithm that serves one model alone (a request naming a model rather than an algorithm). */
export function singleModelAlgorithm(model: string): Algorithm {
  return singleModel(model);
}
