// The runtime's few typed errors; the server translates them to HTTP/WebSocket responses in one place.

export const ERROR_CODES = [
  'invalid_request',
  'invalid_ir',
  'forbidden_host',
  'invalid_api_key',
  'rate_limit_exceeded',
  'not_found',
  'method_not_allowed',
  'conflict',
  'too_large',
  'overloaded',
  'unavailable',
  'model_unavailable',
  'infeasible_thresholds',
  'cancelled',
  'algorithm_error',
  'runner_error',
  'internal',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export class TokenRouterError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** The input field at fault, when there is one. */
    readonly param: string | null = null,
    /** Structured detail a client can act on (e.g. one issue per IR node). */
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'TokenRouterError';
  }
}
