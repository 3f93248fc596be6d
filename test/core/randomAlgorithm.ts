// Seeded random routing algorithms for property tests: decisions are functions of (position, model, token).
import { standardSend, type Algorithm } from '../../shared/algorithm.ts';
import { draw3, mix } from '../../runtime/util/hash.ts';

export interface RandomMeta {
  routes: number;
  arrivals: number;
}

/**
 * Switches with a per-model probability, keeps or discards the token by a seeded coin. A model
 * may discard only after it committed a step since it arrived, so positions always advance.
 * Meta counts route() calls and arrivals: it must survive every handoff for outputs to match.
 */
export function randomAlgorithm(seed: number, modelNames: string[]): Algorithm<RandomMeta> {
  const k = modelNames.length;
  const pSwitch = modelNames.map((_, i) => draw3(seed, i, 1) * 0.6);
  const pKeep = draw3(seed, 7, 7);
  return {
    name: `random-${seed}`,
    models: modelNames,
    entry: 1 + Math.floor(draw3(seed, 3, 3) * k),
    initMeta: () => ({ routes: 0, arrivals: 0 }),
    route(r) {
      r.meta.routes++;
      if (k === 1) return 0;
      const u = draw3(mix(seed, r.meta.routes % 3), r.position * 8 + r.model, r.token ^ r.meta.arrivals);
      if (u >= pSwitch[r.model - 1]) return 0;
      let target = 1 + Math.floor(draw3(seed, r.position, r.token) * (k - 1));
      if (target >= r.model) target++;
      return target;
    },
    send(req) {
      const mayDiscard = req.result.stepsHere > 1;
      const keep = !mayDiscard || draw3(seed, req.anchor + req.result.position, req.result.token) < pKeep;
      return standardSend(req, keep, { ...req.meta, arrivals: req.meta.arrivals + 1 });
    },
  };
}
