// Turns a zod failure on a request body into one clear invalid_request error naming the field.
import type { z } from 'zod';
import { TokenRouterError } from '../errors.ts';

export function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new TokenRouterError('invalid_request', 'request body must be a JSON object (Content-Type: application/json)', null);
  }
  const r = schema.safeParse(body);
  if (r.success) return r.data;
  const first = r.error.issues[0];
  if (first.code === 'unrecognized_keys') {
    // Strict schemas: a parameter this server does not know is refused by name, never silently dropped.
    const param = [...first.path, first.keys[0]].join('.');
    throw new TokenRouterError(
      'invalid_request',
      `unsupported parameter: ${param}${first.keys.length > 1 ? ` (also: ${first.keys.slice(1).join(', ')})` : ''}`,
      param,
    );
  }
  const param = first.path.join('.');
  throw new TokenRouterError('invalid_request', `${param || 'body'}: ${first.message}`, param || null);
}
