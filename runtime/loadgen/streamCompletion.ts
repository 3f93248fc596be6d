// One streaming chat completion over HTTP/SSE, timed the way vLLM's benchmark client times it.
import http from 'node:http';
import { createParser } from 'eventsource-parser';
import type { RequestRecord } from './requestMetrics.ts';

export interface CompletionBody {
  model: string;
  messages: { role: 'system' | 'user' | 'assistant'; content: string }[];
  max_tokens: number;
  temperature?: number;
  top_p?: number;
  seed?: number;
  /** vLLM's extension: run to max_tokens whatever the model would end on. */
  ignore_eos?: boolean;
}

interface StreamChunk {
  choices?: { delta?: { content?: string }; text?: string; finish_reason?: string | null }[];
  usage?: { prompt_tokens: number; completion_tokens: number };
  tokenrouter?: { models?: Record<string, number>; tokens?: unknown[]; tokens_by_model?: Record<string, number>; handoffs?: number; discarded_tokens?: number };
  error?: { message?: string };
}

/**
 * Sends `body` with `stream: true` and usage reporting on, and records the arrival time of every
 * content chunk. Output tokens come from the usage block (the server's committed count); the
 * per-chunk `tokenrouter.models` tally is the fallback when a server omits usage.
 */
export function streamCompletion(
  baseUrl: string,
  body: CompletionBody,
  agent: http.Agent,
  now: () => number = () => performance.now(),
): Promise<RequestRecord> {
  const url = new URL('/v1/chat/completions', baseUrl);
  const payload = JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } });
  const rec: RequestRecord = { ok: false, sendMs: now(), contentChunkMs: [], endMs: 0, outputTokens: 0 };
  let counted = 0;
  let usageTokens: number | null = null;
  let sawDone = false;
  return new Promise((resolve) => {
    const finish = (error?: string) => {
      if (rec.endMs === 0) rec.endMs = now();
      if (error) {
        rec.ok = false;
        rec.error = error;
      } else {
        rec.outputTokens = usageTokens ?? counted;
        rec.ok = sawDone;
        if (!sawDone) rec.error = 'stream ended without [DONE]';
      }
      resolve(rec);
    };
    const req = http.request(
      url,
      { method: 'POST', agent, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload), Accept: 'text/event-stream' } },
      (res) => {
        res.setEncoding('utf8');
        if (res.statusCode !== 200) {
          let text = '';
          res.on('data', (d: string) => (text += d));
          res.on('end', () => finish(`HTTP ${res.statusCode}: ${text.slice(0, 300)}`));
          res.on('error', (e) => finish(e.message));
          return;
        }
        let failed: string | undefined;
        let t = 0;
        const onData = (data: string) => {
          if (data === '[DONE]') {
            sawDone = true;
            return;
          }
          let chunk: StreamChunk;
          try {
            chunk = JSON.parse(data) as StreamChunk;
          } catch {
            failed = `unparsable SSE data: ${data.slice(0, 100)}`;
            return;
          }
          if (chunk.error) failed = chunk.error.message ?? 'error event';
          const choice = chunk.choices?.[0];
          const text = choice?.delta?.content ?? choice?.text ?? '';
          if (text.length > 0) rec.contentChunkMs.push(t);
          const tr = chunk.tokenrouter;
          if (tr?.models) for (const n of Object.values(tr.models)) counted += n;
          if (tr?.tokens_by_model) rec.tokensByModel = tr.tokens_by_model;
          if (tr?.handoffs !== undefined) rec.handoffs = tr.handoffs;
          if (tr?.discarded_tokens !== undefined) rec.discardedTokens = tr.discarded_tokens;
          if (choice?.finish_reason) rec.finishReason = choice.finish_reason;
          if (chunk.usage) {
            usageTokens = chunk.usage.completion_tokens;
            rec.promptTokens = chunk.usage.prompt_tokens;
          }
        };
        // eventsource-parser splits the stream into events; every event (a keep-alive comment too) marks the last arrival.
        const parser = createParser({
          onEvent: (e) => {
            const data = e.data.trim();
            if (data) onData(data);
            rec.endMs = t;
          },
          onComment: () => {
            rec.endMs = t;
          },
        });
        res.on('data', (d: string) => {
          t = now();
          parser.feed(d);
        });
        res.on('end', () => finish(failed));
        res.on('error', (e) => finish(e.message));
      },
    );
    req.on('error', (e) => finish(e.message));
    req.end(payload);
  });
}
