// Versioned algorithm store in SQLite: create versions, activate, roll back, delete; survives restarts and crashes.
import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { ALGORITHM_NAME, type AlgorithmSpec } from '../../shared/api/admin.ts';
import { TokenRouterError } from '../errors.ts';

export interface AlgorithmVersion {
  name: string;
  version: number;
  createdAt: string;
  spec: AlgorithmSpec;
}

export interface AlgorithmEntry {
  name: string;
  activeVersion: number | null;
  versions: AlgorithmVersion[];
}

/**
 * Every change is one SQLite transaction (WAL journal), so a crash mid-deploy leaves each version
 * either fully written or absent, and the active pointer always names a stored version.
 */
export class AlgorithmRegistry {
  private readonly db: Database.Database;
  /**
   * Rises after every change this registry commits (or tries to: a failed transaction changed
   * nothing, but counting it costs nothing). Readers cache what they read under it; one number
   * read per request replaces the database reads. Set after the transaction, on the one thread
   * that runs both, so no reader sees the new number with the old rows.
   */
  generation = 0;

  constructor(dataDir: string) {
    fs.mkdirSync(dataDir, { recursive: true });
    this.db = new Database(path.join(dataDir, 'registry.sqlite'));
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS algorithms (name TEXT PRIMARY KEY, active_version INTEGER);
      CREATE TABLE IF NOT EXISTS versions (
        name TEXT NOT NULL, version INTEGER NOT NULL, created_at TEXT NOT NULL, spec TEXT NOT NULL,
        PRIMARY KEY (name, version));
      CREATE TABLE IF NOT EXISTS activations (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, version INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS deleted (name TEXT PRIMARY KEY, last_version INTEGER NOT NULL);
    `);
  }

  close(): void {
    this.db.close();
  }

  list(): AlgorithmEntry[] {
    const names = this.db.prepare('SELECT name, active_version FROM algorithms ORDER BY name').all() as { name: string; active_version: number | null }[];
    return names.map((n) => ({ name: n.name, activeVersion: n.active_version, versions: this.versions(n.name) }));
  }

  get(name: string): AlgorithmEntry | undefined {
    const row = this.db.prepare('SELECT name, active_version FROM algorithms WHERE name = ?').get(name) as
      | { name: string; active_version: number | null }
      | undefined;
    return row && { name: row.name, activeVersion: row.active_version, versions: this.versions(name) };
  }

  versions(name: string): AlgorithmVersion[] {
    const rows = this.db.prepare('SELECT name, version, created_at, spec FROM versions WHERE name = ? ORDER BY version').all(name) as {
      name: string;
      version: number;
      created_at: string;
      spec: string;
    }[];
    return rows.map((r) => ({ name: r.name, version: r.version, createdAt: r.created_at, spec: JSON.parse(r.spec) as AlgorithmSpec }));
  }

  version(name: string, version: number): AlgorithmVersion | undefined {
    const r = this.db.prepare('SELECT name, version, created_at, spec FROM versions WHERE name = ? AND version = ?').get(name, version) as
      | { name: string; version: number; created_at: string; spec: string }
      | undefined;
    return r && { name: r.name, version: r.version, createdAt: r.created_at, spec: JSON.parse(r.spec) as AlgorithmSpec };
  }

  active(name: string): AlgorithmVersion | undefined {
    const e = this.db.prepare('SELECT active_version FROM algorithms WHERE name = ?').get(name) as { active_version: number | null } | undefined;
    return e?.active_version ? this.version(name, e.active_version) : undefined;
  }

  /** Versions that have been active, most recent first, each once; the current one leads. */
  activationHistory(name: string): number[] {
    const rows = this.db.prepare('SELECT version FROM activations WHERE name = ? ORDER BY id DESC').all(name) as { version: number }[];
    return [...new Set(rows.map((r) => r.version))];
  }

  /** The version `rollback` would re-activate now, or null when it would refuse. */
  rollbackTarget(name: string): number | null {
    const rows = this.db.prepare('SELECT version FROM activations WHERE name = ? ORDER BY id DESC LIMIT 2').all(name) as { version: number }[];
    return rows[1]?.version ?? null;
  }

  /**
   * Stores a new version (next number); activates it when `activate` is true. One transaction.
   * Numbers continue past a deleted algorithm's: a built `name@version` cached anywhere (engine
   * threads keep theirs) can never stand for a different spec.
   */
  createVersion(name: string, spec: AlgorithmSpec, opts: { activate?: boolean } = {}): AlgorithmVersion {
    if (!ALGORITHM_NAME.test(name)) throw new TokenRouterError('invalid_request', `algorithm name "${name}" must match ${ALGORITHM_NAME}`, 'name');
    const tx = this.changes(() => {
      this.db.prepare('INSERT OR IGNORE INTO algorithms (name, active_version) VALUES (?, NULL)').run(name);
      const { v } = this.db
        .prepare(
          'SELECT MAX(COALESCE((SELECT MAX(version) FROM versions WHERE name = @name), 0), COALESCE((SELECT last_version FROM deleted WHERE name = @name), 0)) + 1 AS v',
        )
        .get({ name }) as { v: number };
      const createdAt = new Date().toISOString();
      this.db.prepare('INSERT INTO versions (name, version, created_at, spec) VALUES (?, ?, ?, ?)').run(name, v, createdAt, JSON.stringify(spec));
      if (opts.activate) this.setActive(name, v);
      return { name, version: v, createdAt, spec };
    });
    return tx();
  }

  /** Stores a built-in as v1, active, unless the name exists or was ever deleted (a deleted built-in stays deleted). */
  seed(name: string, spec: AlgorithmSpec): void {
    this.changes(() => {
      if (this.get(name) || this.db.prepare('SELECT 1 FROM deleted WHERE name = ?').get(name)) return;
      this.createVersion(name, spec, { activate: true });
    })();
  }

  /** Removes the algorithm, its versions and activation history in one transaction; the number of versions removed, or null when there was none. */
  delete(name: string): number | null {
    return this.changes(() => {
      const versions = this.versions(name);
      if (!this.get(name)) return null;
      const last = Math.max(0, ...versions.map((v) => v.version));
      this.db
        .prepare(
          'INSERT INTO deleted (name, last_version) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET last_version = MAX(last_version, excluded.last_version)',
        )
        .run(name, last);
      for (const table of ['versions', 'activations', 'algorithms']) this.db.prepare(`DELETE FROM ${table} WHERE name = ?`).run(name);
      return versions.length;
    })();
  }

  activate(name: string, version: number): void {
    if (!this.version(name, version)) throw new TokenRouterError('not_found', `algorithm ${name} has no version ${version}`, 'version');
    this.changes(() => this.setActive(name, version))();
  }

  /** Re-activates the version that was active before the current one. */
  rollback(name: string): number {
    const tx = this.changes(() => {
      const hist = this.db.prepare('SELECT id, version FROM activations WHERE name = ? ORDER BY id DESC').all(name) as { id: number; version: number }[];
      if (hist.length < 2) throw new TokenRouterError('invalid_request', `algorithm ${name} has no earlier active version to roll back to`, 'name');
      // Drop the current activation so that repeated rollbacks walk further back.
      this.db.prepare('DELETE FROM activations WHERE id = ?').run(hist[0].id);
      const prev = hist[1].version;
      this.db.prepare('UPDATE algorithms SET active_version = ? WHERE name = ?').run(prev, name);
      return prev;
    });
    return tx();
  }

  /** A write transaction whose end (committed or not) moves `generation` on. */
  private changes<T>(fn: () => T): () => T {
    const tx = this.db.transaction(fn);
    return () => {
      try {
        return tx();
      } finally {
        this.generation++;
      }
    };
  }

  private setActive(name: string, version: number): void {
    this.db.prepare('UPDATE algorithms SET active_version = ? WHERE name = ?').run(version, name);
    this.db.prepare('INSERT INTO activations (name, version) VALUES (?, ?)').run(name, version);
  }
}
