// The designer's only door to the server: admin registry and models, deploys, the streaming playground, and evaluate / predict.
import { createParser } from 'eventsource-parser';
import { z } from 'zod';
import { chatChunkSchema, openAIErrorBodySchema, type TokenAttribution } from '../../../shared/api/openaiAnswer.ts';
import {
  activeVersionSchema,
  algorithmListSchema,
  deleteResponseSchema,
  deployResponseSchema,
  modelListSchema,
  type AlgorithmView,
  type ModelList,
  type VersionView,
} from '../../../shared/api/admin.ts';
import {
  cancelResponseSchema,
  evaluateBoundsSchema,
  evaluateEventSchema,
  predictionCheckSchema,
  predictionSchema,
  type EvaluateEvent,
  type EvaluateRequest,
} from '../../../shared/api/evaluate.ts';
import { irIssueSchema, type IrIssue } from '../../../shared/ir/irIssue.ts';
import { irSchema, type IrDocument } from '../../../shared/ir/irSchema.ts';
import { liveUrl } from '../timeline/feedMessages.ts';
import { adminToken } from '../adminToken.ts';
import { chunkExtrasSchema, type ChatUsage, type ToolCallDelta } from './chatExtras.ts';

export type ApiModel = ModelList['models'][number];
export type ApiVersion = VersionView;
export type ApiAlgorithm = AlgorithmView;

/** A stored version's graph when it has a readable IR (a built-in has none; an older build may have stored one this page cannot read). */
export function versionIr(v: ApiVersion): IrDocument | null {
  if (v.kind !== 'ir') return null;
  const r = irSchema.safeParse(v.ir);
  return r.success ? (r.data as IrDocument) : null;
}

/** Per-token extension of a streamed chunk (`tokenrouter.tokens[]`). */
export type StreamToken = TokenAttribution;

/** A failed call, with the server's OpenAI-style error fields when it sent them. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | null = null,
    readonly param: string | null = null,
    readonly details: IrIssue[] = [],
  ) {
    super(message);
  }
}

function adminHeaders(json: boolean): Record<string, string> {
  const h: Record<string, string> = {};
  if (json) h['Content-Type'] = 'application/json';
  const token = adminToken();
  if (token) h.Authorization = `Bearer ${token}`;
  return h;
}

async function failure(res: Response): Promise<ApiError> {
  let body: unknown = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  const parsed = openAIErrorBodySchema.safeParse(body);
  if (!parsed.success) return new ApiError(`${res.status} ${res.statusText}`, res.status);
  const err = parsed.data.error;
  // issues a client cannot read are dropped, the message still says what went wrong
  const details = z.array(irIssueSchema).safeParse(err.details);
  return new ApiError(err.message, res.status, err.code, err.param, details.success ? details.data : []);
}

/** One admin call; the answer is checked against its schema, so a mismatched server fails here with a message, not later as undefined. */
async function admin<S extends z.ZodType>(method: 'GET' | 'POST' | 'DELETE', path: string, schema: S, body?: unknown): Promise<z.infer<S>> {
  const res = await fetch(path, { method, headers: adminHeaders(body !== undefined), body: body === undefined ? undefined : JSON.stringify(body) });
  if (!res.ok) throw await failure(res);
  const parsed = schema.safeParse(await res.json());
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw new ApiError(`unexpected answer from ${method} ${path}: ${first ? `${first.path.join('.')} ${first.message}` : 'schema mismatch'}`, res.status);
  }
  return parsed.data;
}

const at = (name: string) => `/admin/algorithms/${encodeURIComponent(name)}`;

export const api = {
  listModels: () => admin('GET', '/admin/models', modelListSchema).then((r) => r.models),
  listAlgorithms: () => admin('GET', '/admin/algorithms', algorithmListSchema).then((r) => r.algorithms),
  /** Stores the IR as the next version and makes it active; over an existing name only with `replace`. */
  deploy: (name: string, ir: IrDocument, replace: boolean) => admin('POST', `${at(name)}/versions`, deployResponseSchema, { ir, activate: true, replace }),
  activate: (name: string, version: number) => admin('POST', `${at(name)}/activate`, activeVersionSchema, { version }),
  rollback: (name: string) => admin('POST', `${at(name)}/rollback`, activeVersionSchema, {}),
  remove: (name: string) => admin('DELETE', at(name), deleteResponseSchema),
};

export interface ChatRun {
  /** An algorithm name, or "draft" with `ir` set. */
  model: string;
  ir?: IrDocument;
  prompt: string;
  maxTokens: number;
  signal: AbortSignal;
  /** `text`: the chunk's content, the same tokens decoded together (a character split across tokens comes out whole there). */
  onTokens(tokens: StreamToken[], text?: string): void;
  /** Content deltas, for servers that stream text without the token extension. */
  onText?(text: string): void;
  /** The request's id (X-Request-Id), as the trace and the timeline know it. */
  onId?(id: string): void;
  /** Request fields the playground's options add (response_format, tools, tool_choice); the run's own fields win. */
  extra?: Record<string, unknown>;
  /** `delta.reasoning_content`: a thinking model's thought, apart from the answer. */
  onReasoning?(text: string): void;
  /** The tokens of a chunk that carries only thought; without this callback they go to onTokens. */
  onReasoningTokens?(tokens: StreamToken[]): void;
  /** `delta.tool_calls` pieces, in OpenAI's streamed shape (chatExtras.mergeToolCalls folds them). */
  onToolCalls?(deltas: ToolCallDelta[]): void;
  /** The usage chunk the stream ends with (stream_options.include_usage). */
  onUsage?(usage: ChatUsage): void;
}

/** Streams one chat completion (SSE); resolves with the finish reason when `[DONE]` arrives. */
export async function streamChat(run: ChatRun): Promise<string | null> {
  // The server traces only while something reads the trace: a live-feed connection held during
  // the run makes it record this request, so the timeline link opens it.
  const reader = await traceReader();
  try {
    return await streamChatRun(run);
  } finally {
    reader?.close();
  }
}

/** A live-feed connection, open (null where there is no WebSocket, or it does not open within a second). */
async function traceReader(): Promise<{ close(): void } | null> {
  const W = (globalThis as { WebSocket?: typeof WebSocket }).WebSocket;
  const loc = (globalThis as { location?: { protocol: string; host: string } }).location;
  if (!W || !loc) return null;
  const token = adminHeaders(false).Authorization?.slice('Bearer '.length) ?? null;
  const ws = new W(liveUrl(loc, token));
  const open = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 1000);
    ws.onopen = () => (clearTimeout(timer), resolve(true));
    ws.onerror = () => (clearTimeout(timer), resolve(false));
  });
  if (!open) ws.close();
  return open ? ws : null;
}

/** A streamed chunk as read here: OpenAI sends `content: null` beside tool calls, which the shared schema does not take. */
const streamChunkSchema = chatChunkSchema.extend({
  choices: z.array(z.object({ delta: z.object({ content: z.string().nullish() }).nullish(), finish_reason: z.string().nullable().optional() })).optional(),
});

async function streamChatRun(run: ChatRun): Promise<string | null> {
  const body: Record<string, unknown> = {
    ...run.extra,
    model: run.model,
    stream: true,
    stream_options: { include_usage: true },
    max_tokens: run.maxTokens,
    messages: [{ role: 'user', content: run.prompt }],
    tokenrouter_tokens: true,
  };
  if (run.ir) body.tokenrouter_ir = run.ir;
  // The admin token also passes /v1 on a server started with API keys; a key never opens admin.
  const res = await fetch('/v1/chat/completions', { method: 'POST', headers: adminHeaders(true), body: JSON.stringify(body), signal: run.signal });
  if (!res.ok || !res.body) throw await failure(res);
  const id = res.headers.get('x-request-id');
  if (id) run.onId?.(id);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  // eventsource-parser splits the SSE stream into events (CRLF or LF, multi-line data, comments).
  const events: string[] = [];
  const parser = createParser({ onEvent: (e) => events.push(e.data) });
  let finish: string | null = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return finish;
    parser.feed(value);
    for (const data of events.splice(0)) {
      if (!data) continue;
      if (data === '[DONE]') return finish;
      const raw: unknown = JSON.parse(data);
      const parsed = streamChunkSchema.safeParse(raw);
      if (!parsed.success) throw new ApiError(`unexpected stream chunk: ${parsed.error.issues[0]?.message ?? 'schema mismatch'}`, res.status);
      const extras = chunkExtrasSchema.safeParse(raw);
      if (!extras.success) {
        const first = extras.error.issues[0];
        throw new ApiError(`unexpected stream chunk: ${first ? `${first.path.join('.')} ${first.message}` : 'schema mismatch'}`, res.status);
      }
      const chunk = parsed.data;
      if (chunk.error) throw new ApiError(chunk.error.message, 500, chunk.error.code, chunk.error.param);
      const choice = chunk.choices?.[0];
      if (choice?.finish_reason) finish = choice.finish_reason;
      const delta = extras.data.choices?.[0]?.delta;
      if (delta?.reasoning_content) run.onReasoning?.(delta.reasoning_content);
      if (delta?.tool_calls?.length) run.onToolCalls?.(delta.tool_calls);
      if (extras.data.usage) run.onUsage?.(extras.data.usage);
      const tokens = chunk.tokenrouter?.tokens;
      const thoughtOnly = !!delta?.reasoning_content && !choice?.delta?.content;
      if (tokens?.length && thoughtOnly && run.onReasoningTokens) run.onReasoningTokens(tokens);
      else if (tokens?.length) run.onTokens(tokens, choice?.delta?.content ?? '');
      else if (choice?.delta?.content) run.onText?.(choice.delta.content);
    }
  }
}

// ---- evaluate / predict -----------------------------------------------------------------------

export interface EvaluateRun {
  body: EvaluateRequest;
  signal: AbortSignal;
  onEvent(e: EvaluateEvent): void;
}

/** Runs one evaluation (NDJSON lines, each checked); resolves when the server ends the stream. */
export async function evaluate(run: EvaluateRun): Promise<void> {
  const res = await fetch('/admin/evaluate', { method: 'POST', headers: adminHeaders(true), body: JSON.stringify(run.body), signal: run.signal });
  if (!res.ok || !res.body) throw await failure(res);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      // empty lines are the server's probes for a client that went away
      if (!line) continue;
      const parsed = evaluateEventSchema.safeParse(JSON.parse(line));
      if (!parsed.success) throw new ApiError(`unexpected evaluation line: ${parsed.error.issues[0]?.message ?? 'schema mismatch'}`, res.status);
      run.onEvent(parsed.data);
    }
  }
}

const evalAt = (runId: string) => `/admin/evaluate/${encodeURIComponent(runId)}`;

export const evaluateApi = {
  evaluate,
  bounds: (task: string) => admin('GET', `/admin/evaluate/bounds?task=${encodeURIComponent(task)}`, evaluateBoundsSchema),
  cancel: (runId: string) => admin('DELETE', evalAt(runId), cancelResponseSchema),
  predict: (runId: string, concurrency: number, clientMs: number) => admin('POST', `${evalAt(runId)}/predict`, predictionSchema, { concurrency, clientMs }),
  check: (algorithm: string, windowMs: number) =>
    admin('GET', `/admin/prediction-check?algorithm=${encodeURIComponent(algorithm)}&windowMs=${windowMs}`, predictionCheckSchema),
};
