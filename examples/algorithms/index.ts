// Registry of the built-in algorithms by name, each a factory taking optional parameters.
import type { Algorithm } from '../../shared/algorithm.ts';
import { citer, type CiterParams } from './citer.ts';
import { coLlm, type CoLlmParams } from './coLlm.ts';
import { me, type MeParams } from './me.ts';
import { queryRouter, type QueryRouterParams } from './queryRouter.ts';
import { r2r, type R2rParams } from './r2r.ts';
import { rStitch, type RStitchParams } from './rStitch.ts';
import { singleModel } from './singleModel.ts';

/** Parameters arrive untyped from configs and requests; each factory checks names and types itself. */
export type AlgorithmParams = Readonly<Record<string, unknown>>;
export type AlgorithmFactory = (params?: AlgorithmParams) => Algorithm;

function singleFactory(model: string): AlgorithmFactory {
  return () => singleModel(model);
}

/**
 * A Map, not an object literal: names arrive from requests and the registry, and an object lookup
 * would find `constructor`, `toString` or `__proto__` on its prototype and "deploy" them.
 */
export const builtinAlgorithms = new Map<string, AlgorithmFactory>([
  ['r-stitch', (p) => rStitch(p as Partial<RStitchParams>)],
  ['citer', (p) => citer(p as Partial<CiterParams>)],
  ['r2r', (p) => r2r(p as Partial<R2rParams>)],
  ['co-llm', (p) => coLlm(p as Partial<CoLlmParams>)],
  ['me', (p) => me(p as Partial<MeParams>)],
  ['query-router', (p) => queryRouter(p as Partial<QueryRouterParams>)],
  ['single-small', singleFactory('small')],
  ['single-medium', singleFactory('medium')],
  ['single-large', singleFactory('large')],
]);

/** The factory named `name`, or throws with the names that exist; tests and tools that know the name is bundled use this. */
export function builtinFactory(name: string): AlgorithmFactory {
  const f = builtinAlgorithms.get(name);
  if (!f) throw new Error(`no built-in algorithm "${name}"; built-ins: ${[...builtinAlgorithms.keys()].join(', ')}`);
  return f;
}

export { citer, coLlm, me, queryRouter, r2r, rStitch, singleModel };
export { pickByWeights } from './me.ts';
