// Shared pieces of the e2e scripts: a tiny static server for the built timeline, chromium, the designer page, checks and artifacts.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { extname, join, normalize, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

export const ROOT = resolve(import.meta.dirname, '../..');
export const ARTIFACTS = join(ROOT, 'test-artifacts');

const TYPES: Record<string, string> = {
  '.html': 'text/html',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.json': 'application/json',
  '.jsonl': 'application/x-ndjson',
  '.svg': 'image/svg+xml',
};

/**
 * Builds the timeline page alone into test-artifacts/timeline-dist (fresh every run, and independent
 * of the other page's state in the shared tree), with the same Vite setup as designer/vite.config.ts.
 */
export async function buildTimeline(): Promise<string> {
  const { build } = await import('vite');
  const react = (await import('@vitejs/plugin-react')).default;
  const outDir = join(ARTIFACTS, 'timeline-dist');
  await build({
    root: join(ROOT, 'designer'),
    configFile: false,
    logLevel: 'warn',
    plugins: [react()],
    build: { outDir, emptyOutDir: true, rollupOptions: { input: { timeline: join(ROOT, 'designer/timeline.html') } } },
  });
  return outDir;
}

/** Serves a built page folder plus extra in-memory files (e.g. /trace.jsonl) on a free port. */
export async function serveStatic(dist: string, extra: Record<string, string> = {}): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    if (path === '/favicon.ico') {
      res.writeHead(204);
      res.end();
      return;
    }
    if (extra[path] !== undefined) {
      res.writeHead(200, { 'content-type': TYPES[extname(path)] ?? 'text/plain' });
      res.end(extra[path]);
      return;
    }
    const file = normalize(join(dist, path === '/' ? 'timeline.html' : path));
    if (!file.startsWith(dist) || !existsSync(file)) {
      res.writeHead(404);
      res.end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
    res.end(readFileSync(file));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((ok) => server.close(() => ok())) };
}

/** tsx (esbuild keepNames) wraps named functions inside page.evaluate callbacks with __name(): give the page a no-op. */
export const NAME_SHIM = { content: 'window.__name = (f) => f;' };

export function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

/** A 1600×900 page that keeps downloads, with the name shim, collecting page errors. */
export async function newPage(browser: Browser): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1600, height: 900 }, deviceScaleFactor: 1, acceptDownloads: true });
  await page.addInitScript(NAME_SHIM);
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  return { page, errors };
}

/**
 * A 1440×900 page on the designer at `url`, once its store exists and the server has answered, with
 * the name shim, collecting page errors. Shared CI cores can be busy: patient rather than flaky.
 */
export async function openDesigner(browser: Browser, url: string): Promise<{ page: Page; errors: string[] }> {
  const page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
  await page.addInitScript(NAME_SHIM);
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.setDefaultTimeout(60_000);
  page.setDefaultNavigationTimeout(120_000);
  await page.goto(`${url}/`);
  await page.waitForFunction(() => window.__designer !== undefined);
  await page.locator('.conn-server').waitFor();
  return { page, errors };
}

export function artifactPath(name: string): string {
  mkdirSync(ARTIFACTS, { recursive: true });
  return join(ARTIFACTS, name);
}

export function writeArtifact(name: string, data: string): string {
  const p = artifactPath(name);
  writeFileSync(p, data);
  return p;
}

/** Collects pass/fail lines and exits non-zero at the end if anything failed. */
export class Checks {
  failures: string[] = [];
  check(name: string, ok: boolean, detail: unknown = ''): void {
    const d = typeof detail === 'string' ? detail : JSON.stringify(detail);
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${d ? ` — ${d}` : ''}`);
    if (!ok) this.failures.push(name);
  }
  finish(): void {
    if (this.failures.length) {
      console.log(`\n${this.failures.length} check(s) failed: ${this.failures.join('; ')}`);
      process.exitCode = 1;
    } else console.log('\nall checks passed');
  }
}

export const median = (xs: number[]): number => {
  const s = xs.slice().sort((a, b) => a - b);
  return s.length ? s[s.length >> 1] : NaN;
};
export const pct = (xs: number[], p: number): number => {
  const s = xs.slice().sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(s.length * p))] : NaN;
};
