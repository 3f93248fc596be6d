// The designer's undo and redo stacks: one step per edit, with quick repeated edits (typing) and whole drags as one step.
import type { GraphDocument } from '../../../shared/ir/graph.ts';

const HISTORY_LIMIT = 200;
const COALESCE_MS = 1200;

export class EditHistory {
  private past: GraphDocument[] = [];
  private future: GraphDocument[] = [];
  private lastCoalesce: { key: string; at: number } | null = null;
  private dragStart: GraphDocument | null = null;

  constructor(private readonly now: () => number) {}

  get canUndo(): boolean {
    return this.past.length > 0;
  }

  get canRedo(): boolean {
    return this.future.length > 0;
  }

  /** An edit replaces `current`; `coalesce` merges quick repeated edits under the same key into one step. */
  record(current: GraphDocument, coalesce?: string): void {
    const now = this.now();
    const merge = coalesce !== undefined && this.lastCoalesce?.key === coalesce && now - this.lastCoalesce.at < COALESCE_MS;
    if (!merge) {
      this.past.push(current);
      if (this.past.length > HISTORY_LIMIT) this.past.shift();
    }
    this.lastCoalesce = coalesce === undefined ? null : { key: coalesce, at: now };
    this.future = [];
  }

  /** The graph to go back to from `current`, or undefined at the start of history. */
  undo(current: GraphDocument): GraphDocument | undefined {
    const prev = this.past.pop();
    if (!prev) return undefined;
    this.future.push(current);
    this.lastCoalesce = null;
    return prev;
  }

  /** The graph to go forward to from `current`, or undefined at the end of history. */
  redo(current: GraphDocument): GraphDocument | undefined {
    const next = this.future.pop();
    if (!next) return undefined;
    this.past.push(current);
    this.lastCoalesce = null;
    return next;
  }

  /** Nodes are being dragged: the graph before the drag's first move is its undo step. */
  dragging(current: GraphDocument): void {
    if (!this.dragStart) this.dragStart = current;
  }

  /** The drag ended: its starting graph becomes one undo step. */
  dragEnded(): void {
    const start = this.dragStart;
    this.dragStart = null;
    if (start) {
      this.past.push(start);
      this.future = [];
      this.lastCoalesce = null;
    }
  }
}
