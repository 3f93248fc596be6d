// Command-line flags for every entry point: node:util parseArgs, with one-line errors that name the flag.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { TokenRouterError } from '../errors.ts';

type Options = NonNullable<ParseArgsConfig['options']>;
type FlagConfig = { args: string[]; options: Options; allowPositionals?: boolean };

/**
 * parseArgs in strict mode. `--requests -3` is read as the value -3 (parseArgs alone calls it
 * ambiguous), so the range check can say what is wrong with it; parseArgs' own errors become one
 * line naming the flag.
 */
export function parseFlags<T extends FlagConfig>(config: T): ReturnType<typeof parseArgs<T & { strict: true }>> {
  const args: string[] = [];
  for (let i = 0; i < config.args.length; i++) {
    const a = config.args[i];
    const next = config.args[i + 1];
    const name = a.startsWith('--') && !a.includes('=') ? a.slice(2) : undefined;
    if (name !== undefined && config.options[name]?.type === 'string' && next !== undefined && /^-\d/.test(next)) {
      args.push(`${a}=${next}`);
      i++;
    } else args.push(a);
  }
  try {
    return parseArgs({ ...config, args, strict: true });
  } catch (e) {
    throw flagError(e, config.options);
  }
}

/** parseArgs' multi-line messages as one line each, naming the flag and what it takes. */
function flagError(e: unknown, options: Options): unknown {
  const code = (e as { code?: string }).code;
  const message = (e as Error).message ?? String(e);
  const quoted = /'(-[^' ]+)/.exec(message)?.[1];
  const known = Object.keys(options)
    .map((k) => `--${k}`)
    .join(', ');
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION')
    return new TokenRouterError('invalid_request', `unknown flag ${quoted ?? ''}; known flags: ${known || 'none'}`.trim(), 'flags');
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
    const arg = /'([^']*)'/.exec(message)?.[1] ?? '';
    return new TokenRouterError('invalid_request', `unexpected argument "${arg}"; flags take the form --name value`, 'flags');
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    const flag = quoted ?? 'a flag';
    const key = flag.replace(/^-+/, '');
    const takes = options[key]?.type === 'boolean' ? 'takes no value' : 'needs a value';
    return new TokenRouterError('invalid_request', `${flag} ${takes}`, key);
  }
  return e;
}

/** An integer flag in [min, max], or `fallback` when absent. */
export function intFlag(name: string, v: string | undefined, min: number, max: number): number | undefined;
export function intFlag(name: string, v: string | undefined, min: number, max: number, fallback: number): number;
export function intFlag(name: string, v: string | undefined, min: number, max: number, fallback?: number): number | undefined {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (v.trim() === '' || !Number.isInteger(n) || n < min || n > max)
    throw new TokenRouterError('invalid_request', `--${name} must be an integer from ${min} to ${max}, got "${v}"`, name);
  return n;
}

/** A number flag in [min, max], or `fallback` when absent. */
export function numFlag(name: string, v: string | undefined, min: number, max: number): number | undefined;
export function numFlag(name: string, v: string | undefined, min: number, max: number, fallback: number): number;
export function numFlag(name: string, v: string | undefined, min: number, max: number, fallback?: number): number | undefined {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < min || n > max)
    throw new TokenRouterError('invalid_request', `--${name} must be a number from ${min} to ${max}, got "${v}"`, name);
  return n;
}

/** `true`/`false` (also 1/0, yes/no, on/off), or `fallback` when absent. */
export function boolFlag(name: string, v: string | undefined, fallback: boolean): boolean {
  if (v === undefined) return fallback;
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  throw new TokenRouterError('invalid_request', `--${name} must be true or false, got "${v}"`, name);
}

/** A finite number > 0 (numFlag's closed ranges cannot say "above 0"). */
export function positiveFlag(name: string, v: string | undefined, fallback: number, what = 'a number > 0'): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n <= 0) throw new TokenRouterError('invalid_request', `--${name} must be ${what}, got "${v}"`, name);
  return n;
}

/** `--request-rate`: `inf` (all at once) or a number of requests per second > 0. */
export function requestRateFlag(v: string | undefined): number {
  return v === 'inf' ? Infinity : positiveFlag('request-rate', v, Infinity, 'a number of requests per second > 0, or inf');
}
