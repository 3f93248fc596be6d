// The one place typed errors become HTTP responses in OpenAI's error shape.
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { NextFunction, Request, Response } from 'express';
import type { OpenAIErrorBody } from '../../shared/api/openaiAnswer.ts';
import { IrCompileError } from '../ir/compileIr.ts';
import { RemoteRunnerError } from '../transport/nats/natsConnection.ts';
import { EngineThreadError } from '../transport/threadEngine.ts';
import { TokenRouterError, type ErrorCode } from '../errors.ts';
import { StepError } from '../runner/onnxRunner.ts';
import { WorkerRunnerError } from '../runner/workerRunner.ts';
import { ThroughputError, type ThroughputErrorCode } from '../control/throughput/ThroughputError.ts';

const STATUS: Record<ErrorCode, number> = {
  invalid_request: 400,
  invalid_ir: 400,
  forbidden_host: 403,
  invalid_api_key: 401,
  infeasible_thresholds: 400,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  too_large: 413,
  overloaded: 429,
  rate_limit_exceeded: 429,
  unavailable: 503,
  /** A model that cannot take requests for now (down, or cut off from its sub-servers): worth a retry, so it says when. */
  model_unavailable: 503,
  runner_error: 503,
  cancelled: 499,
  algorithm_error: 500,
  internal: 500,
};

export interface HttpError {
  status: number;
  body: OpenAIErrorBody;
  headers: Record<string, string>;
}

function typeFor(status: number): string {
  if (status === 429) return 'rate_limit_error';
  if (status === 401 || status === 403) return 'authentication_error';
  return status >= 500 ? 'server_error' : 'invalid_request_error';
}

const THROUGHPUT: Record<ThroughputErrorCode, ErrorCode> = {
  INFEASIBLE_THRESHOLDS: 'infeasible_thresholds',
  NO_FEASIBLE_THRESHOLDS: 'infeasible_thresholds',
  INVALID_INPUT: 'invalid_request',
  NO_DATA: 'invalid_request',
  STATE_SPACE_TOO_LARGE: 'invalid_request',
};

/**
 * Every typed error of the runtime, as the one error type the server answers with. The modules keep
 * their own classes (callers branch on them); only here do they meet HTTP. Bugs and server-side
 * problems (a broken model folder, a lifecycle or invariant violation) are internal: the client gets
 * a plain 500 and the log gets the error.
 */
function asTokenRouterError(e: unknown): TokenRouterError {
  if (e instanceof TokenRouterError) return e;
  if (e instanceof IrCompileError) return new TokenRouterError('invalid_ir', e.message, 'ir', e.details);
  if (e instanceof ThroughputError)
    return new TokenRouterError(THROUGHPUT[e.code], e.message, 'thresholds', Object.keys(e.details).length > 0 ? e.details : undefined);
  if (e instanceof StepError || e instanceof WorkerRunnerError || e instanceof EngineThreadError || e instanceof RemoteRunnerError)
    return new TokenRouterError('runner_error', e.message, 'model');
  // ModelFolderError, LifecycleError, InvariantError and anything untyped: the server's own fault
  return new TokenRouterError('internal', 'internal error');
}

/** Maps anything thrown to a status and an OpenAI-shaped body; unknown errors become a plain 500. */
export function toHttpError(e: unknown): HttpError {
  const be = e as { status?: number; type?: string; message?: string; limit?: number };
  if (typeof be?.status === 'number' && be.status >= 400 && be.status < 500) return bodyParserError(be);
  const t = asTokenRouterError(e);
  const status = STATUS[t.code];
  return {
    status,
    // OpenAI answers an unknown model with code model_not_found; its clients look for that code.
    body: {
      error: {
        message: t.message,
        type: typeFor(status),
        param: t.param,
        code: t.code === 'not_found' && t.param === 'model' ? 'model_not_found' : t.code,
        ...(t.details === undefined ? {} : { details: t.details }),
      },
    },
    // 503 too: a draining or recovering server says when to come back, as RFC 9110 lets it.
    headers: status === 429 || status === 503 ? { 'Retry-After': String(retryAfterOf(t.details)) } : status === 401 ? { 'WWW-Authenticate': 'Bearer' } : {},
  };
}

/** Seconds a 429 or 503 asks the client to wait: the estimate the error carries when it has one, else 1. */
function retryAfterOf(details: unknown): number {
  const s = (details as { retry_after_s?: unknown } | undefined)?.retry_after_s;
  return typeof s === 'number' && Number.isInteger(s) && s >= 1 ? s : 1;
}

/** express.json's errors (body-parser, raw-body) carry a status and a type string; the message says what to fix. */
function bodyParserError(be: { status?: number; type?: string; message?: string; limit?: number }): HttpError {
  const status = be.status!;
  const msg =
    be.type === 'entity.too.large'
      ? `request body is too large (limit ${be.limit} bytes, the server's limits.maxBodyBytes)`
      : be.type === 'entity.parse.failed'
        ? `request body is not valid JSON: ${be.message}`
        : be.type === 'charset.unsupported' || be.type === 'encoding.unsupported'
          ? `unsupported body encoding: ${be.message}`
          : (be.message ?? 'bad request');
  return { status, body: { error: { message: msg, type: typeFor(status), param: null, code: be.type ?? null } }, headers: {} };
}

export function sendError(res: Response, e: unknown): void {
  const h = toHttpError(e);
  if (h.status === 500) console.error('[tokenrouter] internal error:', e);
  if (res.headersSent) {
    res.end();
    return;
  }
  res.status(h.status).set(h.headers).json(h.body);
}

/** Express error middleware (JSON parse errors, body limits, anything a route threw). */
export function errorMiddleware(err: unknown, _req: Request, res: Response, _next: NextFunction): void {
  sendError(res, err);
}

/** Answers a refused WebSocket upgrade on the raw socket, with the same status and body as HTTP. */
export function refuseUpgrade(socket: Duplex, e: unknown): void {
  const h = toHttpError(e);
  const body = JSON.stringify(h.body);
  const headers = Object.entries({
    ...h.headers,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    Connection: 'close',
  })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.end(`HTTP/1.1 ${h.status} ${STATUS_CODES[h.status] ?? ''}\r\n${headers}\r\n${body}`);
}
