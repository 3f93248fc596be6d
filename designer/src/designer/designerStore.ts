// The designer's state and every action on it, apart from rendering and I/O: graph and validation here, history in editHistory.ts; the playground (playgroundRun.ts), the stored draft (savedDraft.ts) and the registry (registryFlow.ts) as parts; the server, storage, clock and clipboard come in as ports (designerPorts.ts).
import { compileGraph } from '../../../shared/ir/compileGraph.ts';
import type { ModelCatalogEntry } from '../../../shared/ir/checkParams.ts';
import { emptyGraph, graphSchema, type GraphDocument } from '../../../shared/ir/graph.ts';
import type { IrIssue } from '../../../shared/ir/irIssue.ts';
import { irSchema, type IrDocument } from '../../../shared/ir/irSchema.ts';
import { irToGraph } from '../../../shared/ir/irToGraph.ts';
import type { NodeType, ParamValue } from '../../../shared/ir/nodeTypes.ts';
import { versionIr, type ApiVersion } from './api.ts';
import { comparableIr } from './comparableIr.ts';
import type { DesignerPorts } from './designerPorts.ts';
import { EditHistory } from './editHistory.ts';
import * as edits from './graphEdits.ts';
import type { PlaygroundOptions } from './playgroundOptions.ts';
import { INITIAL_PLAYGROUND, PlaygroundRun, type PlaygroundState } from './playgroundRun.ts';
import { SavedDraft } from './savedDraft.ts';
import { RegistryFlow, type Confirm, type DeployState, type RegistryState } from './registryFlow.ts';

export type RightTab = 'inspect' | 'versions' | 'playground' | 'evaluate';

export interface Toast {
  kind: 'ok' | 'error' | 'info';
  text: string;
  id: number;
}

export interface DesignerState {
  graph: GraphDocument;
  selection: { nodes: string[]; edges: string[] };
  canUndo: boolean;
  canRedo: boolean;
  /** The document differs from the last save point (open, import, save, export, deploy). */
  dirty: boolean;
  catalog: ModelCatalogEntry[];
  /** `locked`: the server refused this page's admin token (or it has none), and the page asks for it. */
  catalogSource: 'loading' | 'server' | 'offline' | 'locked';
  /** Local validation plus the server's verdict on the last deploy attempt. */
  issues: IrIssue[];
  errorCount: number;
  measured: Record<string, { width: number; height: number }>;
  deploy: DeployState;
  registry: RegistryState;
  /** A replace, rollback or delete waiting for the user's yes (the page shows it as a dialog). */
  confirm: Confirm | null;
  playground: PlaygroundState;
  tab: RightTab;
  toast: Toast | null;
  /** Bumped when a new document is opened, so the canvas fits it into view. */
  viewEpoch: number;
}

/** Used until GET /admin/models answers (or when it cannot): the bundled family. */
export const FALLBACK_CATALOG: ModelCatalogEntry[] = [
  { name: 'small', heads: ['citer', 'r2r', 'colm'] },
  { name: 'medium', heads: [] },
  { name: 'large', heads: [] },
];

export class DesignerStore {
  private state: DesignerState;
  private readonly listeners = new Set<() => void>();
  private readonly history: EditHistory;
  private clipboard: edits.Fragment | null = null;
  private pasteCount = 0;
  private savedKey: string;
  private validatedKey = '';
  private localIssues: IrIssue[] = [];
  private serverIssues: IrIssue[] = [];
  private toastId = 0;
  private readonly flow: RegistryFlow;
  private readonly playground: PlaygroundRun;
  private readonly draft: SavedDraft;

  constructor(
    initial: GraphDocument,
    private readonly ports: DesignerPorts,
  ) {
    this.history = new EditHistory(() => ports.clock.now());
    this.draft = new SavedDraft(ports.storage, ports.clock, () => ({ graph: this.state.graph, savedKey: this.savedKey }));
    const draft = this.draft.read();
    const graph = draft?.graph ?? initial;
    this.savedKey = draft?.savedKey ?? edits.documentKey(graph);
    this.state = {
      graph,
      selection: { nodes: [], edges: [] },
      canUndo: false,
      canRedo: false,
      dirty: edits.documentKey(graph) !== this.savedKey,
      catalog: FALLBACK_CATALOG,
      catalogSource: 'loading',
      issues: [],
      errorCount: 0,
      measured: {},
      deploy: { status: 'idle' },
      registry: { status: 'idle', algorithms: [] },
      confirm: null,
      playground: INITIAL_PLAYGROUND,
      tab: 'inspect',
      toast: null,
      viewEpoch: 0,
    };
    this.revalidate();
    this.flow = new RegistryFlow(ports.server, {
      slice: () => ({ ...this.state, graphName: this.state.graph.name }),
      set: (patch) => this.set(patch),
      compiledIr: this.compiledIr,
      comparableIr: (v) => comparableIr(v, this.state.catalog),
      markSaved: this.markSaved,
      rejected: (issues) => {
        this.serverIssues = issues;
        this.revalidate();
      },
      show: (ir) => this.open(irToGraph(ir)),
      notify: this.notify,
    });
    this.playground = new PlaygroundRun({
      server: ports.server,
      get: () => this.state.playground,
      set: (playground) => this.set({ playground }),
      compiledIr: this.compiledIr,
    });
  }

  // ---- subscription -------------------------------------------------------------------------

  getState = (): DesignerState => this.state;

  subscribe = (fn: () => void): (() => void) => {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  };

  private set(patch: Partial<DesignerState>): void {
    this.state = { ...this.state, ...patch };
    for (const fn of this.listeners) fn();
  }

  // ---- graph and history ----------------------------------------------------------------------

  /** Replaces the graph as one undoable step; `coalesce` merges quick repeated edits (typing). */
  private commit(next: GraphDocument, coalesce?: string): void {
    if (next === this.state.graph) return;
    this.history.record(this.state.graph, coalesce);
    this.replace(next);
  }

  /** Sets the graph without touching history (drags in flight, undo/redo, loads). */
  private replace(graph: GraphDocument, extra: Partial<DesignerState> = {}): void {
    const nodeIds = new Set(graph.nodes.map((n) => n.id));
    const edgeIds = new Set(graph.edges.map((e) => e.id));
    const sel = this.state.selection;
    const selection =
      sel.nodes.every((n) => nodeIds.has(n)) && sel.edges.every((e) => edgeIds.has(e))
        ? sel
        : { nodes: sel.nodes.filter((n) => nodeIds.has(n)), edges: sel.edges.filter((e) => edgeIds.has(e)) };
    this.state = {
      ...this.state,
      graph,
      selection,
      canUndo: this.history.canUndo,
      canRedo: this.history.canRedo,
      dirty: edits.documentKey(graph) !== this.savedKey,
      ...extra,
    };
    this.revalidate();
    this.draft.schedule();
    for (const fn of this.listeners) fn();
  }

  private revalidate(): void {
    const key = edits.structureKey(this.state.graph) + JSON.stringify(this.state.catalog);
    if (key !== this.validatedKey) {
      if (this.validatedKey) this.serverIssues = []; // the server judged an older graph
      this.validatedKey = key;
      this.localIssues = compileGraph(this.state.graph, this.state.catalog).issues;
    }
    const seen = new Set(this.localIssues.map((i) => `${i.nodeId}|${i.code}`));
    const issues = [...this.localIssues, ...this.serverIssues.filter((i) => !seen.has(`${i.nodeId}|${i.code}`))];
    this.state = { ...this.state, issues, errorCount: issues.filter((i) => i.severity === 'error').length };
  }

  undo = (): void => {
    const prev = this.history.undo(this.state.graph);
    if (prev) this.replace(prev);
  };

  redo = (): void => {
    const next = this.history.redo(this.state.graph);
    if (next) this.replace(next);
  };

  addNode = (type: NodeType, position: { x: number; y: number }): string => {
    const { graph, id } = edits.addNode(this.state.graph, type, position);
    this.commit(graph);
    this.select([id], []);
    return id;
  };

  connect = (from: edits.PortEnd, to: edits.PortEnd): void => this.commit(edits.connect(this.state.graph, from, to));

  remove = (nodes: readonly string[], edges: readonly string[]): void => {
    if (!nodes.length && !edges.length) return;
    this.commit(edits.remove(this.state.graph, nodes, edges));
  };

  removeSelection = (): void => this.remove(this.state.selection.nodes, this.state.selection.edges);

  /** Node drags: positions move live; the whole drag becomes one undo step when it ends. */
  moveNodes = (positions: ReadonlyMap<string, { x: number; y: number }>, dragging: boolean): void => {
    if (dragging) this.history.dragging(this.state.graph);
    const moved = edits.move(this.state.graph, positions);
    if (!dragging) this.history.dragEnded();
    this.replace(moved);
  };

  setParam = (id: string, name: string, value: ParamValue): void => this.commit(edits.setParam(this.state.graph, id, name, value), `${id}.${name}`);

  setName = (name: string): void => this.commit({ ...this.state.graph, name }, 'name');

  setDescription = (description: string): void => this.commit({ ...this.state.graph, description }, 'description');

  select = (nodes: readonly string[], edges: readonly string[]): void => {
    const s = this.state.selection;
    if (same(s.nodes, nodes) && same(s.edges, edges)) return;
    this.set({ selection: { nodes: [...nodes], edges: [...edges] }, ...(nodes.length === 1 ? { tab: 'inspect' as const } : {}) });
  };

  selectAll = (): void =>
    this.select(
      this.state.graph.nodes.map((n) => n.id),
      this.state.graph.edges.map((e) => e.id),
    );

  copy = (): number => {
    if (!this.state.selection.nodes.length) return 0;
    this.clipboard = edits.copy(this.state.graph, this.state.selection.nodes);
    this.pasteCount = 0;
    // The system clipboard is a convenience (it may refuse); the in-page clipboard is what paste uses.
    try {
      void this.ports.clipboard?.writeText(JSON.stringify(this.clipboard)).catch(() => undefined);
    } catch {
      // a clipboard that refuses at once (no permission) is the same as one that refuses later
    }
    return this.clipboard.nodes.length;
  };

  paste = (): void => {
    if (!this.clipboard?.nodes.length) return;
    this.pasteCount++;
    const { graph, ids } = edits.paste(this.state.graph, this.clipboard, 40 * this.pasteCount);
    this.commit(graph);
    this.select(ids, []);
  };

  setMeasured = (id: string, size: { width: number; height: number }): void => {
    const m = this.state.measured[id];
    if (m && m.width === size.width && m.height === size.height) return;
    this.set({ measured: { ...this.state.measured, [id]: size } });
  };

  // ---- documents ------------------------------------------------------------------------------

  /** Loads a document as a new save point (opening an example, a version, an import). */
  open = (graph: GraphDocument, label?: string): void => {
    this.commit(structuredClone(graph));
    this.markSaved();
    this.set({ selection: { nodes: [], edges: [] }, deploy: { status: 'idle' }, viewEpoch: this.state.viewEpoch + 1 });
    if (label) this.notify('info', `Opened ${label}`);
  };

  newGraph = (): void => this.open(emptyGraph('untitled'));

  /** Imports a graph document or an IR; answers with an error message, or null when loaded. */
  importJson = (text: string): string | null => {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return 'Not JSON.';
    }
    const kind = (raw as { kind?: unknown } | null)?.kind;
    if (kind === 'tokenrouter.ir') {
      const ir = irSchema.safeParse(raw);
      if (!ir.success) return `Not a valid IR: ${ir.error.issues[0]?.message ?? 'schema mismatch'}.`;
      this.open(irToGraph(ir.data as IrDocument), `IR “${ir.data.name}”`);
      return null;
    }
    const g = graphSchema.safeParse(raw);
    if (!g.success) {
      const first = g.error.issues[0];
      return `Not a designer graph: ${first ? `${first.path.join('.')} ${first.message}` : 'schema mismatch'}.`;
    }
    this.open(g.data as GraphDocument, `“${g.data.name}”`);
    return null;
  };

  exportGraph = (): string => {
    this.markSaved();
    return `${JSON.stringify(this.state.graph, null, 2)}\n`;
  };

  /** The compiled IR of the current graph, or null while it has errors. */
  compiledIr = (): IrDocument | null => {
    const r = compileGraph(this.state.graph, this.state.catalog);
    return r.ok ? r.ir : null;
  };

  markSaved = (): void => {
    this.savedKey = edits.documentKey(this.state.graph);
    this.set({ dirty: false });
    this.persistNow();
  };

  /** Writes the draft now (also on page hide, so a reload never loses the last edit). */
  persistNow = (): void => this.draft.writeNow();

  // ---- server ---------------------------------------------------------------------------------

  /** What the page does once mounted: the model catalog and the registry list, side by side. */
  start = async (): Promise<void> => {
    await Promise.all([this.loadCatalog(), this.refreshRegistry()]);
  };

  private async loadCatalog(): Promise<void> {
    try {
      const models = await this.ports.server.listModels();
      this.set({ catalog: models.map((m) => ({ name: m.name, heads: m.heads, vocabSize: m.vocabSize })), catalogSource: 'server' });
    } catch (e) {
      this.set({ catalogSource: (e as { status?: number }).status === 401 ? 'locked' : 'offline' });
    }
    this.revalidate();
    this.set({});
  }

  /** A token was given or forgotten: ask the server again with it. */
  tokenChanged = (): void => {
    this.set({ catalogSource: 'loading' });
    void this.start();
  };

  // Registry actions live in registryFlow.ts; replace, rollback and delete open `confirm` first.
  refreshRegistry = (): Promise<void> => this.flow.refresh();
  deployBlocker = (): string | null => this.flow.blocker();
  deploy = (): Promise<void> => this.flow.deploy();
  activate = (name: string, version: number): Promise<void> => this.flow.activate(name, version);
  rollback = (name: string): void => this.flow.askRollback(name);
  deleteAlgorithm = (name: string): void => this.flow.askDelete(name);
  confirm = (): Promise<void> => this.flow.confirm();
  cancelConfirm = (): void => this.flow.cancel();

  openVersion = (name: string, v: ApiVersion): void => {
    const ir = versionIr(v);
    if (!ir) return this.notify('error', `v${v.version} has no readable graph`);
    this.open(irToGraph(ir), `${name} v${v.version}`);
  };

  // ---- playground -----------------------------------------------------------------------------

  setPlayground = (patch: Partial<Pick<PlaygroundState, 'prompt' | 'maxTokens' | 'target'>>): void =>
    this.set({ playground: { ...this.state.playground, ...patch } });

  setPlaygroundOptions = (patch: Partial<PlaygroundOptions>): void => {
    const p = this.state.playground;
    this.set({ playground: { ...p, options: { ...p.options, ...patch } } });
  };

  run = (): Promise<void> => this.playground.run();

  stop = (): void => this.playground.stop();

  // ---- chrome ---------------------------------------------------------------------------------

  setTab = (tab: RightTab): void => this.set({ tab });

  notify = (kind: Toast['kind'], text: string): void => this.set({ toast: { kind, text, id: ++this.toastId } });

  dismissToast = (id: number): void => {
    if (this.state.toast?.id === id) this.set({ toast: null });
  };
}

function same(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
