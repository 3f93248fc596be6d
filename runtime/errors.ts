// The runtime's few typed errors; the server translates them to HTTP/WebSocket responses in one place.
import type { WireError } from '../shared/protocol/engineProtocol.ts';

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

/** An error as it crosses a port (the engine protocol's `WireError`): our own code kept, anything else internal. */
export function toWireError(error: Error): WireError {
  return error instanceof TokenRouterError
    ? { code: error.code, message: error.message, param: error.param }
    : { code: 'internal', message: error.message, param: null };
}

/** The error as the entry rebuilds it from the wire: a code it does not know becomes internal. */
export function fromWireError(e: WireError): TokenRouterError {
  return new TokenRouterError((ERROR_CODES as readonly string[]).includes(e.code) ? (e.code as ErrorCode) : 'internal', e.message, e.param);
}
