// The draft kept in page storage across reloads: the graph and the key of its last save point, written after a typing burst.
import { graphSchema, type GraphDocument } from '../../../shared/ir/graph.ts';
import type { Clock, DraftStorage } from './designerPorts.ts';

const STORAGE_KEY = 'tokenrouter.designer.draft.v1';
/** Typing bursts become one storage write. */
const PERSIST_MS = 200;

export interface Persisted {
  graph: GraphDocument;
  savedKey: string;
}

export class SavedDraft {
  private cancel: (() => void) | null = null;

  constructor(
    private readonly storage: DraftStorage | null,
    private readonly clock: Clock,
    /** What to write when the timer fires: the document as it is then. */
    private readonly current: () => Persisted,
  ) {}

  /** The stored draft, or null when there is none or it does not read as a graph. */
  read(): Persisted | null {
    try {
      const raw = this.storage?.getItem(STORAGE_KEY);
      if (!raw) return null;
      const parsed = JSON.parse(raw) as Partial<Persisted>;
      const g = graphSchema.safeParse(parsed.graph);
      if (!g.success || typeof parsed.savedKey !== 'string') return null;
      return { graph: g.data as GraphDocument, savedKey: parsed.savedKey };
    } catch {
      return null;
    }
  }

  /** Writes after PERSIST_MS, once for any number of changes in between. */
  schedule(): void {
    if (!this.storage || this.cancel) return;
    this.cancel = this.clock.after(PERSIST_MS, this.writeNow);
  }

  /** Writes the draft now (also on page hide, so a reload never loses the last edit). */
  writeNow = (): void => {
    this.cancel?.();
    this.cancel = null;
    try {
      this.storage?.setItem(STORAGE_KEY, JSON.stringify(this.current() satisfies Persisted));
    } catch {
      // Quota or privacy mode: the draft lives on in memory, and the status bar says "not saved".
    }
  };
}
