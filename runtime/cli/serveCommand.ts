// `tokenrouter serve`: loads the config, starts the models and the server, prints where everything is.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { withCommandLineKeys } from '../config/apiKeyConfig.ts';
import { loadServerConfig, type ServerConfig } from '../config/serverConfig.ts';
import { TokenRouterError } from '../errors.ts';
import { startServer } from '../http/createServer.ts';
import { authRequired, isLoopbackHost } from '../http/adminAuth.ts';
import { TokenRouterService } from '../http/tokenRouterService.ts';
import { parseFlags } from '../util/cliFlags.ts';

/** One line naming the port and how to pick another, for the errors a listen can end in. */
function listenError(e: unknown, host: string, port: number): unknown {
  const code = (e as { code?: string }).code;
  const how = 'pick another with --port N or PORT=N (npm start -- --port 9000)';
  if (code === 'EADDRINUSE') return new TokenRouterError('unavailable', `port ${port} on ${host} is already in use: ${how}`, 'port');
  if (code === 'EACCES') return new TokenRouterError('unavailable', `no permission to listen on port ${port} on ${host}: ${how}`, 'port');
  if (code === 'EADDRNOTAVAIL') return new TokenRouterError('unavailable', `address ${host} is not on this machine: pick another with --host ADDR`, 'host');
  return e;
}

/** Binds and releases the port, so a busy port is reported before the models load. */
async function checkPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', (e) => reject(listenError(e, host, port)));
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

/** A missing model folder as one line naming the config key that points at it. */
function checkModelFolders(config: ServerConfig, file: string | undefined): void {
  for (const [i, m] of config.models.entries()) {
    const dir = m.path ?? path.join(config.modelsDir, m.name);
    // A remote model's folder lives on its sub-server's host.
    if (m.remote) continue;
    if (fs.existsSync(dir) && fs.statSync(dir).isDirectory()) continue;
    const key = m.path !== undefined ? `models[${i}].path` : 'modelsDir';
    const where = file ? `set "${key}" in ${file}` : `pass --config FILE with "${key}"`;
    throw new TokenRouterError('not_found', `${key}: no model folder for "${m.name}" at ${dir}; ${where}`, key);
  }
}

/** The one line a server reachable from other machines with an open /v1 prints at start. */
/** What the start-up log says before loading: where the data lives and each model's folder (or its sub-server). */
export function loadingLines(config: ServerConfig): string[] {
  const width = Math.max(...config.models.map((m) => m.name.length), 6);
  return [
    `dataDir ${config.dataDir}   (algorithm store, admin token)`,
    `loading ${config.models.length} models …`,
    ...config.models.map((m) => `  ${m.name.padEnd(width)} ${m.remote ? `remote, over ${m.remote.nats}` : (m.path ?? path.join(config.modelsDir, m.name))}`),
  ];
}

export function openApiWarning(config: ServerConfig, url: string): string | null {
  if (config.apiKeys.length > 0 || isLoopbackHost(config.host)) return null;
  return `warning: ${url}/v1 needs no API key: anyone who can reach this address can use the models; set --api-key KEY, TOKENROUTER_API_KEY or "apiKeys" in the config`;
}

/**
 * Under npm (`npm start`, `npx tokenrouter serve`) a shell may sit between npm and this process:
 * npm passes a SIGTERM to the shell, which dies without passing it on, and this process would be
 * left serving with no parent. So when the process that launched it goes, it stops as on SIGTERM.
 * Only under npm: a server started with `nohup … &` is meant to outlive its shell.
 */
export function watchLauncher(stop: () => void, env: NodeJS.ProcessEnv = process.env, intervalMs = 250): (() => void) | null {
  if (env.npm_lifecycle_event === undefined) return null;
  const launcher = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === launcher) return;
    clearInterval(timer);
    stop();
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

export async function serveCommand(args: string[]): Promise<number> {
  const { values } = parseFlags({
    args,
    options: { config: { type: 'string' }, port: { type: 'string' }, host: { type: 'string' }, 'api-key': { type: 'string', multiple: true } },
  });
  const config = loadServerConfig(values.config);
  config.apiKeys = withCommandLineKeys(config.apiKeys, values['api-key'], process.env.TOKENROUTER_API_KEY);
  const portText = values.port ?? process.env.PORT;
  if (portText !== undefined) {
    const port = Number(portText);
    if (!Number.isInteger(port) || port < 0 || port > 65535)
      throw new TokenRouterError('invalid_request', `port must be an integer 0–65535, got "${portText}"`, 'port');
    config.port = port;
  }
  if (values.host) config.host = values.host;
  // Both checks come before loading any model: loading takes a while, and either failure would waste it.
  checkModelFolders(config, values.config);
  await checkPortFree(config.host, config.port);
  for (const line of loadingLines(config)) console.log(line);
  const service = await TokenRouterService.start(config);
  for (const p of service.memory.models)
    console.log(`  ${p.name.padEnd(8)} weights ${(p.weightBytes / 2 ** 20).toFixed(1)} MiB, KV ${(p.kvBytes / 2 ** 20).toFixed(1)} MiB (${p.kvTokens} tokens)`);
  let srv: Awaited<ReturnType<typeof startServer>>;
  try {
    srv = await startServer(service);
  } catch (e) {
    // Another process may have taken the port while the models loaded.
    await service.close();
    throw listenError(e, config.host, config.port);
  }
  console.log(`\nTokenRouter is serving (${config.scheduling.mode}, retainState ${config.scheduling.retainState})`);
  // The pages keep a token given in the fragment and drop it from the address bar and history.
  const tokenLink = authRequired(config) ? `#token=${encodeURIComponent(service.adminToken)}` : '';
  console.log(`  designer   ${srv.url}/${tokenLink}`);
  console.log(`  timeline   ${srv.url}/timeline${tokenLink}`);
  console.log(`  OpenAI API ${srv.url}/v1   models: ${service.algorithms.modelIds().join(', ')}`);
  if (config.apiKeys.length > 0)
    console.log(`  API keys   ${config.apiKeys.map((k) => k.name).join(', ')}   (Authorization: Bearer KEY; the admin token passes too)`);
  console.log(`  metrics    ${srv.url}/metrics`);
  console.log(`  health     ${srv.url}/health   ${srv.url}/healthz`);
  if (authRequired(config)) console.log(`  admin token: ${service.adminToken}   (Authorization: Bearer …)`);
  else console.log('  admin API open on loopback (dev mode); set "dev": false or bind elsewhere to require the token');
  const warning = openApiWarning(config, srv.url);
  if (warning) console.warn(warning);
  // Drains as the sub-server does: running requests finish (or end with an error at the deadline),
  // new ones get 503 meanwhile; a second signal ends the grace period at once.
  let stopping = false;
  const stop = async () => {
    if (stopping) return srv.endDrainNow();
    stopping = true;
    const grace = config.limits.shutdownGraceMs;
    console.log(`\ndraining: new requests get 503; running ones have up to ${grace} ms (limits.shutdownGraceMs; a second signal ends them now) …`);
    const r = await srv.drain(grace);
    console.log(
      r.ended > 0
        ? `grace period over after ${Math.round(r.waitedMs)} ms: ${r.running - r.ended} of ${r.running} requests finished, ${r.ended} ended with an error`
        : `drained: ${r.running} running requests finished in ${Math.round(r.waitedMs)} ms`,
    );
    console.log('shutting down …');
    await srv.close();
    await service.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
  watchLauncher(() => {
    console.log('\nthe npm process that started this server has exited: stopping as on SIGTERM');
    void stop();
  });
  return new Promise<number>(() => {});
}
