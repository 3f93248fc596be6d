// One engine's prefix cache: a radix tree over token ids whose leaves are runner caches kept after their request let go of them.

/** A cache the runner still holds, kept for the prompts that start with its tokens. */
export interface PrefixEntry {
  readonly cacheId: number;
  /** Tokens it holds, from position 0. */
  readonly length: number;
  node: RadixNode;
}

interface RadixNode {
  /** Token ids on the edge from the parent (the root's is empty). */
  edge: number[];
  parent: RadixNode | null;
  /** Children by the first token of their edge. */
  children: Map<number, RadixNode>;
  /** Set on leaves only: no entry's tokens are a prefix of another's (the shorter one is dropped). */
  entry: PrefixEntry | null;
}

const newNode = (edge: number[], parent: RadixNode | null): RadixNode => ({ edge, parent, children: new Map(), entry: null });

/**
 * Entries are whole caches (the runners copy a prefix into a new cache; none shares memory), so an
 * entry covered by a longer one holding the same tokens is redundant and goes: every leaf is one
 * entry, every inner node lies on the path of at least one. `drop` hands a cache back to the owner
 * (released in the runner; the pool counts what the entries hold). Entries are never in a running step, so
 * every one is evictable, least recently used first.
 */
export class PrefixCache {
  private readonly root = newNode([], null);
  /** By cacheId, least recently used first (a touch re-inserts). */
  private readonly lru = new Map<number, PrefixEntry>();
  private held = 0;

  constructor(private readonly drop: (cacheId: number, tokens: number) => void) {}

  get size(): number {
    return this.lru.size;
  }

  /** KV tokens the entries hold in all. */
  get heldTokens(): number {
    return this.held;
  }

  /** The entry holding the longest prefix of `tokens` and that prefix's length, cut to `limit`; null when none shares a first token. */
  match(tokens: readonly number[], limit: number): { entry: PrefixEntry; length: number } | null {
    const { node, depth } = this.walk(tokens);
    const length = Math.min(depth, limit);
    if (length <= 0) return null;
    const entry = leafBelow(node).entry!;
    this.touch(entry);
    return { entry, length };
  }

  /**
   * Keeps cache `cacheId`, holding `tokens`: the tree takes it over. A cache whose tokens an entry
   * already holds is dropped at once; entries whose tokens it extends are dropped for it.
   */
  insert(cacheId: number, tokens: readonly number[]): void {
    if (tokens.length === 0) return this.drop(cacheId, 0);
    const { node, depth, into } = this.walk(tokens);
    if (depth === tokens.length) {
      // every token is on a path already: an entry below holds them all
      this.touch(leafBelow(node).entry!);
      return this.drop(cacheId, tokens.length);
    }
    const rest = tokens.slice(depth);
    let leaf: RadixNode;
    if (into === 0 && node.entry) {
      // it extends an entry (the whole of it is on the path): that leaf grows into the new one
      this.unlink(node.entry);
      node.edge = node.edge.concat(rest);
      leaf = node;
    } else {
      const at = into > 0 ? split(node, into) : node;
      leaf = newNode(rest, at);
      at.children.set(rest[0], leaf);
    }
    const entry: PrefixEntry = { cacheId, length: tokens.length, node: leaf };
    leaf.entry = entry;
    this.lru.set(cacheId, entry);
    this.held += tokens.length;
  }

  /** Drops the least recently used entry; the tokens it freed (0: none left). */
  evictOne(): number {
    const first = this.lru.values().next();
    if (first.done) return 0;
    this.remove(first.value);
    return first.value.length;
  }

  /** Drops an entry the runner turned out not to hold (a fork it refused). */
  discard(entry: PrefixEntry): void {
    if (this.lru.get(entry.cacheId) === entry) this.remove(entry);
  }

  clear(): void {
    for (const e of [...this.lru.values()]) this.remove(e);
  }

  /** The runner died with every cache: forget the entries without handing them back. */
  forget(): void {
    this.lru.clear();
    this.root.children.clear();
    this.held = 0;
  }

  /** Each entry once (for checks). */
  entries(): IterableIterator<PrefixEntry> {
    return this.lru.values();
  }

  /**
   * Follows `tokens` down the tree: the deepest node reached, the tokens matched, and how far into
   * that node's edge the match ends (0: at the node itself, past its whole edge).
   */
  private walk(tokens: readonly number[]): { node: RadixNode; depth: number; into: number } {
    let node = this.root;
    let depth = 0;
    for (;;) {
      const child = depth < tokens.length ? node.children.get(tokens[depth]) : undefined;
      if (!child) return { node, depth, into: 0 };
      const e = child.edge;
      let k = 0;
      while (k < e.length && depth + k < tokens.length && e[k] === tokens[depth + k]) k++;
      depth += k;
      if (k < e.length) return { node: child, depth, into: k };
      node = child;
    }
  }

  private touch(entry: PrefixEntry): void {
    this.lru.delete(entry.cacheId);
    this.lru.set(entry.cacheId, entry);
  }

  /** Takes the entry out of the books and hands its cache back; its leaf stays. */
  private unlink(entry: PrefixEntry): void {
    this.lru.delete(entry.cacheId);
    this.held -= entry.length;
    entry.node.entry = null;
    this.drop(entry.cacheId, entry.length);
  }

  /** Takes the entry's leaf out, merging a parent left with one child into it, and hands the cache back. */
  private remove(entry: PrefixEntry): void {
    let node = entry.node;
    this.unlink(entry);
    while (node.parent && node.children.size === 0 && !node.entry) {
      node.parent.children.delete(node.edge[0]);
      node = node.parent;
    }
    if (node.parent && node.children.size === 1 && !node.entry) merge(node);
  }
}

/** Any leaf under `node` (every inner node has one). */
function leafBelow(node: RadixNode): RadixNode {
  while (!node.entry) node = node.children.values().next().value!;
  return node;
}

/** Splits `node`'s edge after `k` tokens; returns the new node in between. */
function split(node: RadixNode, k: number): RadixNode {
  const parent = node.parent!;
  const mid = newNode(node.edge.slice(0, k), parent);
  parent.children.set(mid.edge[0], mid);
  node.edge = node.edge.slice(k);
  node.parent = mid;
  mid.children.set(node.edge[0], node);
  return mid;
}

/** An inner node with one child and no entry becomes part of its child's edge. */
function merge(node: RadixNode): void {
  const [child] = node.children.values();
  child.edge = node.edge.concat(child.edge);
  child.parent = node.parent;
  node.parent!.children.set(child.edge[0], child);
}
