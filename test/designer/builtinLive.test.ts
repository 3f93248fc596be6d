// A server whose live r-stitch is the seeded built-in: a fresh page's draft (the bundled example) matches it, Deploy says so, and an edit is one difference.
import { describe, expect, it } from 'vitest';
import { versionIr, type ApiAlgorithm } from '../../designer/src/designer/api.ts';
import { comparableIr } from '../../designer/src/designer/comparableIr.ts';
import { versionDiff } from '../../designer/src/designer/versionDiff.ts';
import { FakeServer, MODELS, rig } from './designerFakes.ts';

const catalog = MODELS.map((m) => ({ ...m }));

/** What a fresh server lists: r-stitch v1 as the built-in it seeds, with default parameters. */
function seededBuiltin(params: Record<string, unknown> = {}): FakeServer {
  const server = new FakeServer();
  const entry: ApiAlgorithm = {
    name: 'r-stitch',
    activeVersion: 1,
    rollbackTo: null,
    isDefault: true,
    served: true,
    versions: [{ version: 1, createdAt: new Date(0).toISOString(), kind: 'builtin', factory: 'r-stitch', params }],
  };
  server.algorithms.push(entry);
  return server;
}

describe('a seeded built-in as the live version', () => {
  it('a fresh draft does not differ from it (a built-in has no IR of its own: compared as its example graph)', async () => {
    const { store, server } = rig({ server: seededBuiltin() });
    await store.start();
    const live = server.algorithms[0].versions[0];
    expect(versionDiff(comparableIr(live, store.getState().catalog), store.compiledIr())).toEqual([]);
    // what the toolbar compared before: nothing against the whole draft ("differs from live v1 in 10 places")
    expect(versionDiff(versionIr(live), store.compiledIr()).length).toBeGreaterThan(5);
  });

  it('Deploy is disabled with the reason while the draft is what runs, and asks with one row after one edit', async () => {
    const { store, server } = rig({ server: seededBuiltin() });
    await store.start();
    expect(store.deployBlocker()).toBe('Live v1 already runs this draft');
    await store.deploy();
    expect(store.getState().confirm).toBeNull();
    store.setParam('tau', 'value', 0.05);
    expect(store.deployBlocker()).toBeNull();
    await store.deploy();
    expect(store.getState().confirm).toMatchObject({
      kind: 'replace',
      liveKind: 'builtin',
      diff: [{ type: 'param', nodeId: 'tau', param: 'value', from: '0.03', to: '0.05' }],
    });
    expect(server.argsOf('deploy')).toEqual([]);
  });

  it('a built-in with parameters of its own has no graph to stand for it', () => {
    const live = seededBuiltin({ tau: 0.1 }).algorithms[0].versions[0];
    expect(comparableIr(live, catalog)).toBeNull();
  });
});
