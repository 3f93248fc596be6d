// The designer store on fake ports, without a browser: start-up against the server, the debounced draft in storage, undo coalescing on the injected clock, the clipboard, playground runs.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../designer/src/designer/api.ts';
import { FALLBACK_CATALOG } from '../../designer/src/designer/designerStore.ts';
import { exampleGraph, FakeServer, irOf, MemoryStorage, MODELS, rig, token } from './designerFakes.ts';

const tau = (r: ReturnType<typeof rig>) => r.store.getState().graph.nodes.find((n) => n.id === 'tau')!.params.value;

describe('designer store: start-up', () => {
  it('loads the model catalog and the algorithm list from the server', async () => {
    const server = new FakeServer();
    server.models = [MODELS[0], { ...MODELS[1], heads: ['extra'] }];
    server.store('citer', irOf(exampleGraph()));
    const { store } = rig({ server });
    expect(store.getState().catalogSource).toBe('loading');
    await store.start();
    expect(server.calls.map((c) => c.method).sort()).toEqual(['listAlgorithms', 'listModels']);
    const s = store.getState();
    expect(s.catalogSource).toBe('server');
    expect(s.catalog).toEqual([
      { name: 'small', heads: ['citer', 'r2r', 'colm'], vocabSize: 32000 },
      { name: 'medium', heads: ['extra'], vocabSize: 32000 },
    ]);
    expect(s.registry.status).toBe('ok');
    expect(s.registry.algorithms.map((a) => a.name)).toEqual(['citer']);
  });

  it('shows the error state when the server fails, keeping the bundled catalog', async () => {
    const server = new FakeServer();
    server.fail('listModels', new ApiError('Service Unavailable', 503));
    server.fail('listAlgorithms', new ApiError('admin token required', 401, 'unauthorized'));
    const { store } = rig({ server });
    await store.start();
    const s = store.getState();
    expect(s.catalogSource).toBe('offline');
    expect(s.catalog).toBe(FALLBACK_CATALOG);
    expect(s.registry).toEqual({ status: 'error', algorithms: [], message: 'admin token required (401)' });
  });

  it('revalidates against the server catalog: a model the server lacks is an error', async () => {
    const server = new FakeServer();
    server.models = MODELS.filter((m) => m.name !== 'large');
    const { store } = rig({ server });
    expect(store.getState().errorCount).toBe(0);
    await store.start();
    expect(store.getState().errorCount).toBeGreaterThan(0);
  });
});

describe('designer store: drafts', () => {
  it('writes the draft only once the debounce fires, once for several quick edits', () => {
    const r = rig();
    const storage = r.storage!;
    r.store.setName('a');
    r.store.setName('ab');
    r.store.setParam('tau', 'value', 0.05);
    expect(storage.writes).toHaveLength(0);
    expect(r.clock.pending).toBe(1);
    r.clock.advance(199);
    expect(storage.writes).toHaveLength(0);
    r.clock.advance(1);
    expect(storage.writes).toHaveLength(1);
    const saved = JSON.parse(storage.writes[0]) as { graph: { name: string; nodes: { id: string; params: Record<string, unknown> }[] } };
    expect(saved.graph.name).toBe('ab');
    expect(saved.graph.nodes.find((n) => n.id === 'tau')!.params.value).toBe(0.05);
    r.clock.advance(10_000);
    expect(storage.writes).toHaveLength(1);
    r.store.setName('abc');
    r.clock.advance(200);
    expect(storage.writes).toHaveLength(2);
  });

  it('flushes the pending write at once on persistNow (page hide) and cancels the timer', () => {
    const r = rig();
    r.store.setName('hidden');
    r.store.persistNow();
    expect(r.storage!.writes).toHaveLength(1);
    expect(r.clock.pending).toBe(0);
    r.clock.advance(1000);
    expect(r.storage!.writes).toHaveLength(1);
  });

  it('brings the draft back from storage in a new store, still unsaved', () => {
    const storage = new MemoryStorage();
    const first = rig({ storage });
    expect(first.store.getState().dirty).toBe(false);
    first.store.setName('kept');
    first.store.setParam('tau', 'value', 0.07);
    first.clock.advance(200);
    const second = rig({ storage, graph: { ...exampleGraph(), name: 'initial' } });
    const s = second.store.getState();
    expect(s.graph.name).toBe('kept');
    expect(tau(second)).toBe(0.07);
    expect(s.dirty).toBe(true);
    expect(second.server.calls).toEqual([]);
  });

  it('starts from the initial graph when the stored draft is not a graph, and schedules nothing without storage', () => {
    const storage = new MemoryStorage();
    storage.setItem('tokenrouter.designer.draft.v1', JSON.stringify({ graph: { nodes: 'no' }, savedKey: 'x' }));
    expect(rig({ storage, graph: { ...exampleGraph(), name: 'initial' } }).store.getState().graph.name).toBe('initial');
    const none = rig({ storage: null });
    none.store.setName('x');
    expect(none.clock.pending).toBe(0);
  });
});

describe('designer store: history on the injected clock', () => {
  it('merges quick edits of one field into one undo step, and not once the clock has moved on', () => {
    const r = rig();
    r.store.setParam('tau', 'value', 0.04);
    r.clock.advance(500);
    r.store.setParam('tau', 'value', 0.05);
    r.clock.advance(1300);
    r.store.setParam('tau', 'value', 0.06);
    r.store.undo();
    expect(tau(r)).toBe(0.05);
    r.store.undo();
    expect(tau(r)).toBe(0.03);
    expect(r.store.getState().canUndo).toBe(false);
  });
});

describe('designer store: clipboard', () => {
  it('copies the selection to the system clipboard too, and pastes from its own even when the system one refuses', async () => {
    const r = rig();
    r.store.select(['tau'], []);
    expect(r.store.copy()).toBe(1);
    expect(JSON.parse(r.clipboard.texts[0]).nodes.map((n: { type: string }) => n.type)).toEqual(['constant']);
    r.clipboard.refuse = true;
    r.store.copy();
    await Promise.resolve();
    const before = r.store.getState().graph.nodes.length;
    r.store.paste();
    expect(r.store.getState().graph.nodes.length).toBe(before + 1);
  });
});

describe('designer store: playground', () => {
  it('streams a draft run into the store: the compiled IR goes out, tokens and the request id come in', async () => {
    const r = rig();
    r.store.setPlayground({ prompt: '2*2', maxTokens: 8 });
    const done = r.store.run();
    expect(r.store.getState().playground.status).toBe('running');
    const [args] = r.server.argsOf('streamChat');
    expect(args[0]).toMatchObject({ model: 'draft', prompt: '2*2', maxTokens: 8, ir: { kind: 'tokenrouter.ir', name: 'r-stitch' } });
    const chat = r.server.chats[0];
    chat.run.onId?.('req-1');
    chat.run.onTokens([token(1, '4')]);
    chat.run.onTokens([token(2, '.')]);
    expect(r.store.getState().playground.tokens.map((t) => t.text)).toEqual(['4', '.']);
    chat.end('stop');
    await done;
    expect(r.store.getState().playground).toMatchObject({ status: 'done', finish: 'stop', requestId: 'req-1' });
  });

  it('stops a run: the stream is aborted, the run ends as stopped and later tokens are dropped', async () => {
    const r = rig();
    r.store.setPlayground({ target: 'citer' });
    const done = r.store.run();
    const chat = r.server.chats[0];
    expect(r.server.argsOf('streamChat')[0][0]).toMatchObject({ model: 'citer', ir: undefined });
    chat.run.onTokens([token(1, 'a')]);
    r.store.stop();
    expect(chat.run.signal.aborted).toBe(true);
    await done;
    chat.run.onTokens([token(2, 'b')]);
    expect(r.store.getState().playground).toMatchObject({ status: 'done', finish: 'stopped' });
    expect(r.store.getState().playground.tokens.map((t) => t.text)).toEqual(['a']);
  });

  it('sends the response format and tools, and gathers reasoning, tool calls and usage; a bad schema sends nothing', async () => {
    const r = rig();
    r.store.setPlaygroundOptions({ format: 'json_schema', schemaText: '{"type": "object",}' });
    await r.store.run();
    expect(r.server.argsOf('streamChat')).toEqual([]);
    expect(r.store.getState().playground).toMatchObject({ status: 'error', message: expect.stringMatching(/^Not sent: Schema: not valid JSON/) });
    r.store.setPlaygroundOptions({ schemaText: '{"type": "object"}', toolsText: '[{"type": "function", "function": {"name": "f"}}]', toolChoice: 'required' });
    const done = r.store.run();
    expect(r.server.argsOf('streamChat')[0][0]).toMatchObject({
      extra: {
        response_format: { type: 'json_schema', json_schema: { name: 'response', schema: { type: 'object' }, strict: true } },
        tools: [{ function: { name: 'f' } }],
        tool_choice: 'required',
      },
    });
    const chat = r.server.chats[0];
    chat.run.onReasoning?.('think ');
    chat.run.onReasoning?.('more');
    chat.run.onToolCalls?.([{ index: 0, id: 'c1', function: { name: 'f', arguments: '{"a"' } }]);
    chat.run.onToolCalls?.([{ index: 0, function: { arguments: ':1}' } }]);
    chat.run.onUsage?.({ prompt_tokens: 5, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 4 } });
    chat.end('tool_calls');
    await done;
    expect(r.store.getState().playground).toMatchObject({
      status: 'done',
      finish: 'tool_calls',
      reasoning: 'think more',
      toolCalls: [{ index: 0, id: 'c1', name: 'f', arguments: '{"a":1}' }],
      usage: { prompt_tokens_details: { cached_tokens: 4 } },
    });
    // a new run starts clean
    void r.store.run();
    expect(r.store.getState().playground).toMatchObject({ reasoning: '', toolCalls: [], usage: null });
  });

  it('refuses to run a draft with errors without calling the server, and reports a failed stream', async () => {
    const r = rig();
    r.store.remove(['start'], []);
    await r.store.run();
    expect(r.store.getState().playground).toMatchObject({ status: 'error', message: 'The draft has errors: fix them to run it.' });
    expect(r.server.argsOf('streamChat')).toEqual([]);
    r.store.undo();
    r.server.fail('streamChat', new ApiError('model small is not loaded', 503));
    await r.store.run();
    expect(r.store.getState().playground).toMatchObject({ status: 'error', message: 'model small is not loaded (503)' });
  });
});
