// R-Stitch: the small model writes until it is unsure (high entropy), the large model writes until it is sure again.
import { standardSend, type Algorithm } from '../../shared/algorithm.ts';
import { withDefaults } from './withDefaults.ts';

export interface RStitchParams {
  /**
   * Normalised-entropy threshold τ, used in both directions. Default 0.03: on normalised
   * entropy (H / log|V|) a confident token sits well below 0.03, so only genuinely uncertain steps switch.
   */
  tau: number;
}

export const R_STITCH_DEFAULTS: RStitchParams = Object.freeze({ tau: 0.03 });

/** R-Stitch keeps no per-request state: every decision reads only the current step's entropy. */
export type RStitchMeta = Record<string, never>;

const SMALL = 1;
const LARGE = 2;

export function rStitch(params?: Partial<RStitchParams>): Algorithm<RStitchMeta> {
  const { tau } = withDefaults('r-stitch', R_STITCH_DEFAULTS, params);
  return {
    name: 'r-stitch',
    models: ['small', 'large'],
    entry: SMALL,
    initMeta: () => ({}),
    route(step) {
      // On small: an uncertain token goes to large. On large: a certain token hands back to small.
      if (step.model === SMALL) return step.entropy > tau ? LARGE : 0;
      return step.entropy <= tau ? SMALL : 0;
    },
    // Small's uncertain token is discarded (large regenerates that position); large's confident token is kept.
    send: (req) => standardSend(req, req.from === LARGE),
  };
}
