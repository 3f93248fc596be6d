// The registry flow through the designer store on a fake server: deploy, replace only after a yes (also when a stale list hid the name), rollback onto the canvas, delete but not the default.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../designer/src/designer/api.ts';
import type { IrIssue } from '../../shared/ir/irIssue.ts';
import { exampleGraph, FakeServer, irOf, rig } from './designerFakes.ts';

const withTau = (value: number) => {
  const g = exampleGraph();
  g.nodes.find((n) => n.id === 'tau')!.params.value = value;
  return g;
};

const tauRow = (from: string, to: string) => ({ type: 'param', nodeId: 'tau', nodeType: 'constant', param: 'value', from, to });

/** A server holding r-stitch v1 (tau 0.03, the example as it is). */
function seeded(): FakeServer {
  const server = new FakeServer();
  server.store('r-stitch', irOf(exampleGraph()));
  return server;
}

describe('registry flow: deploy', () => {
  it('deploys a new name with replace: false and makes the graph the save point', async () => {
    const { store, server } = rig();
    await store.start();
    store.setDescription('first');
    expect(store.getState().dirty).toBe(true);
    await store.deploy();
    const [[name, ir, replace]] = server.argsOf('deploy');
    expect([name, replace]).toEqual(['r-stitch', false]);
    expect(ir).toEqual(irOf({ ...exampleGraph(), description: 'first' }));
    const s = store.getState();
    expect(s.deploy).toEqual({ status: 'deployed', name: 'r-stitch', version: 1 });
    expect(s.confirm).toBeNull();
    expect(s.dirty).toBe(false);
    expect(s.registry.algorithms.map((a) => [a.name, a.activeVersion])).toEqual([['r-stitch', 1]]);
    expect(s.toast?.text).toBe('Deployed r-stitch v1');
  });

  it('asks before deploying over an existing name, with the diff from live; cancel sends nothing, yes sends replace: true', async () => {
    const { store, server } = rig({ server: seeded() });
    await store.start();
    store.setParam('tau', 'value', 0.05);
    await store.deploy();
    expect(server.argsOf('deploy')).toEqual([]);
    expect(store.getState().confirm).toEqual({
      kind: 'replace',
      name: 'r-stitch',
      live: 1,
      liveKind: 'ir',
      versions: 1,
      next: 2,
      diff: [tauRow('0.03', '0.05')],
    });
    store.cancelConfirm();
    expect(store.getState().confirm).toBeNull();
    expect(server.argsOf('deploy')).toEqual([]);
    expect(store.getState().deploy.status).toBe('idle');

    await store.deploy();
    expect(store.getState().confirm?.kind).toBe('replace');
    await store.confirm();
    expect(server.argsOf('deploy').map(([name, , replace]) => [name, replace])).toEqual([['r-stitch', true]]);
    expect(store.getState().deploy).toEqual({ status: 'deployed', name: 'r-stitch', version: 2 });
    expect(server.algorithms[0].activeVersion).toBe(2);
  });

  it('re-asks when a stale list hid the name and the server answers 409', async () => {
    const server = new FakeServer();
    const { store } = rig({ server });
    await store.start();
    server.store('r-stitch', irOf(withTau(0.02))); // deployed from elsewhere after the page loaded its list
    await store.deploy();
    expect(server.argsOf('deploy').map(([, , replace]) => replace)).toEqual([false]);
    const s = store.getState();
    expect(s.confirm).toEqual({ kind: 'replace', name: 'r-stitch', live: 1, liveKind: 'ir', versions: 1, next: 2, diff: [tauRow('0.02', '0.03')] });
    expect(s.deploy.status).toBe('idle');
    expect(s.toast).toBeNull();
    await store.confirm();
    expect(server.argsOf('deploy').map(([, , replace]) => replace)).toEqual([false, true]);
    expect(store.getState().deploy).toEqual({ status: 'deployed', name: 'r-stitch', version: 2 });
  });

  it('shows the server’s per-node issues when it refuses the graph', async () => {
    const server = new FakeServer();
    const issue: IrIssue = { nodeId: 'tau', code: 'param_out_of_range', message: 'tau is out of range', fix: 'use 0..1', severity: 'error' };
    server.fail('deploy', new ApiError('invalid IR', 400, 'invalid_ir', 'ir', [issue]));
    const { store } = rig({ server });
    await store.start();
    await store.deploy();
    const s = store.getState();
    expect(s.deploy).toEqual({ status: 'failed', name: 'r-stitch', message: 'invalid IR (400)' });
    expect(s.issues).toContainEqual(issue);
    expect(s.errorCount).toBe(1);
    expect(store.deployBlocker()).toBe('Fix 1 error first');
  });

  it('does not deploy a graph named "draft" or one with errors', async () => {
    const { store, server } = rig();
    store.setName('draft');
    await store.deploy();
    store.setName('ok');
    store.remove(['start'], []);
    await store.deploy();
    expect(server.argsOf('deploy')).toEqual([]);
  });
});

describe('registry flow: rollback', () => {
  it('asks (from, to, diff), and after the yes the canvas holds the live version', async () => {
    const server = seeded();
    server.store('r-stitch', irOf(withTau(0.05)));
    const { store } = rig({ server, graph: withTau(0.05) });
    await store.start();
    store.rollback('r-stitch');
    expect(server.argsOf('rollback')).toEqual([]);
    expect(store.getState().confirm).toEqual({ kind: 'rollback', name: 'r-stitch', from: 2, to: 1, toKind: 'ir', diff: [tauRow('0.05', '0.03')] });
    await store.confirm();
    expect(server.argsOf('rollback')).toEqual([['r-stitch']]);
    const s = store.getState();
    expect(s.graph.nodes.find((n) => n.id === 'tau')!.params.value).toBe(0.03);
    expect(s.dirty).toBe(false);
    expect(s.registry.algorithms[0].activeVersion).toBe(1);
    expect(s.toast?.text).toBe('Rolled back: r-stitch v1 is live and on the canvas');
  });

  it('leaves the canvas alone when it holds another algorithm, and sends nothing on cancel', async () => {
    const server = seeded();
    server.store('r-stitch', irOf(withTau(0.05)));
    const { store } = rig({ server, graph: { ...withTau(0.09), name: 'mine' } });
    await store.start();
    store.rollback('r-stitch');
    store.cancelConfirm();
    expect(server.argsOf('rollback')).toEqual([]);
    store.rollback('r-stitch');
    await store.confirm();
    expect(store.getState().graph.name).toBe('mine');
    expect(store.getState().graph.nodes.find((n) => n.id === 'tau')!.params.value).toBe(0.09);
    expect(store.getState().toast?.text).toBe('Rolled back: r-stitch v1 is live');
  });

  it('says so when there is nothing to roll back to', async () => {
    const { store, server } = rig({ server: seeded() });
    await store.start();
    store.rollback('r-stitch');
    expect(store.getState().confirm).toBeNull();
    expect(store.getState().toast).toMatchObject({ kind: 'error', text: 'r-stitch has no earlier active version to roll back to' });
    expect(server.argsOf('rollback')).toEqual([]);
  });
});

describe('registry flow: delete', () => {
  it('asks, then deletes and drops the name from the list', async () => {
    const server = seeded();
    server.store('other', irOf(exampleGraph()));
    server.store('other', irOf(withTau(0.05)));
    const { store } = rig({ server });
    await store.start();
    store.deleteAlgorithm('other');
    expect(store.getState().confirm).toEqual({ kind: 'delete', name: 'other', live: 2, versions: 2 });
    expect(server.argsOf('remove')).toEqual([]);
    await store.confirm();
    expect(server.argsOf('remove')).toEqual([['other']]);
    expect(store.getState().registry.algorithms.map((a) => a.name)).toEqual(['r-stitch']);
    expect(store.getState().toast?.text).toBe('Deleted other (2 versions)');
  });

  it('refuses the default algorithm without asking or calling the server', async () => {
    const server = new FakeServer();
    server.algorithms.push({
      name: 'citer',
      activeVersion: 1,
      rollbackTo: null,
      isDefault: true,
      served: true,
      versions: [{ version: 1, createdAt: '2025-01-01T00:00:00.000Z', kind: 'builtin', factory: 'citer', params: {} }],
    });
    const { store } = rig({ server });
    await store.start();
    store.deleteAlgorithm('citer');
    expect(store.getState().confirm).toBeNull();
    expect(store.getState().toast).toMatchObject({ kind: 'error', text: "citer is the server's default algorithm and cannot be deleted" });
    expect(server.argsOf('remove')).toEqual([]);
  });
});
