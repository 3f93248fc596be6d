// Calibration wire messages (POST /admin/calibrate): choose a built-in's threshold for a target share of tokens on one model, from evaluation runs on the served models.
import { z } from 'zod';
import { taskRefSchema } from './evaluate.ts';

/** How a threshold is searched: its range, and the scale bisection halves it on. */
export interface ThresholdSpace {
  param: string;
  low: number;
  high: number;
  /** `log`: halve log(v) (entropy, probabilities near 0); `log1m`: halve log(1 − v) (confidences near 1); `linear`. */
  scale: 'linear' | 'log' | 'log1m';
}

/** The threshold each two-model built-in routes on, and where to search it. */
export const CALIBRATABLE: Readonly<Record<string, ThresholdSpace>> = {
  'r-stitch': { param: 'tau', low: 1e-4, high: 1, scale: 'log' },
  citer: { param: 'tau', low: 0, high: 1 - 1e-6, scale: 'log1m' },
  r2r: { param: 'tau', low: 1e-4, high: 1, scale: 'log' },
  'co-llm': { param: 'eta', low: 1e-4, high: 1, scale: 'log' },
};

export const CALIBRATE_BOUNDS = { defaultProblems: 16, defaultIterations: 7, maxIterations: 12 } as const;

export const calibrateRequestSchema = z
  .object({
    /** A built-in with one routing threshold: r-stitch, citer, r2r, co-llm. */
    builtin: z.string(),
    /** Its other parameters, held fixed. */
    params: z.record(z.string(), z.unknown()).optional(),
    /** The share of committed tokens wanted on `model`, 0–1. */
    target: z.number().min(0).max(1),
    /** The model whose share is the target (default "large"). */
    model: z.string().min(1).default('large'),
    /** The task whose validation problems the trials run (default the server's default task). */
    task: taskRefSchema.optional(),
    /** Validation problems each trial runs (the set's first N). */
    problems: z.number().int().min(1).optional(),
    iterations: z.number().int().min(1).max(CALIBRATE_BOUNDS.maxIterations).optional(),
    concurrency: z.number().int().min(1).optional(),
    maxTokens: z.number().int().min(1).optional(),
    client: z.string().min(1).max(64).optional(),
  })
  .strict();
export type CalibrateRequest = z.infer<typeof calibrateRequestSchema>;

export const calibrationTrialSchema = z.object({ value: z.number(), share: z.number(), accuracy: z.number() });
export type CalibrationTrial = z.infer<typeof calibrationTrialSchema>;

export const calibrateResponseSchema = z.object({
  builtin: z.string(),
  param: z.string(),
  model: z.string(),
  target: z.number(),
  /** The threshold chosen: the trial whose share came closest to the target. */
  value: z.number(),
  share: z.number(),
  accuracy: z.number(),
  /** False when no threshold in the range reaches the target (the nearest end is chosen). */
  reached: z.boolean(),
  problems: z.number().int(),
  trials: z.array(calibrationTrialSchema),
});
export type CalibrateResponse = z.infer<typeof calibrateResponseSchema>;
