// Parameters of the OpenAI API this server refuses by name, with the reason, or accepts only where they mean what it does anyway.
import { z } from 'zod';

/** Accepted only where it means what this server does anyway (e.g. best_of 1); absent or null passes, anything else is refused with `why`. */
export const onlyIf = (ok: (v: unknown) => boolean, why: string) =>
  z
    .unknown()
    .refine((v) => v === undefined || v === null || ok(v), { message: why })
    .optional();

/** A parameter this server does not implement. */
export const refused = (why: string) => onlyIf(() => false, why);

export const DEPRECATED_FUNCTIONS = 'deprecated by OpenAI and not supported: use tools and tool_choice';
