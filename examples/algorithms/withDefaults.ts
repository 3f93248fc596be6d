// Parameter merging for algorithm factories: defaults filled in, unknown keys and wrong types rejected.

/** Returns `defaults` overridden by the keys of `params`, which must exist in defaults with the same type. */
export function withDefaults<T extends object>(name: string, defaults: T, params: Readonly<Partial<T>> | undefined): T {
  const out = { ...defaults };
  for (const [key, value] of Object.entries(params ?? {})) {
    if (value === undefined) continue;
    // Own keys only: `in` also finds inherited names (constructor, toString, __proto__), which are no parameters.
    if (!Object.hasOwn(defaults, key)) throw new TypeError(`${name}: unknown parameter "${key}"`);
    const expected = typeof (defaults as Record<string, unknown>)[key];
    // A default of `undefined` marks an optional parameter: any defined value is accepted.
    if (expected !== 'undefined' && typeof value !== expected) throw new TypeError(`${name}: parameter "${key}" must be a ${expected}`);
    if (typeof value === 'number' && !Number.isFinite(value)) throw new RangeError(`${name}: parameter "${key}" must be finite`);
    (out as Record<string, unknown>)[key] = value;
  }
  return out;
}
