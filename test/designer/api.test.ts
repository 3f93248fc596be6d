// The designer's server door validates what comes back: error bodies, IR issues and stream chunks through the shared schemas.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { api, ApiError, streamChat } from '../../designer/src/designer/api.ts';

afterEach(() => vi.unstubAllGlobals());

const reply = (status: number, body: unknown, headers: Record<string, string> = { 'Content-Type': 'application/json' }) =>
  vi.stubGlobal(
    'fetch',
    vi.fn(async () => new Response(typeof body === 'string' ? body : JSON.stringify(body), { status, headers })),
  );

const issue = { nodeId: 'n1', code: 'unknown_node_type', message: 'no such node type "x"', fix: 'pick a type from the palette', severity: 'error' };

describe('designer api', () => {
  it('turns an OpenAI-shaped error into an ApiError with its code, param and IR issues', async () => {
    reply(400, { error: { message: 'invalid IR: n1: unknown_node_type', type: 'invalid_request_error', param: 'ir', code: 'invalid_ir', details: [issue] } });
    const e = (await api.listAlgorithms().catch((x: unknown) => x)) as ApiError;
    expect(e).toBeInstanceOf(ApiError);
    expect([e.status, e.code, e.param, e.message]).toEqual([400, 'invalid_ir', 'ir', 'invalid IR: n1: unknown_node_type']);
    expect(e.details).toEqual([issue]);
  });

  it('keeps the message when the issues are not ones it can read, and names the status when the body is not an error', async () => {
    reply(400, { error: { message: 'bad', type: 'invalid_request_error', param: null, code: 'invalid_ir', details: [{ nodeId: 3 }] } });
    const e = (await api.listAlgorithms().catch((x: unknown) => x)) as ApiError;
    expect([e.message, e.details]).toEqual(['bad', []]);
    reply(502, '<html>bad gateway</html>', { 'Content-Type': 'text/html' });
    const g = (await api.listAlgorithms().catch((x: unknown) => x)) as ApiError;
    expect([g.status, g.message]).toEqual([502, '502 ']);
  });

  it('refuses an answer that does not match its schema, naming the field', async () => {
    reply(200, { algorithms: [{ name: 7 }] });
    await expect(api.listAlgorithms()).rejects.toThrow(/unexpected answer from GET \/admin\/algorithms: algorithms\.0\.name/);
  });

  it('streams tokens checked against the shared attribution schema, and fails on a malformed chunk', async () => {
    const tok = { id: 5, text: '4', model: 'small', signals: { entropy: 0.1, maxProb: 0.9, margin: 0.8, heads: {} }, decision: 'stay', kept: true };
    const sse = (chunks: unknown[]) => chunks.map((c) => `data: ${typeof c === 'string' ? c : JSON.stringify(c)}\n\n`).join('');
    reply(
      200,
      sse([
        { choices: [{ delta: { content: '4' }, finish_reason: null }], tokenrouter: { tokens: [tok] } },
        { choices: [{ delta: {}, finish_reason: 'stop' }] },
        '[DONE]',
      ]),
      { 'Content-Type': 'text/event-stream' },
    );
    const got: unknown[] = [];
    const finish = await streamChat({ model: 'r2r', prompt: '2*2', maxTokens: 4, signal: new AbortController().signal, onTokens: (ts) => got.push(...ts) });
    expect([finish, got]).toEqual(['stop', [tok]]);
    reply(200, sse([{ tokenrouter: { tokens: [{ ...tok, decision: 'maybe' }] } }]), { 'Content-Type': 'text/event-stream' });
    await expect(streamChat({ model: 'r2r', prompt: '2*2', maxTokens: 4, signal: new AbortController().signal, onTokens: () => {} })).rejects.toThrow(
      /unexpected stream chunk/,
    );
  });

  it('passes reasoning_content (and its tokens), tool_calls pieces and the closing usage apart from the content, and sends the options with include_usage', async () => {
    const tok = { id: 5, text: '', model: 'small', signals: { entropy: 0.1, maxProb: 0.9, margin: 0.8, heads: {} }, decision: 'stay', kept: true };
    const sse = (chunks: unknown[]) => chunks.map((c) => `data: ${typeof c === 'string' ? c : JSON.stringify(c)}\n\n`).join('');
    const fetchMock = vi.fn(
      async () =>
        new Response(
          sse([
            { choices: [{ index: 0, delta: { reasoning_content: 'Paris is' }, finish_reason: null }], tokenrouter: { tokens: [{ ...tok, text: 'Paris is' }] } },
            { choices: [{ index: 0, delta: { content: '{}' }, finish_reason: null }], tokenrouter: { tokens: [{ ...tok, text: '{}' }] } },
            {
              choices: [
                {
                  index: 0,
                  delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city"' } }] },
                  finish_reason: null,
                },
              ],
            },
            { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
            { choices: [], usage: { prompt_tokens: 30, completion_tokens: 9, total_tokens: 39, prompt_tokens_details: { cached_tokens: 16 } } },
            '[DONE]',
          ]),
          { status: 200, headers: { 'Content-Type': 'text/event-stream' } },
        ),
    );
    vi.stubGlobal('fetch', fetchMock);
    const seen: unknown[] = [];
    const extra = { response_format: { type: 'json_object' }, model: 'must-not-win' };
    const finish = await streamChat({
      model: 'r2r',
      prompt: 'weather?',
      maxTokens: 8,
      signal: new AbortController().signal,
      extra,
      onTokens: (ts, text) => seen.push(['tokens', ts.map((t) => t.text), text]),
      onReasoningTokens: (ts) => seen.push(['thought tokens', ts.map((t) => t.text)]),
      onReasoning: (t) => seen.push(['reasoning', t]),
      onToolCalls: (d) => seen.push(['tools', d]),
      onUsage: (u) => seen.push(['usage', u.prompt_tokens_details?.cached_tokens]),
    });
    expect(finish).toBe('tool_calls');
    expect(seen).toEqual([
      ['reasoning', 'Paris is'],
      ['thought tokens', ['Paris is']],
      ['tokens', ['{}'], '{}'],
      ['tools', [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city"' } }]],
      ['usage', 16],
    ]);
    const body = JSON.parse((fetchMock.mock.calls[0] as unknown as [string, RequestInit])[1].body as string);
    expect(body).toMatchObject({ model: 'r2r', response_format: { type: 'json_object' }, stream_options: { include_usage: true } });
    // a malformed tool call piece is named, not dropped
    reply(200, sse([{ choices: [{ delta: { tool_calls: [{ index: 'x' }] } }] }]), { 'Content-Type': 'text/event-stream' });
    await expect(streamChat({ model: 'r2r', prompt: '?', maxTokens: 4, signal: new AbortController().signal, onTokens: () => {} })).rejects.toThrow(
      /unexpected stream chunk: choices\.0\.delta\.tool_calls\.0\.index/,
    );
  });

  it('the playground sends the stored admin token to /v1, which passes a server started with API keys', async () => {
    vi.stubGlobal('localStorage', { getItem: (k: string) => (k === 'tokenrouterAdminToken' ? 'admin-secret' : null) });
    const fetchMock = vi.fn(async () => new Response('data: [DONE]\n\n', { status: 200, headers: { 'Content-Type': 'text/event-stream' } }));
    vi.stubGlobal('fetch', fetchMock);
    await streamChat({ model: 'r2r', prompt: '2*2', maxTokens: 4, signal: new AbortController().signal, onTokens: () => {} });
    const init = (fetchMock.mock.calls[0] as unknown as [string, RequestInit])[1];
    expect(init.headers).toMatchObject({ Authorization: 'Bearer admin-secret', 'Content-Type': 'application/json' });
    // streamed chunks are lean unless asked: the playground asks for every token's model and signals
    expect(JSON.parse(init.body as string)).toMatchObject({ stream: true, tokenrouter_tokens: true });
  });
});
