// The problem splits of the bundled task: validation for every choice, held-out only for reporting (examples/training/splits.py writes them).
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { TokenRouterError } from '../errors.ts';

export const SPLIT_NAMES = ['validation', 'heldout'] as const;
export type SplitName = (typeof SPLIT_NAMES)[number];

const problemSchema = z.object({ question: z.string().regex(/^\d+\*\d+$/), answer: z.string().regex(/^\d+$/) });
export type Problem = z.infer<typeof problemSchema>;

const runSchema = z.object({ run: z.string(), seed: z.number().int(), batches: z.number().int().positive(), batch_size: z.number().int().positive() });
export type TrainingRun = z.infer<typeof runSchema>;

const splitFileSchema = z.object({
  split: z.enum(SPLIT_NAMES),
  use: z.string(),
  seed: z.number().int(),
  n: z.number().int().positive(),
  rule: z.string(),
  /** Rows of the seed's stream kept whether or not a training run drew them (they were excluded from training instead). */
  first_kept: z.number().int().nonnegative(),
  excluded_runs: z.array(runSchema),
  rows: z.array(problemSchema),
});
export type SplitFile = z.infer<typeof splitFileSchema>;

/** Reads and checks `<modelsDir>/<split>.json`; a missing or malformed file is a clear error, not a crash later. */
export function loadSplit(modelsDir: string, split: string): SplitFile & { file: string } {
  if (!(SPLIT_NAMES as readonly string[]).includes(split))
    throw new TokenRouterError('invalid_request', `unknown split "${split}"; splits: ${SPLIT_NAMES.join(', ')}`, 'split');
  const file = path.join(modelsDir, `${split}.json`);
  if (!fs.existsSync(file)) throw new TokenRouterError('not_found', `no ${split} split at ${file} (python3 examples/training/splits.py writes it)`, 'split');
  const parsed = splitFileSchema.safeParse(JSON.parse(fs.readFileSync(file, 'utf8')));
  if (!parsed.success)
    throw new TokenRouterError('invalid_request', `${file}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`, 'split');
  if (parsed.data.split !== split || parsed.data.rows.length !== parsed.data.n)
    throw new TokenRouterError(
      'invalid_request',
      `${file}: says split "${parsed.data.split}" with n ${parsed.data.n} but holds ${parsed.data.rows.length} rows`,
      'split',
    );
  return { ...parsed.data, file };
}
