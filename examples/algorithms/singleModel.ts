// Baseline: one model writes the whole answer; route never leaves it.
import type { Algorithm } from '../../shared/algorithm.ts';

export type SingleModelMeta = Record<string, never>;

export function singleModel(model: string): Algorithm<SingleModelMeta> {
  return { name: `single-${model}`, models: [model], entry: 1, initMeta: () => ({}), route: () => 0 };
}
