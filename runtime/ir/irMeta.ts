// Per-request metadata of an IR algorithm: memory values and the bookkeeping route() and send() share.

export interface IrMeta {
  /** Memory node values, in the compiled memory order. Always finite. */
  mem: number[];
  /** Whether the last handoff decision keeps the sampled token (read by send()). */
  keep: boolean;
  /** Model of the last route() call, and how many calls in a row ran there (this visit's tokens). */
  at: number;
  run: number;
}

export function isIrMeta(v: unknown, memoryCount: number): v is IrMeta {
  if (typeof v !== 'object' || v === null) return false;
  const m = v as Partial<IrMeta>;
  return Array.isArray(m.mem) && m.mem.length === memoryCount && typeof m.keep === 'boolean' && typeof m.at === 'number' && typeof m.run === 'number';
}
