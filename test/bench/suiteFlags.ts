// Typed reads of a suite's --key value flags (main.ts passes every flag as a string).
import { TokenRouterError } from '../../runtime/errors.ts';

/** One line naming the flag; main.ts prints it without a stack. */
const flagError = (key: string, message: string) => new TokenRouterError('invalid_request', message, key);

export class SuiteFlags {
  constructor(private readonly flags: Record<string, string>) {}

  /** `--quick 1`: a short smoke version of the suite (main.ts wants a value after every flag). */
  get quick(): boolean {
    return this.bool('quick', false);
  }

  num(key: string, fallback: number): number {
    const v = this.flags[key];
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isFinite(n)) throw flagError(key, `--${key} must be a number, got "${v}"`);
    return n;
  }

  /** A number with a separate default for --quick runs. */
  sized(key: string, full: number, quick: number): number {
    return this.num(key, this.quick ? quick : full);
  }

  bool(key: string, fallback: boolean): boolean {
    const v = this.flags[key];
    if (v === undefined) return fallback;
    if (['1', 'true', 'yes', 'on'].includes(v)) return true;
    if (['0', 'false', 'no', 'off'].includes(v)) return false;
    throw flagError(key, `--${key} must be true or false, got "${v}"`);
  }

  str(key: string, fallback: string): string;
  str(key: string): string | undefined;
  str(key: string, fallback?: string): string | undefined {
    return this.flags[key] ?? fallback;
  }

  list(key: string, fallback: readonly string[]): string[] {
    const v = this.flags[key];
    return v === undefined
      ? [...fallback]
      : v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
  }

  nums(key: string, fallback: readonly number[]): number[] {
    return this.list(key, fallback.map(String)).map((s) => {
      const n = Number(s);
      if (!Number.isFinite(n)) throw flagError(key, `--${key} must be numbers separated by commas, got "${s}"`);
      return n;
    });
  }
}
