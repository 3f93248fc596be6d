// Runs a TypeScript file in a child Node process (through tsx) and reads the JSON on the last line it prints.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

/**
 * `what` names the child in the error when it exits without a JSON line (its stderr, or its stdout, is
 * quoted). `stdin`: text written to the child's standard input, which is then closed.
 */
export function runTsChild<T>(script: string, args: readonly string[], opts: { what: string; stdin?: string }): Promise<T> {
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm')).href;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', tsx, script, ...args], { stdio: [opts.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => {
      try {
        resolve(JSON.parse(out.trim().split('\n').pop() ?? '') as T);
      } catch {
        reject(new Error(`${opts.what} exited with ${code}: ${err.trim().slice(0, 800) || out.slice(0, 800)}`));
      }
    });
    if (opts.stdin !== undefined) child.stdin!.end(opts.stdin);
  });
}
