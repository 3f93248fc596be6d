// Groups chain states by their remaining-time vector (the models' relative phase), for aggregation.
import type { Chain } from './buildChain.ts';

export function phaseGroups(chain: Chain): { of: Int32Array; count: number } {
  const { K, size, fields } = chain;
  const of = new Int32Array(size);
  const ids = new Map<number, number>();
  for (let s = 0; s < size; s++) {
    let code = 0;
    for (let i = 0; i < K; i++) code = code * 65536 + fields[(s * K + i) * 3 + 2];
    let id = ids.get(code);
    if (id === undefined) {
      id = ids.size;
      ids.set(code, id);
    }
    of[s] = id;
  }
  return { of, count: ids.size };
}
