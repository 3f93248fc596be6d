// Faults: exceptions inside route/send/receive fail only their request; a runner killed mid-load fails only what it held, restarts, leaks nothing.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { builtinAlgorithms, builtinFactory } from '../../examples/algorithms/index.ts';
import { standardSend, type Algorithm, type Handoff } from '../../shared/algorithm.ts';
import { VirtualClock } from '../../runtime/clock/virtualClock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import type { RequestResult } from '../../runtime/entry/requestState.ts';
import { TokenRouterError } from '../../runtime/errors.ts';
import { SimRunner } from '../../runtime/runner/simRunner.ts';
import { call, expectNothingLeft, expectStillServing, leftovers, rng, startRig, streamChat, until, type Rig } from './harness.ts';

type Where = 'route' | 'send' | 'receive' | 'target' | 'handoff';

/**
 * small hands to large every third step (discarding), large keeps one token and hands back. Requests
 * whose id starts with "doom-<where>" hit a fault in that function on their second hand-off.
 */
function faulty(byPrompt: ReadonlyMap<number, string>): Algorithm<{ n: number }> {
  const doomed = (id: string, where: Where) => id.startsWith(`doom-${where}-`);
  return {
    name: 'faulty',
    models: ['small', 'large'],
    entry: 1,
    initMeta: () => ({ n: 0 }),
    route(r) {
      // route() sees no request id: the prompt length (position − generated) names the request.
      const id = byPrompt.get(r.position - r.generated) ?? '';
      if (r.model === 2) return 1;
      if (r.stepsHere % 3 !== 0) return 0;
      r.meta.n++;
      if (r.meta.n === 2 && doomed(id, 'route')) throw new Error('route exploded');
      if (r.meta.n === 2 && doomed(id, 'target')) return [99, Number.NaN, 1.5, -1][id.length % 4];
      return 2;
    },
    send(req) {
      if (req.meta.n === 2 && doomed(req.requestId, 'send')) throw new RangeError('send exploded');
      const h = standardSend(req, req.from === 2);
      if (req.meta.n === 2 && doomed(req.requestId, 'handoff')) return { ...h, anchor: h.anchor + 1 };
      return h;
    },
    receive(h: Handoff<{ n: number }>) {
      if (h.meta.n === 2 && h.to === 2 && doomed(h.requestId, 'receive')) throw new Error('receive exploded');
      return { meta: h.meta };
    },
  };
}

describe('algorithm faults (cluster, virtual time, invariants checked every batch)', () => {
  it('an exception or a bad answer in route/send/receive fails that request only, with the function named', async () => {
    const clock = new VirtualClock();
    const small = new SimRunner({ name: 'small', latency: () => 1 });
    const large = new SimRunner({ name: 'large', latency: () => 4 });
    const cluster = new Cluster({
      clock,
      checkInvariants: true,
      maxConcurrency: 16,
      models: [
        { name: 'small', runner: small, kvCapacityTokens: 4000 },
        { name: 'large', runner: large, kvCapacityTokens: 4000 },
      ],
    });
    const byPrompt = new Map<number, string>();
    const alg = faulty(byPrompt);
    const wheres: Where[] = ['route', 'send', 'receive', 'target', 'handoff'];
    const handles: { id: string; done: Promise<RequestResult> }[] = [];
    const r = rng(7);
    for (let i = 0; i < 60; i++) {
      const where = i % 3 === 0 ? wheres[(i / 3) % wheres.length] : null;
      const id = where ? `doom-${where}-${i}` : `ok-${i}`;
      const prompt = Array.from({ length: 5 + i }, () => Math.floor(r() * 900));
      byPrompt.set(prompt.length, id);
      handles.push({ id, done: cluster.submit({ id, prompt, maxTokens: 30, algorithm: alg }).done });
    }
    clock.run();
    const results = await Promise.all(handles.map((h) => h.done));
    let failed = 0;
    for (const res of results) {
      if (res.id.startsWith('ok-')) {
        expect(res.status, res.id).toBe('done');
        expect(res.tokens.length).toBe(30);
        continue;
      }
      failed++;
      const where = res.id.split('-')[1] as Where;
      expect(res.status, res.id).toBe('failed');
      expect(res.error).toBeInstanceOf(TokenRouterError);
      expect((res.error as TokenRouterError).code).toBe('algorithm_error');
      const expected: Record<Where, RegExp> = {
        route: /^faulty\.route: route exploded$/,
        send: /^faulty\.send: send exploded$/,
        receive: /^faulty\.receive: receive exploded$/,
        target: /^faulty\.route: returned .*; expected 0 or a model id in 1\.\.2$/,
        handoff: /^faulty\.send: handoff for .* must go 1→2 at anchor \d+$/,
      };
      expect(res.error!.message).toMatch(expected[where]);
      // It failed at its second hand-off, not before: it had committed tokens.
      expect(res.tokens.length).toBeGreaterThan(0);
    }
    expect(failed).toBe(20);
    expect(cluster.idle).toBe(true);
    for (const l of cluster.laneStats()) expect([l.name, l.kvBytes, l.kvReservedBytes, l.pendingReturn, l.running]).toEqual([l.name, 0, 0, 0, 0]);
    expect([small.liveCaches, large.liveCaches]).toEqual([0, 0]);
  });
});

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

describe('algorithm faults over HTTP', () => {
  it('a deployed algorithm that throws fails its own requests (500 algorithm_error), and concurrent streams finish', async () => {
    // Test-only built-in: R-Stitch's route, throwing on the request's 5th step.
    builtinAlgorithms.set('test-throws', () => {
      const base = builtinFactory('r-stitch')();
      return {
        ...base,
        name: 'test-throws',
        route: (s) =>
          s.generated >= 4
            ? (() => {
                throw new Error('deliberate failure at step 5');
              })()
            : base.route(s),
      } as Algorithm;
    });
    // The server logs every 500 with its stack; collected here instead of flooding the test output.
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    rig = await startRig({ latency: { small: 3, large: 6 } });
    const url = rig.url;
    const dep = await call(`${url}/admin/algorithms/boom/versions`, 'POST', { builtin: 'test-throws', activate: true });
    expect(dep.status, dep.text).toBe(201);
    const good = Array.from({ length: 6 }, (_, i) => streamChat(url, { model: 'r-stitch', messages: [{ role: 'user', content: `${i}*7` }], max_tokens: 20 }));
    const badStream = Array.from({ length: 3 }, (_, i) => streamChat(url, { model: 'boom', messages: [{ role: 'user', content: `${i}*9` }], max_tokens: 20 }));
    const badUnary = Array.from({ length: 3 }, (_, i) =>
      call(`${url}/v1/chat/completions`, 'POST', { model: 'boom', messages: [{ role: 'user', content: `${i}*3` }], max_tokens: 20 }),
    );
    for (const g of await Promise.all(good)) {
      expect(g.status).toBe(200);
      expect(g.error).toBeNull();
      expect(g.done).toBe(true);
      expect(g.finishReason).toBe('length');
    }
    for (const b of await Promise.all(badStream)) {
      // Tokens were streamed before the fault: the error arrives as the stream's last event.
      expect(b.status).toBe(200);
      expect(b.done).toBe(false);
      expect(b.error?.code).toBe('algorithm_error');
      expect(b.error?.message).toBe('test-throws.route: deliberate failure at step 5');
    }
    for (const b of await Promise.all(badUnary)) {
      expect(b.status).toBe(500);
      expect(b.json.error?.code).toBe('algorithm_error');
      expect(b.json.error?.message).toMatch(/test-throws\.route: deliberate failure/);
    }
    await expectStillServing(url);
    await expectNothingLeft(rig.service);
    expect(logged.mock.calls.length).toBeGreaterThanOrEqual(3);
    expect(logged.mock.calls.every((c) => String(c[1]).includes('test-throws.route: deliberate failure at step 5'))).toBe(true);
    logged.mockRestore();
  });
});

describe('a runner killed mid-load (simulated runner with onFailure; the ONNX-worker version is in test/stress)', () => {
  it('fails only the requests holding state on it, refuses new ones with 503 while down, restarts by itself, leaks nothing', async () => {
    let release!: () => void;
    const restartGate = new Promise<void>((r) => (release = r));
    rig = await startRig({
      latency: { small: 3, large: 8 },
      restartGate,
      config: { limits: { maxConcurrency: 32, maxQueue: 64, maxTokens: 256, maxBodyBytes: 2 ** 20 } },
    });
    const s = rig;
    const touched = new Set<string>();
    s.service.trace.subscribe((e) => {
      if (e.type === 'request-state' && e.model === 'large') touched.add(e.requestId);
    });
    const routed = Array.from({ length: 12 }, (_, i) =>
      streamChat(s.url, { model: 'r-stitch', messages: [{ role: 'user', content: `${i + 10}*${i + 3}` }], max_tokens: 80 }),
    );
    const smallOnly = Array.from({ length: 8 }, (_, i) =>
      streamChat(s.url, { model: 'small', messages: [{ role: 'user', content: `${i}*5` }], max_tokens: 80 }),
    );
    const dead = s.runner('large');
    // Kill it when all 20 are in and several hold state there (running or pending-return).
    await until(() => s.service.cluster.activeCount + s.service.cluster.completed >= 20, 20_000);
    await until(() => {
      const l = s.service.cluster.laneStats().find((x) => x.name === 'large')!;
      return l.running + l.pendingReturn >= 3 && l.kvBytes > 0;
    }, 10_000);
    const holding = s.service.cluster.laneStats().find((x) => x.name === 'large')!;
    dead.crash();
    expect(s.service.cluster.inProcessEngine('large')!.down).toBe(true);
    // While it restarts, new work for it is refused with a clear 503; small-only work is served.
    const refused = await call(`${s.url}/v1/chat/completions`, 'POST', { model: 'r-stitch', messages: [{ role: 'user', content: '1*1' }], max_tokens: 4 });
    expect(refused.status).toBe(503);
    expect(refused.json.error?.message).toMatch(/model large is down; retry shortly/);
    const stillSmall = await call(`${s.url}/v1/completions`, 'POST', { model: 'small', prompt: '1*1=', max_tokens: 4 });
    expect(stillSmall.status).toBe(200);
    release();

    const rs = await Promise.all(routed);
    const ss = await Promise.all(smallOnly);
    for (const x of ss) {
      expect(x.error).toBeNull();
      expect(x.finishReason).toBe('length');
    }
    let failed = 0;
    let refusedLate = 0;
    for (const x of rs) {
      if (x.status === 503 && x.error?.message.endsWith('is down; retry shortly')) {
        // Reached the server only after the crash: refused up front, like any new request.
        refusedLate++;
        expect(x.error?.message).toMatch(/^model large is down; retry shortly$/);
      } else if (x.error) {
        // Held state there: a JSON 503 if no token had been streamed yet, else the stream's last event.
        failed++;
        expect(x.error.message).toMatch(/^model large failed: worker crashed \(injected by test\)$|^large step failed: /);
        expect(x.done).toBe(false);
      } else expect(x.finishReason).toBe('length');
    }
    // Everything holding state there when it died failed; nothing else did.
    expect(failed).toBeGreaterThanOrEqual(holding.running + holding.pendingReturn);
    expect(failed).toBeLessThanOrEqual(touched.size);
    await until(() => s.service.restarts.get('large') === 1, 5000);
    expect(s.runner('large')).not.toBe(dead);
    expect(s.service.cluster.inProcessEngine('large')!.down).toBe(false);
    // Back: requests through large are served again.
    await expectStillServing(s.url);
    const again = await streamChat(s.url, { model: 'r-stitch', messages: [{ role: 'user', content: '77*7' }], max_tokens: 60 });
    expect(again.error).toBeNull();
    expect((again.chunks.at(-1) as { tokenrouter: { tokens_by_model: Record<string, number> } }).tokenrouter.tokens_by_model.large).toBeGreaterThan(0);
    await expectNothingLeft(s.service);
    console.log(
      `[runner-crash/sim] in flight 20, holding state on large at the crash ${holding.running + holding.pendingReturn}, failed ${failed}, refused (arrived while down) ${refusedLate}, restarts ${s.service.restarts.get('large')}, leftovers ${JSON.stringify(leftovers(s.service))}`,
    );
  });

  it('survives repeated crashes of either model under continuous load', async () => {
    rig = await startRig({ latency: { small: 2, large: 4 }, restartMs: 20 });
    const s = rig;
    let stop = false;
    const outcomes = { ok: 0, failed: 0, refused: 0 };
    const client = async (i: number) => {
      for (let k = 0; !stop; k++) {
        const r = await streamChat(s.url, { model: k % 3 === 0 ? 'small' : 'r-stitch', messages: [{ role: 'user', content: `${i}*${k}` }], max_tokens: 20 });
        if (r.status === 503) outcomes.refused++;
        else if (r.error) outcomes.failed++;
        else if (r.finishReason === 'length') outcomes.ok++;
        else throw new Error(`unexpected end: ${JSON.stringify(r).slice(0, 300)}`);
        if (r.status === 503) await new Promise((res) => setTimeout(res, 20));
      }
    };
    const clients = Array.from({ length: 6 }, (_, i) => client(i));
    for (const name of ['large', 'small', 'large', 'small', 'large']) {
      await until(() => s.runner(name).rowsStepped > 20 && !s.service.cluster.inProcessEngine(name)!.down, 10_000);
      s.runner(name).crash(`crash of ${name}`);
      await until(() => !s.service.cluster.inProcessEngine(name)!.down, 5000);
    }
    stop = true;
    await Promise.all(clients);
    expect(s.service.restarts.get('large')).toBe(3);
    expect(s.service.restarts.get('small')).toBe(2);
    expect(outcomes.ok).toBeGreaterThan(0);
    console.log(`[runner-crash/repeated] 5 crashes, outcomes ${JSON.stringify(outcomes)}`);
    await expectStillServing(s.url);
    await expectNothingLeft(s.service);
  });
});
