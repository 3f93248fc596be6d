// Baseline: one model writes the whole answer; route never leaves it.
import type { Algorithm } from '../../shared/algorithm.ts';

export type SingleModelMeta = Record<string, never>;

export function singleModel(model: string): Algorithm<SingleModelMeta> {
  // route() reads no signal: the runner skips their O(V) work (a row of a real vocabulary costs ~0.3 ms)
  return { name: `single-${model}`, models: [model], entry: 1, wants: { 1: { signals: false } }, initMeta: () => ({}), route: () => 0 };
}
