// Workloads for the prefix-cache property tests: requests whose prompts share preambles and resend earlier prompts.
import { pick } from './randomCase.ts';
import type { WorkloadRequest } from './runWorkload.ts';

/** Prompts that share: a few preambles, each request one of them plus its own turn, and some resending an earlier request's prompt plus more (a chat's next turn). */
export function sharingRequests(seed: number, base: readonly WorkloadRequest[]): WorkloadRequest[] {
  const preambles = Array.from({ length: pick(seed, 400, 1, 3) }, (_, p) =>
    Array.from({ length: pick(seed, 410 + p, 4, 20) }, (_, j) => pick(seed, 420 + 50 * p + j, 4, 40)),
  );
  const out: WorkloadRequest[] = [];
  for (const [r, req] of base.entries()) {
    const earlier = r > 0 && pick(seed, 500 + r, 0, 2) === 0 ? out[pick(seed, 600 + r, 0, r - 1)] : null;
    const head = earlier ? earlier.prompt : preambles[pick(seed, 700 + r, 0, preambles.length - 1)];
    out.push({ ...req, prompt: [...head, ...req.prompt.slice(0, pick(seed, 800 + r, 1, 6))] });
  }
  return out;
}
