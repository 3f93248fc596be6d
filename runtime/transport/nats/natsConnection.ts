// Opens a NATS connection with the transport's defaults: reconnect forever, token or credentials file auth.
import fs from 'node:fs';
import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { RemoteRunnerError } from './remoteRunnerError.ts';

export interface NatsAuthOptions {
  /** nats://host:port, or several separated by commas (a NATS cluster). */
  servers: string;
  token?: string;
  /** A NATS .creds file (JWT + nkey seed), as `nsc` writes them. */
  credsFile?: string;
}

export async function openNats(opts: NatsAuthOptions & { name: string; connectTimeoutMs?: number }): Promise<NatsConnection> {
  const servers = opts.servers
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  let authenticator: ReturnType<typeof credsAuthenticator> | undefined;
  if (opts.credsFile) {
    try {
      authenticator = credsAuthenticator(fs.readFileSync(opts.credsFile));
    } catch (e) {
      throw new RemoteRunnerError('protocol', `cannot read NATS credentials ${opts.credsFile}: ${(e as Error).message}`);
    }
  }
  try {
    return await connect({
      servers,
      name: opts.name,
      token: opts.token,
      authenticator,
      // a sub-server or entry outlives NATS restarts: the client resubscribes by itself (what may wait for it is
      // bounded by the entry: RemoteEngine refuses new requests while cut off, and fails held ones past unreachableAfterMs)
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      timeout: opts.connectTimeoutMs ?? 10_000,
    });
  } catch (e) {
    throw new RemoteRunnerError('no_replicas', `cannot connect to NATS at ${servers.join(',')}: ${(e as Error).message}`, { cause: e });
  }
}

/** Calls `down` when the link to NATS drops and `up` when the client has reconnected (it does so by itself). */
export function watchLink(nc: NatsConnection, on: { down(): void; up(): void }): void {
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') on.down();
      else if (status.type === 'reconnect') on.up();
    }
  })();
}
