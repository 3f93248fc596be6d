// The prediction check's like-with-like rule: whether a window of live traffic ran the way the prediction it is held against assumes, and if not, why.

/** What the window measured, beside what the prediction was made for. */
export interface WindowShape {
  /** Requests of the algorithm that ended in the window. */
  requests: number;
  /** Busy time (some request of it in flight), ms, and the share of it spent at each count in flight. */
  busyMs: number;
  timeAtActive: ReadonlyMap<number, number>;
  /** The concurrency the prediction was made at (the window's mean in flight, rounded). */
  concurrency: number;
  /** Committed tokens per request that ended, in the window and in the evaluation predicted from. */
  tokensPerRequest: number;
  evaluatedTokensPerRequest: number;
  /** Batch rows of the window that belonged to the algorithm, and to other traffic on the same models. */
  ownRows: number;
  otherRows: number;
}

export interface Comparability {
  comparable: boolean;
  /** One sentence per difference, naming it with both figures: said in place of a percentage. */
  reasons: string[];
}

/** Fewer requests than this and the measured tok/s is a handful of requests' luck. */
export const MIN_REQUESTS = 8;
/** At least this share of the busy time within CONCURRENCY_SLACK of the concurrency predicted at: a prediction at c is for c in flight. */
export const STEADY_SHARE = 0.6;
/** Counts in flight this close (±max(1, 25 %)) to the concurrency predicted at count as it. */
const CONCURRENCY_SLACK = 0.25;
/** Tokens per request this far apart (relative) make a different request shape: prefill and ramp weigh differently per token. */
export const SHAPE_TOLERANCE = 0.25;
/** Other traffic's share of the batch rows beyond which the models were not the algorithm's alone, as the prediction assumes. */
export const OTHER_SHARE = 0.1;

const pct = (x: number) => `${Math.round(x * 100)} %`;

/**
 * The prediction models one algorithm alone on the server with a steady `concurrency` requests in
 * flight, each shaped as its evaluation's (committed tokens per request: a max_tokens apart shows there). A window that differs in
 * any of these measures something else; a percentage between the two would say the model is off
 * when the traffic is.
 */
export function likeWithLike(w: WindowShape): Comparability {
  const reasons: string[] = [];
  if (w.requests < MIN_REQUESTS) reasons.push(`only ${w.requests} requests ended in the window (at least ${MIN_REQUESTS} needed)`);
  if (w.busyMs > 0) {
    const slack = Math.max(1, CONCURRENCY_SLACK * w.concurrency);
    let near = 0;
    for (const [n, ms] of w.timeAtActive) if (n > 0 && Math.abs(n - w.concurrency) <= slack) near += ms;
    const share = near / w.busyMs;
    if (share < STEADY_SHARE)
      reasons.push(
        `concurrency was not steady: ${w.concurrency} ± ${Math.floor(slack)} in flight for ${pct(share)} of the busy time (predicted for a steady ${w.concurrency})`,
      );
  }
  const e = w.evaluatedTokensPerRequest;
  if (e > 0 && w.tokensPerRequest > 0 && Math.abs(w.tokensPerRequest - e) / e > SHAPE_TOLERANCE) {
    reasons.push(`requests were shaped differently: ${w.tokensPerRequest.toFixed(0)} tokens per request live, ${e.toFixed(0)} in the evaluation`);
  }
  const rows = w.ownRows + w.otherRows;
  if (rows > 0 && w.otherRows / rows > OTHER_SHARE)
    reasons.push(`other traffic shared the models: ${pct(w.otherRows / rows)} of the batch rows were not this algorithm's`);
  return { comparable: reasons.length === 0, reasons };
}

/** The most common value (the smallest of a tie); null for none. */
export function modeOf(xs: readonly number[]): number | null {
  const n = new Map<number, number>();
  for (const x of xs) n.set(x, (n.get(x) ?? 0) + 1);
  let best: number | null = null;
  for (const [x, k] of n) if (best === null || k > n.get(best)! || (k === n.get(best)! && x < best)) best = x;
  return best;
}
