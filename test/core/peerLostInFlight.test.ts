// A peer that dies right after handing requests back: what it sent still arrives, as if it had seen nothing of them.
import { MessageChannel } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { PortedEngine } from '../../runtime/transport/serveEngine.ts';
import type { EngineSettings, WireArrival } from '../../shared/protocol/engineProtocol.ts';
import { caseRunner } from './threadSim.ts';

const settings: EngineSettings = {
  index: 0,
  models: ['small', 'large'],
  maxBatch: 4,
  maxStepTokens: Infinity,
  threshold: 1,
  kvCapacityTokens: Infinity,
  mode: 'async-immediate',
  retainState: true,
  maxWaitMs: 5,
  prefixCache: false,
  trace: false,
  checkInvariants: false,
  origin: 0,
};
// only what the link reads: a handback from large (model 2) that had seen 7 tokens, small 5
const handback = (id: string) => ({ spec: { id, models: ['small', 'large'] }, known: [0, 5, 7] }) as unknown as WireArrival;
const open: { close(): void }[] = [];
afterEach(() => open.splice(0).forEach((p) => p.close()));

function smallEngine() {
  const entry = new MessageChannel();
  open.push(entry.port1, entry.port2);
  const small = new PortedEngine(entry.port2, settings, caseRunner('small', 0, -1), true, undefined);
  const got: WireArrival[] = [];
  small.arrive = (arrivals) => void got.push(...arrivals);
  return { small, got };
}

describe('a peer lost with handoffs still on its link', () => {
  it('delivers them after peer-lost, with what the dead peer had seen forgotten', async () => {
    const { small, got } = smallEngine();
    const old = new MessageChannel();
    open.push(old.port1, old.port2);
    small.addPeer('large', old.port2);
    // large hands r1 back and dies; the entry's peer-lost reaches small before the handback is read
    old.port1.postMessage({ type: 'arrive', arrivals: [handback('r1')] });
    small.host.peerLost('large');
    await expect.poll(() => got.length).toBe(1);
    expect(got[0].spec.id).toBe('r1');
    // large restarted empty: the next visit there carries the whole sequence
    expect(got[0].known).toEqual([0, 5, 0]);

    // the fresh large's own link is trusted with what it says it has seen
    const fresh = new MessageChannel();
    open.push(fresh.port1, fresh.port2);
    small.addPeer('large', fresh.port2);
    fresh.port1.postMessage({ type: 'arrive', arrivals: [handback('r2')] });
    await expect.poll(() => got.length).toBe(2);
    expect(got[1].known).toEqual([0, 5, 7]);
    small.host.dispose();
  });
});
