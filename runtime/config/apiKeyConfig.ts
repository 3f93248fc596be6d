// Inference API keys in the config (`apiKeys`), from `--api-key` and from TOKENROUTER_API_KEY: one schema for all three.
import crypto from 'node:crypto';
import { z } from 'zod';
import { TokenRouterError } from '../errors.ts';

export const apiKeySchema = z
  .object({
    /** The label in /metrics and in refusals; the key itself is never shown anywhere. */
    name: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, '1 to 64 letters, digits, dot, dash or underscore'),
    /** The key as clients send it (Authorization: Bearer KEY). */
    key: z
      .string()
      .regex(/^\S{1,512}$/, 'a key is 1 to 512 characters without spaces')
      .optional(),
    /** Or only its SHA-256 (64 hex digits, `printf %s KEY | sha256sum`), so the config file holds no secret. */
    sha256: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, "sha256 is the key's SHA-256 as 64 hex digits")
      .optional(),
    /** Requests this key may make in any 60 s; beyond it, 429 with Retry-After. */
    requestsPerMinute: z.number().int().min(1).optional(),
    /** Prompt plus completion tokens this key may use in any 60 s; beyond it, 429 with Retry-After. */
    tokensPerMinute: z.number().int().min(1).optional(),
  })
  .strict()
  .refine((k) => (k.key === undefined) !== (k.sha256 === undefined), { message: 'give exactly one of "key" and "sha256"' });

export type ApiKeyConfig = z.infer<typeof apiKeySchema>;

/** A key's SHA-256, which is what is kept and compared: equal-length buffers for timingSafeEqual whatever the key's length. */
export function keyHash(k: Pick<ApiKeyConfig, 'key' | 'sha256'>): Buffer {
  return k.sha256 !== undefined ? Buffer.from(k.sha256, 'hex') : sha256(k.key!);
}

export const sha256 = (text: string): Buffer => crypto.createHash('sha256').update(text, 'utf8').digest();

export const apiKeysSchema = z.array(apiKeySchema).superRefine((keys, ctx) => {
  const names = new Set<string>();
  const hashes = new Set<string>();
  keys.forEach((k, i) => {
    if (names.has(k.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `"${k.name}" is listed twice` });
    names.add(k.name);
    if (k.key === undefined && k.sha256 === undefined) return;
    const h = keyHash(k).toString('hex');
    if (hashes.has(h)) ctx.addIssue({ code: 'custom', path: [i], message: 'the same key is listed twice' });
    hashes.add(h);
  });
});

/**
 * The config's keys plus those given on the command line and in the environment, checked by the same
 * schema. Those have no name to give, so they are named after where they came from (`flag-1`, `env-1`).
 */
export function withCommandLineKeys(
  configured: readonly ApiKeyConfig[],
  flagKeys: readonly string[] = [],
  envValue: string | undefined = undefined,
): ApiKeyConfig[] {
  const extra = [
    ...flagKeys.map((key, i) => ({ name: `flag-${i + 1}`, key, from: '--api-key' })),
    ...(envValue ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s.length > 0)
      .map((key, i) => ({ name: `env-${i + 1}`, key, from: 'TOKENROUTER_API_KEY' })),
  ];
  const all = [...configured, ...extra.map(({ name, key }) => ({ name, key }))];
  const r = apiKeysSchema.safeParse(all);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const i = typeof issue.path[0] === 'number' ? issue.path[0] : -1;
  const where = i >= configured.length ? extra[i - configured.length].from : `apiKeys.${issue.path.join('.')}`;
  throw new TokenRouterError('invalid_request', `${where}: ${issue.message}`, where);
}
