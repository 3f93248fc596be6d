// The prompts the serving benchmarks send: questions of the bundled multiplication task.
import { sampleQuestion } from '../serve/loadGenerator.ts';

const WARMUP_OFFSET = 100_000;

/** The user message of request i; warm-up requests (negative i) get questions the measured ones never ask. */
export function benchPrompt(i: number): string {
  return sampleQuestion(i >= 0 ? i : WARMUP_OFFSET - i);
}
