// Compiled draft IRs (model "draft") by content hash: a bounded LRU, with size checked before anything is compiled.
import crypto from 'node:crypto';
import { LIMITS } from '../../shared/ir/nodeTypes.ts';
import { TokenRouterError } from '../errors.ts';

/** Far above the largest legal graph (a 200-node chain is ~26 kB), far below the 1 MiB body limit. */
export const MAX_DRAFT_IR_BYTES = 256 * 1024;

/**
 * Compiling a 200-node IR takes 4-30 ms of event loop (cold to warm JIT) that every client shares;
 * the designer's playground sends the same draft again and again, so each distinct draft is
 * compiled once. Failures are kept too: a flood of one broken draft costs one compile.
 */
export class DraftCache<T> {
  private readonly entries = new Map<string, { ok: true; value: T } | { ok: false; error: unknown }>();
  compiles = 0;
  hits = 0;

  constructor(private readonly capacity = 64) {}

  get size(): number {
    return this.entries.size;
  }

  /** The compiled draft, compiling it (once per content) when it is not cached. */
  /** `compile` also gets the IR's content hash: the same draft has the same key everywhere. */
  get(ir: unknown, compile: (ir: unknown, hash: string) => T): T {
    const text = JSON.stringify(ir) ?? 'null';
    const bytes = Buffer.byteLength(text);
    if (bytes > MAX_DRAFT_IR_BYTES)
      throw new TokenRouterError('invalid_request', `tokenrouter_ir is ${bytes} bytes; a draft IR may be at most ${MAX_DRAFT_IR_BYTES}`, 'tokenrouter_ir');
    const nodes = (ir as { nodes?: unknown } | null)?.nodes;
    if (Array.isArray(nodes) && nodes.length > LIMITS.maxNodes) {
      throw new TokenRouterError('invalid_request', `tokenrouter_ir has ${nodes.length} nodes; an IR may have at most ${LIMITS.maxNodes}`, 'tokenrouter_ir');
    }
    const key = crypto.createHash('sha256').update(text).digest('hex');
    let entry = this.entries.get(key);
    if (entry) {
      this.hits++;
      // Re-inserted: Map order is insertion order, so the first key is the least recently used.
      this.entries.delete(key);
    } else {
      this.compiles++;
      try {
        entry = { ok: true, value: compile(ir, key.slice(0, 32)) };
      } catch (error) {
        entry = { ok: false, error };
      }
      if (this.entries.size >= this.capacity) this.entries.delete(this.entries.keys().next().value!);
    }
    this.entries.set(key, entry);
    if (!entry.ok) throw entry.error;
    return entry.value;
  }
}
