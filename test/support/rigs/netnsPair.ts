// A private network namespace joined to this one by a veth pair (tests and benches of cross-host serving on one machine).
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';

export interface NetnsPair {
  /** Namespace name. */
  ns: string;
  /** Address of this (the calling) namespace's end of the veth. */
  hostIp: string;
  /** Address of the namespace's end. */
  nsIp: string;
  hostIf: string;
  /** Prefix for spawning a command inside the namespace: [cmd, ...args] → ip netns exec NS cmd args. */
  wrap(cmd: string, args: readonly string[]): [string, string[]];
  destroy(): void;
}

function ip(args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Why `ip netns` cannot be used here, or null when it can (we are root and the kernel allows it). */
export function netnsUnavailableReason(): string | null {
  const probe = `trprobe${crypto.randomBytes(3).toString('hex')}`;
  try {
    ip(['netns', 'add', probe]);
  } catch (e) {
    return `ip netns add failed: ${((e as { stderr?: string }).stderr ?? (e as Error).message).trim()}`;
  }
  try {
    ip(['netns', 'del', probe]);
  } catch {
    // best effort
  }
  return null;
}

const live = new Set<NetnsPair>();
let exitHook = false;

/**
 * Creates namespace + veth with a random /30 in 10.200.0.0/13 (checked unused here), addresses on
 * the veth only: no route, NAT or bridge to anything outside the machine. `destroy()` removes both;
 * an exit hook removes whatever a crashed run left.
 */
export function createNetnsPair(): NetnsPair {
  const tag = crypto.randomBytes(3).toString('hex');
  const ns = `tr-${tag}`;
  const hostIf = `trv${tag}h`;
  const nsIf = `trv${tag}n`;
  const used = ip(['-o', '-4', 'addr', 'show']);
  let a = 0;
  let b = 0;
  let c = 0;
  for (let i = 0; i < 50; i++) {
    a = 200 + crypto.randomInt(8);
    b = crypto.randomInt(256);
    c = crypto.randomInt(64) * 4;
    if (!used.includes(`10.${a}.${b}.`)) break;
  }
  const hostIp = `10.${a}.${b}.${c + 1}`;
  const nsIp = `10.${a}.${b}.${c + 2}`;
  let created = false;
  const pair: NetnsPair = {
    ns,
    hostIp,
    nsIp,
    hostIf,
    wrap: (cmd, args) => ['ip', ['netns', 'exec', ns, cmd, ...args]],
    destroy: () => {
      live.delete(pair);
      try {
        ip(['link', 'del', hostIf]);
      } catch {
        // already gone with the namespace
      }
      try {
        ip(['netns', 'del', ns]);
      } catch {
        // never created
      }
    },
  };
  try {
    ip(['netns', 'add', ns]);
    created = true;
    live.add(pair);
    if (!exitHook) {
      exitHook = true;
      process.once('exit', () => {
        for (const p of [...live]) p.destroy();
      });
    }
    ip(['link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf]);
    ip(['link', 'set', nsIf, 'netns', ns]);
    ip(['addr', 'add', `${hostIp}/30`, 'dev', hostIf]);
    ip(['link', 'set', hostIf, 'up']);
    ip(['netns', 'exec', ns, 'ip', 'addr', 'add', `${nsIp}/30`, 'dev', nsIf]);
    ip(['netns', 'exec', ns, 'ip', 'link', 'set', nsIf, 'up']);
    ip(['netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up']);
  } catch (e) {
    if (created) pair.destroy();
    throw new Error(`cannot set up network namespace ${ns}: ${((e as { stderr?: string }).stderr ?? (e as Error).message).trim()}`);
  }
  return pair;
}
