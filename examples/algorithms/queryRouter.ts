// Query-level baseline: one decision per request from prompt features, taken at the first step; the chosen model writes everything.
import { standardSend, type Algorithm } from '../../shared/algorithm.ts';
import { withDefaults } from './withDefaults.ts';

export interface QueryRouterParams {
  /** Difficulty (mean of the features, each in [0, 1]) at or above which the large model answers. */
  threshold: number;
  /** Prompt length, in tokens, at which the length feature saturates at 1. */
  lengthScale: number;
  /** Entropy of the entry model's first token at which the uncertainty feature saturates at 1. */
  entropyScale: number;
  /**
   * The prompt text, when the caller builds one algorithm per request: adds a digit-density feature
   * (arithmetic-heavy prompts are the hard ones on the bundled task). RouteInput carries no text,
   * so this is the only way text reaches the decision.
   */
  prompt: string | undefined;
}

/**
 * Defaults: threshold 0.5 (hard when the features lean hard on average); lengthScale 64 tokens (the
 * bundled task's long prompts); entropyScale 0.1 (three times R-Stitch's τ: an unsure first token).
 */
export const QUERY_ROUTER_DEFAULTS: QueryRouterParams = Object.freeze({ threshold: 0.5, lengthScale: 64, entropyScale: 0.1, prompt: undefined });

export interface QueryRouterMeta {
  /** Digit-density feature from the prompt text, or null when no text was given. */
  digits: number | null;
  /** Set once the single decision has been taken. */
  decided: boolean;
  difficulty: number | null;
}

const SMALL = 1;
const LARGE = 2;

/** Share of digit characters, scaled so that a quarter of digits counts as fully numeric. */
export function digitFeature(text: string): number {
  if (text.length === 0) return 0;
  let digits = 0;
  for (const ch of text) if (ch >= '0' && ch <= '9') digits++;
  return Math.min(1, (4 * digits) / text.length);
}

export function queryRouter(params?: Partial<QueryRouterParams>): Algorithm<QueryRouterMeta> {
  const p = withDefaults('query-router', QUERY_ROUTER_DEFAULTS, params);
  const digits = p.prompt === undefined ? null : digitFeature(p.prompt);
  return {
    name: 'query-router',
    models: ['small', 'large'],
    entry: SMALL,
    initMeta: () => ({ digits, decided: false, difficulty: null }),
    route(step) {
      if (step.model !== SMALL || step.meta.decided) return 0; // one decision per request, never revisited
      step.meta.decided = true;
      // The first step's position is the prompt length; the first token's entropy says how unsure small is.
      const features = [Math.min(1, (step.position - step.generated) / p.lengthScale), Math.min(1, step.entropy / p.entropyScale)];
      if (step.meta.digits !== null) features.push(step.meta.digits);
      const difficulty = features.reduce((a, b) => a + b, 0) / features.length;
      step.meta.difficulty = difficulty;
      return difficulty >= p.threshold ? LARGE : 0;
    },
    // The small model's first token is discarded: the large model writes the whole answer.
    send: (req) => standardSend(req, false),
  };
}
