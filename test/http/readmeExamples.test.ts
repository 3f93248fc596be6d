// Every request example in the README and docs/api.md, run against the models they were written for (the bundled word-problem family): each curl block's answer must contain the JSON block shown after it, and the client example must print the text shown.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadServerConfig } from '../../runtime/config/serverConfig.ts';
import { startServer, type RunningServer } from '../../runtime/http/createServer.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const README_URL = 'http://127.0.0.1:8080';

interface Block {
  lang: string;
  body: string;
  line: number;
}

/** The fenced code blocks of a Markdown text, in order. */
function fencedBlocks(text: string): Block[] {
  const out: Block[] = [];
  const re = /^```(\w*)\n([\s\S]*?)^```$/gm;
  for (let m = re.exec(text); m; m = re.exec(text)) out.push({ lang: m[1], body: m[2], line: text.slice(0, m.index).split('\n').length });
  return out;
}

/** A README curl block as a request: its path and its -d body. */
function curlRequest(body: string): { path: string; json: unknown } {
  const url = /curl -s (\S+)/.exec(body)?.[1];
  const data = /-d '([\s\S]*?)'/.exec(body)?.[1];
  if (!url?.startsWith(README_URL) || data === undefined) throw new Error(`not a curl example this test can run:\n${body}`);
  return { path: url.slice(README_URL.length), json: JSON.parse(data) };
}

/** The documents whose examples run here; each example's answer is the block after it in the same document. */
const DOCS = ['README.md', 'docs/api.md'];
const examples = DOCS.map((doc) => ({ doc, blocks: fencedBlocks(fs.readFileSync(path.join(ROOT, doc), 'utf8')) }));
const curls = examples.flatMap(({ doc, blocks }) =>
  blocks.flatMap((b, i) => (b.lang === 'bash' && /curl -s http/.test(b.body) ? [{ at: `${doc}:${b.line}`, block: b, shown: blocks[i + 1] }] : [])),
);
const clients = examples.flatMap(({ doc, blocks }) =>
  blocks.flatMap((b, i) => (b.lang === 'ts' && b.body.includes("from 'openai'") ? [{ at: `${doc}:${b.line}`, block: b, shown: blocks[i + 1] }] : [])),
);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-readme-'));
let service: TokenRouterService;
let srv: RunningServer;

beforeAll(async () => {
  const config = { ...loadServerConfig(undefined), port: 0, dataDir: path.join(tmp, 'data'), modelsDir: path.join(ROOT, 'examples/models') };
  service = await TokenRouterService.start(config);
  srv = await startServer(service, 0, '127.0.0.1');
}, 120_000);
afterAll(async () => {
  await srv?.close();
  await service?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe("the README's and docs/api.md's examples", () => {
  it('has the examples this test runs', () => {
    expect(curls.filter((c) => c.at.startsWith('README.md:')).length).toBeGreaterThanOrEqual(1);
    expect(curls.length).toBeGreaterThanOrEqual(3);
    expect(clients.length).toBeGreaterThanOrEqual(1);
  });

  it.each(curls.map((c) => [c.at, c] as const))('curl example at %s answers what the document shows', async (_at, { block, shown }) => {
    expect(shown?.lang, `a json block follows the curl block at line ${block.line}`).toBe('json');
    const req = curlRequest(block.body);
    const res = await fetch(`${srv.url}${req.path}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(req.json) });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject(JSON.parse(shown.body) as object);
  });

  it.each(clients.map((c) => [c.at, c] as const))('openai client example at %s prints what the document shows', async (_at, { block, shown }) => {
    expect(shown?.lang, `a text block follows the example at line ${block.line}`).toBe('text');
    // The example as written, with its import bound to the installed client and its process.stdout captured.
    const code = block.body.replace(/^import OpenAI from 'openai';\n/m, '').replaceAll(README_URL, srv.url);
    let printed = '';
    const fakeProcess = { stdout: { write: (s: string) => (printed += s) } };
    const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...args: string[]) => (...a: unknown[]) => Promise<void>;
    await new AsyncFunction('OpenAI', 'process', code)(OpenAI, fakeProcess);
    expect(printed).toBe(shown.body.trimEnd());
  });
});
