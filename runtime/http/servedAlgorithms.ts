// Which algorithm a request's `model` names: each stored version built and checked once, an earlier one served when the active one does not load.
import type { Algorithm } from '../../shared/algorithm.ts';
import type { AlgorithmSpec } from '../../shared/api/admin.ts';
import type { ModelCatalogEntry } from '../../shared/ir/checkParams.ts';
import type { ServerConfig } from '../config/serverConfig.ts';
import { TokenRouterError } from '../errors.ts';
import type { AlgorithmEntry, AlgorithmRegistry } from '../registry/algorithmRegistry.ts';
import { buildAlgorithm, type AlgorithmRef } from '../registry/algorithmSource.ts';
import { builtinFactory } from '../registry/builtins.ts';
import type { ModelInfo } from '../runner/modelRunner.ts';
import type { ModelFolder } from '../runner/modelFolder.ts';
import { DraftCache } from './draftCache.ts';
import { refuseMissingHeads } from './routerHeads.ts';

/** An algorithm built here, and the same by reference for engines in other threads. */
export interface Served {
  algorithm: Algorithm<unknown>;
  ref: AlgorithmRef;
}

/** What a request's `model` resolves to: the algorithm, the name it was asked by, and its stored version (null: a model or a draft). */
export type Resolved = Served & { name: string; version: number | null };

/** Built-ins stored as version 1 on first start. */
const SEEDED = ['r-stitch', 'citer', 'r2r', 'co-llm', 'me', 'query-router'];

/** Only the version seeded at a start: a built-in nobody deployed or asked for. */
function isSeededOnly(e: AlgorithmEntry): boolean {
  const [v, ...more] = e.versions;
  return more.length === 0 && v !== undefined && v.spec.kind === 'builtin' && v.spec.factory === e.name && SEEDED.includes(e.name);
}

/** What the algorithms need of the serving process. */
export interface ServedAlgorithmsHost {
  config: ServerConfig;
  folders: Map<string, ModelFolder>;
  registry: AlgorithmRegistry;
  /** A served model's info; undefined for a name no model has. */
  info(model: string): ModelInfo | undefined;
  /** Refuses a request the cluster would refuse anyway (a full queue), before a draft is compiled for it. */
  admitOrThrow(): void;
}

export class ServedAlgorithms {
  private readonly compiled = new Map<string, Served>();
  /** `name@version` of stored versions that do not load here, with why; reported once each. */
  private readonly unloadable = new Map<string, string>();
  /** Algorithms already reported as served by an earlier version (or not at all), so the log says it once. */
  private readonly reported = new Set<string>();
  private readonly resolved = new Map<string, { generation: number; served: Resolved }>();
  readonly drafts = new DraftCache<Served>();

  constructor(private readonly host: ServedAlgorithmsHost) {}

  /** Stores the built-ins whose models this server serves, as version 1 of their own name (kept if already stored). */
  seedBuiltins(): void {
    const modelNames = new Set(this.host.config.models.map((m) => m.name));
    for (const name of SEEDED) {
      const alg = builtinFactory(name)?.();
      if (alg && alg.models.every((m) => modelNames.has(m))) this.host.registry.seed(name, { kind: 'builtin', factory: name });
    }
  }

  /** Loads every stored algorithm, so one that no longer loads is reported at start rather than at its first request. */
  reportStored(): void {
    for (const e of this.host.registry.list()) {
      if (e.activeVersion === null) continue;
      // stored by an older build, which let an algorithm take a model's name: the model keeps it
      if (this.host.info(e.name))
        console.error(
          `[tokenrouter] algorithm ${e.name} is named like a served model; requests for "${e.name}" get the model, and the algorithm is not served (deploy it under another name)`,
        );
      // A built-in seeded here and never deployed is nobody's request: one that does not load on these models is left out quietly (a request for it says why).
      else this.serving(e.name, e.name !== this.host.config.defaultAlgorithm && isSeededOnly(e));
    }
  }

  /** Models with the router heads they ship, for the IR compiler and the designer. */
  catalog(): ModelCatalogEntry[] {
    return this.host.config.models.map((m) => ({
      name: m.name,
      heads: Object.keys(this.host.folders.get(m.name)?.routers ?? {}),
      vocabSize: this.host.info(m.name)!.vocabSize,
    }));
  }

  /** Everything a client may name as `model`: active algorithms, then single models. */
  modelIds(): string[] {
    const algs = this.host.registry
      .list()
      .filter((e) => e.activeVersion !== null && !this.host.info(e.name) && this.serving(e.name, true) !== null)
      .map((e) => e.name);
    return [...algs, ...this.host.config.models.map((m) => m.name)];
  }

  /**
   * Removes an algorithm and every version of it. Requests already running keep the algorithm they
   * resolved and finish; new ones get 404. The default algorithm stays: load runs and clients
   * without a model rely on it.
   */
  deleteAlgorithm(name: string): number {
    if (name === this.host.config.defaultAlgorithm)
      throw new TokenRouterError(
        'conflict',
        `${name} is the default algorithm of this server and cannot be deleted (point defaultAlgorithm in the server config at another algorithm and restart first)`,
        'name',
      );
    const removed = this.host.registry.delete(name);
    if (removed === null) throw new TokenRouterError('not_found', `no algorithm named ${name}`, 'name');
    for (const cache of [this.compiled, this.unloadable, this.reported]) for (const key of [...cache.keys()]) if (key.startsWith(`${name}@`)) cache.delete(key);
    return removed;
  }

  /** Builds an algorithm from a stored spec; IR is compiled against the deployed models. */
  instantiate(spec: AlgorithmSpec): Algorithm<unknown> {
    return buildAlgorithm(spec, this.catalog());
  }

  /**
   * Builds the algorithm and proves it runs here: it names its models and this server serves each.
   * Deploys and activations go through this before anything is stored.
   */
  deployable(spec: AlgorithmSpec): Algorithm<unknown> {
    const alg = this.instantiate(spec);
    const models: unknown = alg?.models;
    const field = spec.kind === 'ir' ? 'ir' : 'builtin';
    if (!Array.isArray(models) || models.length === 0 || !models.every((m) => typeof m === 'string')) {
      throw new TokenRouterError('invalid_request', 'the algorithm does not name the models it runs on', field);
    }
    const missing = models.find((m) => !this.host.info(m));
    if (missing !== undefined) {
      throw new TokenRouterError(
        'invalid_request',
        `the algorithm runs on model "${missing}", which this server does not serve (served: ${this.host.config.models.map((m) => m.name).join(', ')})`,
        field,
      );
    }
    refuseMissingHeads(alg, models as string[], this.host.folders, field);
    return alg;
  }

  /**
   * What `name` serves: its active version, or when that one does not load here (stored by an
   * older build, or its models are no longer served), the most recent earlier active version that
   * does; null when none loads. Answering every request with a 500 would take the name down.
   */
  serving(name: string, quiet = false): { algorithm: Algorithm<unknown>; ref: AlgorithmRef; version: number } | null {
    const registry = this.host.registry;
    const active = registry.active(name);
    if (!active) return null;
    const failed: string[] = [];
    for (const v of [active.version, ...registry.activationHistory(name).filter((x) => x !== active.version)]) {
      const key = `${name}@${v}`;
      let served = this.compiled.get(key);
      if (!served) {
        const why = this.unloadable.get(key);
        if (why !== undefined) {
          failed.push(`v${v}: ${why}`);
          continue;
        }
        const spec = v === active.version ? active.spec : registry.version(name, v)?.spec;
        if (!spec) continue;
        try {
          served = { algorithm: this.deployable(spec), ref: { key, source: spec, catalog: this.catalog() } };
        } catch (e) {
          const msg = (e as Error).message;
          this.unloadable.set(key, msg);
          failed.push(`v${v}: ${msg}`);
          continue;
        }
        this.compiled.set(key, served);
      }
      if (failed.length > 0)
        this.report(`${name}@${active.version}>${v}`, `algorithm ${name}: stored version does not load (${failed.join('; ')}); serving v${v} instead`);
      return { ...served, version: v };
    }
    if (!quiet) this.report(`${name}@${active.version}>none`, `algorithm ${name}: no stored version loads (${failed.join('; ')}); it is not served`);
    return null;
  }

  private report(key: string, line: string): void {
    if (this.reported.has(key)) return;
    this.reported.add(key);
    console.error(`[tokenrouter] ${line}`);
  }

  /** The algorithm a request names, at the version active when it arrives (in-flight requests keep theirs). */
  resolve(model: string, draftIr?: unknown): Resolved {
    if (model === 'draft') {
      if (draftIr === undefined)
        throw new TokenRouterError('invalid_request', 'model "draft" needs a tokenrouter_ir field with the IR to run', 'tokenrouter_ir');
      // Admitted before compiling: a flood past the queue is refused without costing compiles.
      this.host.admitOrThrow();
      const served = this.drafts.get(draftIr, (ir, hash) => ({
        algorithm: this.instantiate({ kind: 'ir', ir }),
        ref: { key: `draft:${hash}`, source: { kind: 'ir', ir }, catalog: this.catalog() },
      }));
      return { ...served, name: 'draft', version: null };
    }
    // A model keeps its name over an algorithm stored under it, so a model name never needs the registry (a database read per request).
    if (this.host.info(model)) {
      const key = `single:${model}`;
      let served = this.compiled.get(key);
      if (!served) this.compiled.set(key, (served = { algorithm: buildAlgorithm({ kind: 'single', model }), ref: { key, source: { kind: 'single', model } } }));
      return { ...served, name: model, version: null };
    }
    // What a name serves, read from the registry once per change of it (a deploy, activate, rollback or delete here bumps its generation).
    const registry = this.host.registry;
    const known = this.resolved.get(model);
    if (known && known.generation === registry.generation) return known.served;
    if (registry.active(model)) {
      const generation = registry.generation;
      const s = this.serving(model);
      if (!s)
        throw new TokenRouterError(
          'not_found',
          `The model \`${model}\` has no stored version that loads on this server (see the server log). Available: ${this.modelIds().join(', ')}`,
          'model',
        );
      const served = { algorithm: s.algorithm, ref: s.ref, name: model, version: s.version };
      this.resolved.set(model, { generation, served });
      return served;
    }
    throw new TokenRouterError('not_found', `The model \`${model}\` does not exist. Available: ${this.modelIds().join(', ')}`, 'model');
  }
}
