// Simulated runners an engine thread can load by module reference (RunnerSource kind "module").
import { SimRunner } from '../../runtime/runner/simRunner.ts';

/** Model i of a case: its own vocabulary, real-time latency in fractions of a millisecond. */
export function caseRunner(name: string, i: number, eos: number): SimRunner {
  return new SimRunner({ name, vocabSize: 50 + i, eosTokenIds: eos >= 0 ? [eos] : [], latency: (b, t) => (i + 1) * (0.2 + b * 0.02 + t * 0.002) });
}
