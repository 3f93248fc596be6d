// Entries as `tokenrouter serve` child processes (so a test can SIGTERM one), SSE streams that say how they ended, and replica heartbeats read off NATS.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openNats } from '../../runtime/transport/nats/natsConnection.ts';
import { replicaAnnouncementSchema, type ReplicaAnnouncement } from '../../runtime/transport/nats/natsConnection.ts';
import { TINY_FAMILY_DIR } from '../support/tinyFamily.ts';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const CLI = path.join(ROOT, 'runtime/cli/tokenrouter.mjs');

export interface EntryProcess {
  child: ChildProcess;
  url: string;
  output(): string;
  exited: Promise<number | null>;
}

/** Writes `config` (dataDir and modelsDir, the tiny fixture family, filled in) and starts `tokenrouter serve` on it; resolves once it prints its API URL. */
export function spawnEntry(config: Record<string, unknown>, timeoutMs = 60_000): Promise<EntryProcess> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-entry-'));
  const file = path.join(dir, 'entry.json');
  fs.writeFileSync(file, JSON.stringify({ port: 0, dataDir: path.join(dir, 'data'), modelsDir: TINY_FAMILY_DIR, ...config }));
  const child = spawn(process.execPath, [CLI, 'serve', '--config', file], { stdio: ['ignore', 'pipe', 'pipe'], cwd: ROOT });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  void exited.then(() => fs.rmSync(dir, { recursive: true, force: true }));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`entry did not start within ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    const onData = () => {
      const m = /OpenAI API (http:\/\/\S+)\/v1/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      resolve({ child, url: m[1], output: () => out, exited });
    };
    child.stdout!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`entry exited (code ${code}) before it served:\n${out}`));
    });
  });
}

export type StreamEnd = 'done' | 'sse-error' | 'cut' | 'refused';

export interface StreamResult {
  end: StreamEnd;
  status: number;
  chunks: number;
  error?: string;
}

/** A streamed chat completion read to its end: `[DONE]`, an SSE error event, a connection cut without either, or an HTTP error before streaming. */
export async function stream(url: string, model: string, prompt: string, maxTokens: number, onChunk?: () => void): Promise<StreamResult> {
  let res: Response;
  try {
    res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: prompt }], max_tokens: maxTokens, stream: true }),
    });
  } catch (e) {
    return { end: 'cut', status: 0, chunks: 0, error: (e as Error).message };
  }
  if (!res.ok || !res.body) return { end: 'refused', status: res.status, chunks: 0, error: await res.text() };
  let text = '';
  let chunks = 0;
  const decoder = new TextDecoder();
  try {
    for await (const part of res.body) {
      text += decoder.decode(part as Uint8Array, { stream: true });
      let i: number;
      while ((i = text.indexOf('\n\n')) >= 0) {
        const event = text.slice(0, i);
        text = text.slice(i + 2);
        const data = event
          .split('\n')
          .find((l) => l.startsWith('data: '))
          ?.slice(6);
        if (data === undefined) continue;
        if (data === '[DONE]') return { end: 'done', status: res.status, chunks };
        const body = JSON.parse(data) as { error?: { message: string } };
        if (body.error) return { end: 'sse-error', status: res.status, chunks, error: body.error.message };
        chunks++;
        onChunk?.();
      }
    }
  } catch (e) {
    return { end: 'cut', status: res.status, chunks, error: (e as Error).message };
  }
  return { end: 'cut', status: res.status, chunks };
}

/** The latest heartbeat of every replica of `model` (and when it came, performance.now()), read on a connection of the test's own. */
/** `model` '*': every model's replicas. */
export async function watchHeartbeats(
  natsUrl: string,
  model: string,
): Promise<{ latest: Map<string, ReplicaAnnouncement & { at: number }>; close(): Promise<void> }> {
  const nc = await openNats({ servers: natsUrl, name: 'test-heartbeats' });
  const latest = new Map<string, ReplicaAnnouncement & { at: number }>();
  const decoder = new TextDecoder();
  nc.subscribe(`tokenrouter.${model}.heartbeat`, {
    callback: (err, msg) => {
      if (err) return;
      const a = replicaAnnouncementSchema.parse(JSON.parse(decoder.decode(msg.data)));
      latest.set(a.replica, { ...a, at: performance.now() });
    },
  });
  await nc.flush();
  return { latest, close: () => nc.close() };
}
