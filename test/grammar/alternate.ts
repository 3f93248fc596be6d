// A two-model routing that hands off on every token, keeping it: each model writes every other token of the answer.
import { standardSend, type Algorithm } from '../../shared/algorithm.ts';

export function alternate(): Algorithm<null> {
  return {
    name: 'alternate',
    models: ['small', 'large'],
    entry: 1,
    initMeta: () => null,
    route: (r) => (r.model === 1 ? 2 : 1),
    send: (req) => standardSend(req, true),
  };
}
