// Reads every request body as JSON with express.json, then bounds what it parsed: UTF-8 only, a nesting depth, no `__proto__` key.
import { isUtf8 } from 'node:buffer';
import type http from 'node:http';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { TokenRouterError } from '../errors.ts';

/**
 * Far above any body this server takes (an IR document nests ~6 levels, a chat request ~4), far
 * below where recursive code meets the stack: V8's JSON.parse is iterative, but JSON.stringify,
 * zod and the IR compiler recurse, and 20,000 nested arrays in `tokenrouter_ir` overflowed
 * JSON.stringify in the draft cache (a 500 anyone reaching /v1 could cause).
 */
export const MAX_JSON_DEPTH = 64;

/**
 * JSON.parse makes `"__proto__"` an own key, but copying it into a fresh object by assignment (as
 * zod's records do) sets the copy's prototype instead, so the key vanished without a word
 * (`params: {"__proto__": …}` was stored as `{}`). No body here has a use for the name.
 */
const FORBIDDEN_KEY = '__proto__';

/**
 * express.json for every body whatever its Content-Type (clients such as `curl -d` send a form
 * type), strict (an object or an array), within `limitBytes`; its errors carry a status and a
 * `type` that httpErrors.ts answers. Then the bounds check, before any route sees the body.
 */
export function jsonBody(limitBytes: number): RequestHandler[] {
  return [express.json({ limit: limitBytes, strict: true, type: () => true, verify: rejectInvalidUtf8 }), boundJsonBody];
}

/**
 * JSON must be UTF-8 (RFC 8259); the decoder would otherwise turn invalid bytes into U+FFFD silently
 * and the model would answer a prompt the client never sent. body-parser turns the throw into a 400.
 */
function rejectInvalidUtf8(_req: http.IncomingMessage, _res: http.ServerResponse, buf: Buffer, encoding: string): void {
  if (/^utf-?8$/i.test(encoding) && !isUtf8(buf)) throw Object.assign(new Error('request body is not valid UTF-8'), { status: 400, type: 'encoding.invalid' });
}

function boundJsonBody(req: Request, _res: Response, next: NextFunction): void {
  next(jsonBodyViolation(req.body) ?? undefined);
}

interface Frame {
  value: object;
  depth: number;
  parent: Frame | null;
  key: string | number;
}

function pathOf(f: Frame): (string | number)[] {
  const out: (string | number)[] = [];
  for (let at: Frame | null = f; at?.parent; at = at.parent) out.unshift(at.key);
  return out;
}

/** Where a body breaks a bound, and how; null when it keeps them. Iterative, so its own depth costs no stack. */
function jsonBodyViolation(body: unknown, maxDepth = MAX_JSON_DEPTH): TokenRouterError | null {
  if (typeof body !== 'object' || body === null) return null;
  const stack: Frame[] = [{ value: body, depth: 1, parent: null, key: '' }];
  while (stack.length > 0) {
    const f = stack.pop()!;
    if (f.depth > maxDepth) {
      // The top-level field names the culprit, as a schema error would; the full path would be as deep as the body.
      const top = pathOf(f)[0];
      const param = top === undefined || Array.isArray(body) ? null : String(top);
      return new TokenRouterError('invalid_request', `request body nests deeper than ${maxDepth} levels${param === null ? '' : ` (in ${param})`}`, param);
    }
    const visit = (key: string | number, child: unknown) => {
      if (typeof child === 'object' && child !== null) stack.push({ value: child, depth: f.depth + 1, parent: f, key });
    };
    if (Array.isArray(f.value)) {
      f.value.forEach((child, i) => visit(i, child));
      continue;
    }
    for (const key of Object.keys(f.value)) {
      if (key === FORBIDDEN_KEY) {
        const param = [...pathOf(f), key].join('.');
        return new TokenRouterError('invalid_request', `unsupported parameter: ${param} (a key named __proto__ is refused anywhere in a body)`, param);
      }
      visit(key, (f.value as Record<string, unknown>)[key]);
    }
  }
  return null;
}
