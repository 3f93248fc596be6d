// R2R: a router MLP reads the small model's hidden state, sampled token and top-k logits; a predicted divergence goes to the large model for one token.
import { standardSend, type Algorithm } from '../../shared/algorithm.ts';
import { withDefaults } from './withDefaults.ts';

export interface R2rParams {
  /**
   * Divergence-probability threshold τ: small's token is rejected when the `r2r` head says ≥ τ.
   * Default 0.5, the decision boundary of the head's sigmoid; R2R ships a tuned threshold with each
   * trained router, so pass the one calibrated for the bundled head when it differs.
   */
  tau: number;
  /** The router head it reads on small (routers.json); `r2r-tf` is the teacher-forced head kept for comparison. */
  head: string;
}

// Tuned for the bundled `r2r` head, as R2R ships a tuned threshold with each router: on the validation
// split (small/routers/calibration.json) 0.01 is the τ with the fewest large tokens (8.7 %) that keeps
// 99 % of large-only's accuracy (94.9 % against 95.6 %); at the sigmoid's 0.5 it would almost never route.
export const R2R_DEFAULTS: R2rParams = Object.freeze({ tau: 0.01, head: 'r2r' });

export type R2rMeta = Record<string, never>;

const SMALL = 1;
const LARGE = 2;

export function r2r(params?: Partial<R2rParams>): Algorithm<R2rMeta> {
  const { tau, head } = withDefaults('r2r', R2R_DEFAULTS, params);
  return {
    name: 'r2r',
    models: ['small', 'large'],
    entry: SMALL,
    // The runner evaluates the router network (hidden state, token embedding, top-k logits) as the `r2r` head.
    wants: { [SMALL]: { heads: [head] } },
    initMeta: () => ({}),
    route(step) {
      if (step.model === SMALL) return (step.heads[head] ?? 0) >= tau ? LARGE : 0;
      return SMALL; // one large token, then back
    },
    // The divergent small token is discarded; large's replacement is kept.
    send: (req) => standardSend(req, req.from === LARGE),
  };
}
