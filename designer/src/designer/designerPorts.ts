// The designer store's doors to the outside world (server, draft storage, clock, system clipboard), injected so the store itself does no I/O and runs in Node tests.
import type { ActiveVersion, DeleteResponse, DeployResponse } from '../../../shared/api/admin.ts';
import type { IrDocument } from '../../../shared/ir/irSchema.ts';
import type { ApiAlgorithm, ApiModel, ChatRun } from './api.ts';

/** The server calls the store makes: api.ts in the page, a scripted fake in tests. A refusal rejects with api.ts's ApiError (409 when a deploy needs `replace`). */
export interface DesignerServer {
  listModels(): Promise<ApiModel[]>;
  listAlgorithms(): Promise<ApiAlgorithm[]>;
  /** Stores the IR as the next version and makes it active; over an existing name only with `replace`. */
  deploy(name: string, ir: IrDocument, replace: boolean): Promise<DeployResponse>;
  activate(name: string, version: number): Promise<ActiveVersion>;
  rollback(name: string): Promise<ActiveVersion>;
  remove(name: string): Promise<DeleteResponse>;
  /** Streams one chat completion; resolves with the finish reason, rejects once `run.signal` aborts. */
  streamChat(run: ChatRun): Promise<string | null>;
}

/** Where drafts survive a reload: localStorage in the page, a map in tests. */
export interface DraftStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

export interface Clock {
  now(): number;
  /** Runs `fn` once after `ms`; the answer cancels it. */
  after(ms: number, fn: () => void): () => void;
}

export interface SystemClipboard {
  writeText(text: string): Promise<void>;
}

export interface DesignerPorts {
  server: DesignerServer;
  /** null when the page may not store anything (privacy mode): the draft then lives in memory only. */
  storage: DraftStorage | null;
  clock: Clock;
  /** null where the page has no clipboard access; copy and paste still work inside the page. */
  clipboard: SystemClipboard | null;
}
