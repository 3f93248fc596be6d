// A fixed two-model routing for actor tests: small hands to large every n-th step, large keeps one token and hands back.
import { standardSend, type Algorithm } from '../../shared/algorithm.ts';

/** small hands to large (discarding) every `every`-th step; large keeps one token and hands back. */
export function everyN(every: number): Algorithm<null> {
  return {
    name: `every-${every}`,
    models: ['small', 'large'],
    entry: 1,
    initMeta: () => null,
    route: (r) => (r.model === 1 ? (r.stepsHere % every === 0 ? 2 : 0) : 1),
    send: (req) => standardSend(req, req.from === 2),
  };
}
