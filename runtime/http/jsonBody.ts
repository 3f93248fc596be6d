// Reads every request body as JSON with express.json, then bounds what it parsed: UTF-8 only, a nesting depth, no `__proto__` key.
import { isUtf8 } from 'node:buffer';
import express, { type RequestHandler } from 'express';
import { TokenRouterError } from '../errors.ts';

/**
 * Far above any body this server takes (an IR document nests ~6 levels, a chat request ~4), far
 * below where recursive code meets the stack: V8's JSON.parse is iterative, but JSON.stringify,
 * zod and the IR compiler recurse, and 20,000 nested arrays in `tokenrouter_ir` overflowed
 * JSON.stringify in the draft cache (a 500 anyone reaching /v1 could cause).
 */
export const MAX_JSON_DEPTH = 64;

/**
 * express.json for every body whatever its Content-Type (clients such as `curl -d` send a form
 * type), strict (an object or an array), within `limitBytes`; its errors carry a status and a
 * `type` that httpErrors.ts answers. Then the bounds check, before any route sees the body.
 */
export function jsonBody(limitBytes: number): RequestHandler[] {
  return [
    express.json({
      limit: limitBytes,
      strict: true,
      type: () => true,
      // JSON must be UTF-8 (RFC 8259): decoded, invalid bytes would become U+FFFD and the model would answer a prompt the client never sent
      verify: (_req, _res, buf, encoding) => {
        if (/^utf-?8$/i.test(encoding) && !isUtf8(buf))
          throw Object.assign(new Error('request body is not valid UTF-8'), { status: 400, type: 'encoding.invalid' });
      },
    }),
    (req, _res, next) => next(boundsViolation(req.body) ?? undefined),
  ];
}

/**
 * Where a body breaks a bound, and how; null when it keeps them. Iterative, so its own depth costs
 * no stack. JSON.parse makes `"__proto__"` an own key, but copying it into a fresh object by
 * assignment (as zod's records do) sets the copy's prototype instead, so the key vanished without a
 * word (`params: {"__proto__": …}` was stored as `{}`); no body here has a use for the name.
 */
function boundsViolation(body: unknown): TokenRouterError | null {
  const stack: [object, (string | number)[]][] = typeof body === 'object' && body !== null ? [[body, []]] : [];
  while (stack.length > 0) {
    const [value, path] = stack.pop()!;
    if (path.length >= MAX_JSON_DEPTH) {
      // The top-level field names the culprit, as a schema error would; the full path would be as deep as the body.
      const param = Array.isArray(body) ? null : String(path[0]);
      return new TokenRouterError('invalid_request', `request body nests deeper than ${MAX_JSON_DEPTH} levels${param === null ? '' : ` (in ${param})`}`, param);
    }
    const push = (child: unknown, key: string | number) => {
      if (typeof child === 'object' && child !== null) stack.push([child, [...path, key]]);
    };
    if (Array.isArray(value)) {
      value.forEach(push);
      continue;
    }
    for (const key of Object.keys(value)) {
      if (key === '__proto__') {
        const param = [...path, key].join('.');
        return new TokenRouterError('invalid_request', `unsupported parameter: ${param} (a key named __proto__ is refused anywhere in a body)`, param);
      }
      push((value as Record<string, unknown>)[key], key);
    }
  }
  return null;
}
