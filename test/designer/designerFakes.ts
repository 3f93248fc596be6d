// Stand-ins for the designer store's ports, for tests in Node: a server holding a small registry that records every call, a map storage, a clock advanced by hand.
import type { ApiAlgorithm, ApiModel, ChatRun, StreamToken } from '../../designer/src/designer/api.ts';
import { ApiError } from '../../designer/src/designer/api.ts';
import type { Clock, DesignerServer, DraftStorage, SystemClipboard } from '../../designer/src/designer/designerPorts.ts';
import { DesignerStore, FALLBACK_CATALOG } from '../../designer/src/designer/designerStore.ts';
import { EXAMPLES } from '../../designer/src/designer/examples.ts';
import { compileGraph } from '../../shared/ir/compileGraph.ts';
import type { GraphDocument } from '../../shared/ir/graph.ts';
import type { IrDocument } from '../../shared/ir/irSchema.ts';

type Method = keyof DesignerServer;

export interface Call {
  method: Method;
  args: unknown[];
}

/** A playground run the test drives: push tokens, then end it (the store sees what a stream would deliver). */
export interface FakeChat {
  run: ChatRun;
  end(finish: string | null): void;
}

export const MODELS: ApiModel[] = [
  { name: 'small', vocabSize: 32000, heads: ['citer', 'r2r', 'colm'], maxContext: 4096, kvBytesPerToken: 1024 },
  { name: 'medium', vocabSize: 32000, heads: [], maxContext: 4096, kvBytesPerToken: 2048 },
  { name: 'large', vocabSize: 32000, heads: [], maxContext: 4096, kvBytesPerToken: 4096 },
];

/**
 * Answers like the admin API over an in-memory registry: a deploy over an existing name without `replace`
 * is a 409, the default algorithm cannot be deleted. `fail` scripts the next answer of a method as an error.
 */
export class FakeServer implements DesignerServer {
  readonly calls: Call[] = [];
  readonly chats: FakeChat[] = [];
  models: ApiModel[] = structuredClone(MODELS);
  /** What the server holds; a test may change it behind the store's back to make the store's list stale. */
  algorithms: ApiAlgorithm[] = [];
  private readonly failures = new Map<Method, Error[]>();

  fail(method: Method, error: Error): void {
    this.failures.set(method, [...(this.failures.get(method) ?? []), error]);
  }

  /** The arguments of every call of `method`, in order. */
  argsOf(method: Method): unknown[][] {
    return this.calls.filter((c) => c.method === method).map((c) => c.args);
  }

  private enter(method: Method, ...args: unknown[]): void {
    this.calls.push({ method, args });
    const scripted = this.failures.get(method)?.shift();
    if (scripted) throw scripted;
  }

  private find(name: string): ApiAlgorithm | undefined {
    return this.algorithms.find((a) => a.name === name);
  }

  async listModels(): Promise<ApiModel[]> {
    this.enter('listModels');
    return structuredClone(this.models);
  }

  async listAlgorithms(): Promise<ApiAlgorithm[]> {
    this.enter('listAlgorithms');
    return structuredClone(this.algorithms);
  }

  async deploy(name: string, ir: IrDocument, replace: boolean) {
    this.enter('deploy', name, ir, replace);
    return this.store(name, ir, replace);
  }

  /** Stores a version directly (seeding a test), with the same rules as a deploy. */
  store(name: string, ir: IrDocument, replace = true) {
    let a = this.find(name);
    if (a && !replace) throw new ApiError(`algorithm ${name} exists: send replace: true to store a new version`, 409, 'conflict', 'name');
    if (!a) {
      a = { name, activeVersion: null, rollbackTo: null, isDefault: false, served: true, versions: [] };
      this.algorithms.push(a);
    }
    const version = Math.max(0, ...a.versions.map((v) => v.version)) + 1;
    a.versions.push({ version, createdAt: '2025-01-01T00:00:00.000Z', kind: 'ir', ir: structuredClone(ir) });
    a.rollbackTo = a.activeVersion;
    a.activeVersion = version;
    return { name, version, activeVersion: version };
  }

  async activate(name: string, version: number) {
    this.enter('activate', name, version);
    const a = this.find(name)!;
    a.rollbackTo = a.activeVersion;
    a.activeVersion = version;
    return { name, activeVersion: version };
  }

  async rollback(name: string) {
    this.enter('rollback', name);
    const a = this.find(name);
    if (!a?.rollbackTo) throw new ApiError(`${name} has nothing to roll back to`, 409, 'conflict', 'name');
    a.activeVersion = a.rollbackTo;
    a.rollbackTo = null;
    return { name, activeVersion: a.activeVersion };
  }

  async remove(name: string) {
    this.enter('remove', name);
    const a = this.find(name);
    if (!a) throw new ApiError(`no algorithm ${name}`, 404, 'not_found', 'name');
    if (a.isDefault) throw new ApiError(`${name} is the default algorithm of this server and cannot be deleted`, 409, 'conflict', 'name');
    this.algorithms = this.algorithms.filter((x) => x !== a);
    return { name, deletedVersions: a.versions.length };
  }

  /** Registers the run synchronously, as fetch would start it; rejects like an aborted fetch once the signal fires. */
  streamChat(run: ChatRun): Promise<string | null> {
    try {
      this.enter('streamChat', { model: run.model, ir: run.ir, prompt: run.prompt, maxTokens: run.maxTokens, extra: run.extra });
    } catch (e) {
      return Promise.reject(e);
    }
    return new Promise((resolve, reject) => {
      run.signal.addEventListener('abort', () => reject(Object.assign(new Error('This operation was aborted'), { name: 'AbortError' })));
      this.chats.push({ run, end: resolve });
    });
  }
}

export class MemoryStorage implements DraftStorage {
  readonly items = new Map<string, string>();
  /** Every value written, in order. */
  readonly writes: string[] = [];

  getItem(key: string): string | null {
    return this.items.get(key) ?? null;
  }

  setItem(key: string, value: string): void {
    this.items.set(key, value);
    this.writes.push(value);
  }
}

/** Time stands still until `advance`, which fires the timers that fall due, in order. */
export class ManualClock implements Clock {
  private t = 1_700_000_000_000;
  private timers: { at: number; fn: () => void }[] = [];

  now = (): number => this.t;

  after = (ms: number, fn: () => void): (() => void) => {
    const timer = { at: this.t + ms, fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((x) => x !== timer);
    };
  };

  get pending(): number {
    return this.timers.length;
  }

  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      const due = this.timers.filter((x) => x.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.timers = this.timers.filter((x) => x !== due);
      this.t = due.at;
      due.fn();
    }
    this.t = end;
  }
}

export class RecordingClipboard implements SystemClipboard {
  readonly texts: string[] = [];
  refuse = false;

  async writeText(text: string): Promise<void> {
    if (this.refuse) throw new Error('clipboard permission denied');
    this.texts.push(text);
  }
}

/** The R-Stitch example (the page's first graph): it compiles against the bundled catalog. */
export function exampleGraph(): GraphDocument {
  return structuredClone(EXAMPLES[0].graph);
}

/** A graph's IR as a deploy would send it. */
export function irOf(graph: GraphDocument): IrDocument {
  const r = compileGraph(graph, FALLBACK_CATALOG);
  if (!r.ok) throw new Error(`${graph.name} does not compile: ${r.issues.map((i) => i.message).join('; ')}`);
  return r.ir;
}

export function token(id: number, text: string): StreamToken {
  return { id, text, model: 'small', signals: { entropy: 0.1, maxProb: 0.9, margin: 0.8, heads: {} }, decision: 'stay', kept: true };
}

export interface Rig {
  store: DesignerStore;
  server: FakeServer;
  storage: MemoryStorage | null;
  clock: ManualClock;
  clipboard: RecordingClipboard;
}

/** A store on fakes; pass `storage` to share drafts between two stores (a reload). */
export function rig(opts: { graph?: GraphDocument; server?: FakeServer; storage?: MemoryStorage | null } = {}): Rig {
  const server = opts.server ?? new FakeServer();
  const storage = opts.storage === undefined ? new MemoryStorage() : opts.storage;
  const clock = new ManualClock();
  const clipboard = new RecordingClipboard();
  const store = new DesignerStore(opts.graph ?? exampleGraph(), { server, storage, clock, clipboard });
  return { store, server, storage, clock, clipboard };
}
