// The designer's side of the algorithm registry: deploy, activate, roll back and delete, where replacing, rolling back and deleting wait for the user's yes; the server comes in as a port.
import { isDeployableName } from '../../../shared/api/admin.ts';
import type { IrIssue } from '../../../shared/ir/irIssue.ts';
import type { IrDocument } from '../../../shared/ir/irSchema.ts';
import { ApiError, versionIr, type ApiAlgorithm, type ApiVersion } from './api.ts';
import type { DesignerServer } from './designerPorts.ts';
import { versionDiff, type DiffRow } from './versionDiff.ts';

export interface DeployState {
  status: 'idle' | 'deploying' | 'deployed' | 'failed';
  name?: string;
  version?: number;
  message?: string;
}

export interface RegistryState {
  status: 'idle' | 'loading' | 'ok' | 'error';
  algorithms: ApiAlgorithm[];
  message?: string;
}

/** Why `name` cannot be deployed under, or null: the server's rules (a served model keeps its name), said on the field before Deploy. */
export function algorithmNameProblem(name: string, models: readonly { name: string }[]): string | null {
  if (!isDeployableName(name)) return 'lowercase letters, digits, “.”, “_” or “-”; not “draft”';
  if (models.some((m) => m.name === name))
    return `“${name}” is a model this server serves: requests for it get the model, so an algorithm cannot take its name`;
  return null;
}

/** A change the page asks about before sending it; `diff` turns what is live into what would be. */
export type Confirm =
  | { kind: 'replace'; name: string; live: number | null; liveKind: 'ir' | 'builtin' | null; versions: number; next: number; diff: DiffRow[] }
  | { kind: 'rollback'; name: string; from: number; to: number; toKind: 'ir' | 'builtin'; diff: DiffRow[] }
  | { kind: 'delete'; name: string; live: number | null; versions: number };

export interface RegistrySlice {
  graphName: string;
  /** The served models once the server listed them: their names are not for algorithms. */
  catalog: readonly { name: string }[];
  catalogSource: 'loading' | 'server' | 'offline' | 'locked';
  errorCount: number;
  deploy: DeployState;
  registry: RegistryState;
  confirm: Confirm | null;
}

/** What the flow needs of the designer store (narrow, so this module does not import it). */
export interface RegistryHost {
  slice(): RegistrySlice;
  set(patch: Partial<Pick<RegistrySlice, 'deploy' | 'registry' | 'confirm'>>): void;
  compiledIr(): IrDocument | null;
  /** A stored version's IR for comparing with (a seeded built-in: its example graph's); null when none stands for it. */
  comparableIr(v: ApiVersion): IrDocument | null;
  /** The deployed graph is the new save point. */
  markSaved(): void;
  /** The server refused the graph with per-node issues. */
  rejected(issues: IrIssue[]): void;
  /** Puts a version on the canvas as the new save point (after a rollback, the one now live). */
  show(ir: IrDocument): void;
  notify(kind: 'ok' | 'error' | 'info', text: string): void;
}

export class RegistryFlow {
  constructor(
    private readonly server: DesignerServer,
    private readonly host: RegistryHost,
  ) {}

  private entry(name: string): ApiAlgorithm | undefined {
    return this.host.slice().registry.algorithms.find((a) => a.name === name);
  }

  refresh = async (): Promise<void> => {
    const { registry } = this.host.slice();
    this.host.set({ registry: { ...registry, status: 'loading' } });
    try {
      this.host.set({ registry: { status: 'ok', algorithms: await this.server.listAlgorithms() } });
    } catch (e) {
      this.host.set({ registry: { status: 'error', algorithms: registry.algorithms, message: errorText(e) } });
    }
  };

  /** Why Deploy is disabled right now, or null when it is enabled. */
  blocker = (): string | null => {
    const s = this.host.slice();
    if (s.deploy.status === 'deploying') return 'Deploying…';
    if (s.errorCount > 0) return `Fix ${s.errorCount} error${s.errorCount > 1 ? 's' : ''} first`;
    if (!isDeployableName(s.graphName)) return 'Name: lowercase letters, digits, “.”, “_”, “-” (not “draft”)';
    // the field says it in full; the toolbar has room for a few words
    if (algorithmNameProblem(s.graphName, s.catalogSource === 'server' ? s.catalog : [])) return `“${s.graphName}” is a served model’s name`;
    const entry = this.entry(s.graphName);
    const live = entry?.versions.find((v) => v.version === entry.activeVersion);
    const liveIr = live ? this.host.comparableIr(live) : null;
    const ir = liveIr ? this.host.compiledIr() : null;
    // Storing the same algorithm again would only add a version to roll back through.
    if (live && liveIr && ir && versionDiff(liveIr, ir).length === 0) return `Live v${live.version} already runs this draft`;
    return null;
  };

  /** One click: store the compiled graph as a new version and make it live; over an existing name, only after the user confirms. */
  deploy = async (replace = false): Promise<void> => {
    if (this.blocker()) return;
    const ir = this.host.compiledIr();
    if (!ir) return;
    const name = this.host.slice().graphName;
    if (!replace && this.entry(name)) return this.askReplace(name, ir);
    this.host.set({ deploy: { status: 'deploying', name }, confirm: null });
    try {
      const { version } = await this.server.deploy(name, ir, replace);
      this.host.markSaved();
      // "deployed" shows only once the registry lists this version as live: the toolbar compares
      // the draft with the live version, and must not say it differs from the one before
      await this.refresh();
      this.host.set({ deploy: { status: 'deployed', name, version } });
      this.host.notify('ok', `Deployed ${name} v${version}`);
      return;
    } catch (e) {
      // Deployed meanwhile from elsewhere: the list was stale, so ask now with the real live version.
      const refreshed = e instanceof ApiError && e.status === 409 && !replace;
      if (refreshed) {
        await this.refresh();
        if (this.entry(name)) {
          this.host.set({ deploy: { status: 'idle' } });
          return this.askReplace(name, ir);
        }
      }
      if (e instanceof ApiError && e.details.length) this.host.rejected(e.details);
      this.host.set({ deploy: { status: 'failed', name, message: errorText(e) } });
      this.host.notify('error', `Deploy failed: ${errorText(e)}`);
      if (refreshed) return;
    }
    await this.refresh();
  };

  private askReplace(name: string, ir: IrDocument): void {
    const entry = this.entry(name)!;
    const live = entry.versions.find((v) => v.version === entry.activeVersion);
    const next = Math.max(0, ...entry.versions.map((v) => v.version)) + 1;
    this.host.set({
      confirm: {
        kind: 'replace',
        name,
        live: entry.activeVersion,
        liveKind: live?.kind ?? null,
        versions: entry.versions.length,
        next,
        diff: versionDiff(live ? this.host.comparableIr(live) : null, ir),
      },
    });
  }

  activate = async (name: string, version: number): Promise<void> => {
    try {
      await this.server.activate(name, version);
      this.host.notify('ok', `${name} v${version} is active`);
    } catch (e) {
      this.host.notify('error', `Activate failed: ${errorText(e)}`);
    }
    await this.refresh();
  };

  askRollback = (name: string): void => {
    const entry = this.entry(name);
    const from = entry?.versions.find((v) => v.version === entry.activeVersion);
    const to = entry?.versions.find((v) => v.version === entry.rollbackTo);
    if (!from || !to) return this.host.notify('error', `${name} has no earlier active version to roll back to`);
    this.host.set({
      confirm: {
        kind: 'rollback',
        name,
        from: from.version,
        to: to.version,
        toKind: to.kind,
        diff: versionDiff(this.host.comparableIr(from), this.host.comparableIr(to)),
      },
    });
  };

  askDelete = (name: string): void => {
    const entry = this.entry(name);
    // The server refuses too; asking first would put a question whose yes can only fail.
    if (entry?.isDefault) return this.host.notify('error', `${name} is the server's default algorithm and cannot be deleted`);
    if (entry) this.host.set({ confirm: { kind: 'delete', name, live: entry.activeVersion, versions: entry.versions.length } });
  };

  cancel = (): void => this.host.set({ confirm: null });

  /** Sends the change the open dialog asked about. */
  confirm = async (): Promise<void> => {
    const c = this.host.slice().confirm;
    if (!c) return;
    this.host.set({ confirm: null });
    if (c.kind === 'replace') return this.deploy(true);
    if (c.kind === 'rollback') return this.rollback(c.name);
    try {
      const r = await this.server.remove(c.name);
      this.host.notify('ok', `Deleted ${c.name} (${r.deletedVersions} version${r.deletedVersions === 1 ? '' : 's'})`);
    } catch (e) {
      this.host.notify('error', `Delete failed: ${errorText(e)}`);
    }
    await this.refresh();
  };

  private async rollback(name: string): Promise<void> {
    let version: number;
    try {
      version = (await this.server.rollback(name)).activeVersion;
    } catch (e) {
      this.host.notify('error', `Rollback failed: ${errorText(e)}`);
      return this.refresh();
    }
    await this.refresh();
    // The canvas follows what now runs when it holds this algorithm; a built-in has no graph, so the toolbar flags the difference instead.
    const live = this.entry(name)?.versions.find((v) => v.version === version);
    const ir = live ? versionIr(live) : null;
    const shown = ir !== null && this.host.slice().graphName === name;
    if (shown) this.host.show(ir);
    this.host.notify('ok', `Rolled back: ${name} v${version} is live${shown ? ' and on the canvas' : ''}`);
  }
}

export function errorText(e: unknown): string {
  if (e instanceof ApiError) return e.status ? `${e.message} (${e.status})` : e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}
