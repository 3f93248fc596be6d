// A deployment's engines begin together: a MessageChannel between every pair that take ports (threads), then each its settings.
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import type { EngineHandle } from './engineHandle.ts';
import type { EngineEntry, EngineSettings } from '../core/messages.ts';

/** Starts a deployment: a channel between every pair of engines that take ports (threads), then each begins with its ports. */
export function beginEngines(starts: readonly { engine: EngineHandle; settings: EngineSettings }[], entry: EngineEntry): void {
  const peers = starts.map(() => ({}) as Record<string, MessagePort>);
  for (let a = 0; a < starts.length; a++) {
    for (let b = a + 1; b < starts.length; b++) {
      if (!starts[a].engine.acceptsPorts || !starts[b].engine.acceptsPorts) continue;
      const ch = new MessageChannel();
      peers[a][starts[b].engine.name] = ch.port1;
      peers[b][starts[a].engine.name] = ch.port2;
    }
  }
  starts.forEach((s, k) => s.engine.begin(s.settings, peers[k], entry));
}

/** A restarted engine takes the place of a dead one: fresh channels to every other engine that takes ports. */
export function rejoinEngine(fresh: EngineHandle, settings: EngineSettings, engines: readonly EngineHandle[], entry: EngineEntry): void {
  const peers: Record<string, MessagePort> = {};
  if (fresh.acceptsPorts) {
    for (const other of engines) {
      if (other === fresh || !other.acceptsPorts) continue;
      const ch = new MessageChannel();
      peers[other.name] = ch.port1;
      other.addPeer(fresh.name, ch.port2);
    }
  }
  fresh.begin(settings, peers, entry);
}
