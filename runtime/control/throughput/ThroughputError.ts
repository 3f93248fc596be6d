// The one error type of the throughput model: callers branch on `code`, never on message text.

export type ThroughputErrorCode = 'INFEASIBLE_THRESHOLDS' | 'INVALID_INPUT' | 'STATE_SPACE_TOO_LARGE' | 'NO_FEASIBLE_THRESHOLDS' | 'NO_DATA';

export class ThroughputError extends Error {
  readonly code: ThroughputErrorCode;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: ThroughputErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = 'ThroughputError';
    this.code = code;
    this.details = details;
  }
}
