// ME (mixture of experts by draw): before every token, draw which of three models writes it, with fixed weights λ.
import { standardSend, type Algorithm, type ModelId } from '../../shared/algorithm.ts';
import { withDefaults } from './withDefaults.ts';

export interface MeParams {
  /**
   * Mixture weights λ for small, medium, large. Default 0.5 / 0.3 / 0.2: the cheap model
   * writes half the tokens, and the weights fall with cost so the mixture stays fast.
   */
  wSmall: number;
  wMedium: number;
  wLarge: number;
}

export const ME_DEFAULTS: MeParams = Object.freeze({ wSmall: 0.5, wMedium: 0.3, wLarge: 0.2 });

export type MeMeta = Record<string, never>;

/** The model a uniform draw `u` in [0, 1) picks under `weights` (ids are 1-based). */
export function pickByWeights(weights: readonly number[], u: number): ModelId {
  const total = weights.reduce((a, b) => a + b, 0);
  let acc = 0;
  for (let i = 0; i < weights.length; i++) {
    acc += weights[i];
    if (u * total < acc) return i + 1;
  }
  // u ≈ 1 with rounding: the last model with positive weight.
  for (let i = weights.length - 1; i >= 0; i--) if (weights[i] > 0) return i + 1;
  return 1;
}

export function me(params?: Partial<MeParams>): Algorithm<MeMeta> {
  const p = withDefaults('me', ME_DEFAULTS, params);
  const weights = [p.wSmall, p.wMedium, p.wLarge];
  if (weights.some((w) => w < 0) || weights.every((w) => w === 0)) throw new RangeError('me: weights must be ≥ 0 and not all zero');
  return {
    name: 'me',
    models: ['small', 'medium', 'large'],
    entry: 1,
    initMeta: () => ({}),
    route(step) {
      // The seeded draw makes the mixture reproducible; drawing the current model means "stay".
      const next = pickByWeights(weights, step.draw);
      return next === step.model ? 0 : next;
    },
    // Every token is kept: the draw chooses who writes the *next* token, not whether this one stands.
    send: (req) => standardSend(req, true),
  };
}
