// The one place typed errors become HTTP responses in OpenAI's error shape.
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { NextFunction, Request, Response } from 'express';
import type { OpenAIErrorBody } from '../../shared/api/openai.ts';
import { IrCompileError } from '../algorithms/compileIr.ts';
import { TokenRouterError, type ErrorCode } from '../errors.ts';

const STATUS: Record<ErrorCode, number> = {
  invalid_request: 400,
  forbidden_host: 403,
  infeasible_thresholds: 400,
  not_found: 404,
  conflict: 409,
  too_large: 413,
  overloaded: 429,
  unavailable: 503,
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

/** Maps anything thrown to a status and an OpenAI-shaped body; unknown errors become a plain 500. */
export function toHttpError(e: unknown): HttpError {
  if (e instanceof TokenRouterError) {
    const status = STATUS[e.code];
    return {
      status,
      // OpenAI answers an unknown model with code model_not_found; its clients look for that code.
      body: { error: { message: e.message, type: typeFor(status), param: e.param, code: e.code === 'not_found' && e.param === 'model' ? 'model_not_found' : e.code } },
      headers: status === 429 ? { 'Retry-After': '1' } : {},
    };
  }
  if (e instanceof IrCompileError) {
    return { status: 400, body: { error: { message: e.message, type: 'invalid_request_error', param: 'ir', code: 'invalid_ir', details: e.details } }, headers: {} };
  }
  // body-parser errors carry a status and a type string.
  const be = e as { status?: number; type?: string; message?: string };
  if (typeof be?.status === 'number' && be.status >= 400 && be.status < 500) {
    const msg =
      be.type === 'entity.too.large'
        ? 'request body is too large'
        : be.type === 'entity.parse.failed'
          ? `request body is not valid JSON: ${be.message}`
          : be.type === 'charset.unsupported' || be.type === 'encoding.unsupported'
            ? `unsupported body encoding: ${be.message}`
            : (be.message ?? 'bad request');
    return { status: be.status, body: { error: { message: msg, type: typeFor(be.status), param: null, code: be.type ?? null } }, headers: {} };
  }
  return { status: 500, body: { error: { message: 'internal error', type: 'server_error', param: null, code: 'internal' } }, headers: {} };
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
  const headers = Object.entries({ ...h.headers, 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': String(Buffer.byteLength(body)), Connection: 'close' })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.end(`HTTP/1.1 ${h.status} ${STATUS_CODES[h.status] ?? ''}\r\n${headers}\r\n${body}`);
}
