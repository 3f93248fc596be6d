// Starts a worker thread that runs a TypeScript module (workers inherit no loader, so register tsx first).
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

export function startTsWorker(modulePath: string, workerData: unknown): Worker {
  const tsxApi = pathToFileURL(
    createRequire(import.meta.url)
      .resolve('tsx/esm/api')
      .replace(/index\.cjs$/, 'index.mjs'),
  ).href;
  const url = pathToFileURL(modulePath).href;
  const src = `import(${JSON.stringify(tsxApi)}).then((m) => { m.register(); return import(${JSON.stringify(url)}); })`;
  return new Worker(src, { eval: true, workerData });
}
