// `tokenrouter serve`: loads the config, starts the models and the server, prints where everything is.
import { parseArgs } from 'node:util';
import { loadServerConfig } from '../config/serverConfig.ts';
import { TokenRouterError } from '../errors.ts';
import { startServer } from '../server/createServer.ts';
import { authRequired } from '../server/adminAuth.ts';
import { TokenRouterService } from '../serve/tokenRouterService.ts';

export async function serveCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { config: { type: 'string' }, port: { type: 'string' }, host: { type: 'string' } } });
  const config = loadServerConfig(values.config);
  const portText = values.port ?? process.env.PORT;
  if (portText !== undefined) {
    const port = Number(portText);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new TokenRouterError('invalid_request', `port must be an integer 0–65535, got "${portText}"`, 'port');
    config.port = port;
  }
  if (values.host) config.host = values.host;
  console.log(`loading ${config.models.length} models from ${config.modelsDir} …`);
  const service = await TokenRouterService.start(config);
  for (const p of service.memoryPlan) console.log(`  ${p.name.padEnd(8)} weights ${(p.weightBytes / 2 ** 20).toFixed(1)} MiB, KV ${(p.kvBytes / 2 ** 20).toFixed(1)} MiB (${p.kvTokens} tokens)`);
  const srv = await startServer(service);
  console.log(`\nTokenRouter is serving (${config.scheduling.mode}, retainState ${config.scheduling.retainState})`);
  console.log(`  designer   ${srv.url}/`);
  console.log(`  timeline   ${srv.url}/timeline`);
  console.log(`  OpenAI API ${srv.url}/v1   models: ${service.modelIds().join(', ')}`);
  console.log(`  metrics    ${srv.url}/metrics`);
  if (authRequired(config)) console.log(`  admin token: ${service.adminToken}   (Authorization: Bearer …)`);
  else console.log('  admin API open on loopback (dev mode); set "dev": false or bind elsewhere to require the token');
  const stop = async () => {
    console.log('\nshutting down …');
    await srv.close();
    await service.close();
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return new Promise<number>(() => {});
}
