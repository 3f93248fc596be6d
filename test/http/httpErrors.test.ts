// Every typed error class of the runtime maps to one status and code in one place; untyped errors never leak their text.
import { describe, expect, it } from 'vitest';
import { LifecycleError } from '../../runtime/core/localRequest.ts';
import { IrCompileError } from '../../runtime/ir/compileIr.ts';
import { RemoteRunnerError } from '../../runtime/transport/nats/natsConnection.ts';
import { InvariantError } from '../../runtime/core/invariants.ts';
import { EngineThreadError } from '../../runtime/transport/threadEngine.ts';
import { TokenRouterError } from '../../runtime/errors.ts';
import { ModelFolderError } from '../../runtime/runner/modelFolder.ts';
import { StepError } from '../../runtime/runner/onnxRunner.ts';
import { WorkerRunnerError } from '../../runtime/runner/workerRunner.ts';
import { toHttpError } from '../../runtime/http/httpErrors.ts';
import { ThroughputError } from '../../runtime/control/throughput/ThroughputError.ts';

const cases: [string, unknown, number, string, RegExp | string][] = [
  ['TokenRouterError', new TokenRouterError('overloaded', 'admission queue is full (8 waiting)'), 429, 'overloaded', 'admission queue is full (8 waiting)'],
  ['unknown model', new TokenRouterError('not_found', 'no model "x"', 'model'), 404, 'model_not_found', 'no model "x"'],
  [
    'IrCompileError',
    new IrCompileError([{ nodeId: 'n1', code: 'unknown_type', message: 'no such node type' } as never]),
    400,
    'invalid_ir',
    /invalid IR: n1: unknown_type/,
  ],
  [
    'ThroughputError (infeasible)',
    new ThroughputError('INFEASIBLE_THRESHOLDS', 'threshold 9 exceeds max batch 8'),
    400,
    'infeasible_thresholds',
    'threshold 9 exceeds max batch 8',
  ],
  [
    'ThroughputError (too big)',
    new ThroughputError('STATE_SPACE_TOO_LARGE', 'the chain would have 10^9 states'),
    400,
    'invalid_request',
    'the chain would have 10^9 states',
  ],
  ['StepError', new StepError('large step failed: out of memory'), 503, 'runner_error', 'large step failed: out of memory'],
  ['WorkerRunnerError', new WorkerRunnerError('worker for model "large" exited'), 503, 'runner_error', 'worker for model "large" exited'],
  ['EngineThreadError', new EngineThreadError('engine thread of model "large" crashed'), 503, 'runner_error', 'engine thread of model "large" crashed'],
  ['RemoteRunnerError', new RemoteRunnerError('no_replicas', 'no sub-server for "large" answers'), 503, 'runner_error', 'no sub-server for "large" answers'],
  ['ModelFolderError', new ModelFolderError('/srv/models/large', 'config.json', 'vocab', 'missing'), 500, 'internal', 'internal error'],
  ['LifecycleError', new LifecycleError('done' as never, 'ADMIT' as never), 500, 'internal', 'internal error'],
  ['InvariantError', new InvariantError('kv bytes leaked'), 500, 'internal', 'internal error'],
  ['plain Error', new Error('secret path /etc/x'), 500, 'internal', 'internal error'],
  ['a thrown string', 'boom', 500, 'internal', 'internal error'],
];

describe('toHttpError', () => {
  it.each(cases)('%s', (_name, e, status, code, message) => {
    const h = toHttpError(e);
    expect([h.status, h.body.error.code]).toEqual([status, code]);
    if (typeof message === 'string') expect(h.body.error.message).toBe(message);
    else expect(h.body.error.message).toMatch(message);
    expect(h.body.error.type).toBe(status === 429 ? 'rate_limit_error' : status >= 500 ? 'server_error' : 'invalid_request_error');
  });

  it('keeps the details a client acts on (IR issues per node)', () => {
    const h = toHttpError(new IrCompileError([{ nodeId: 'n1', code: 'unknown_type', message: 'no such node type' } as never]));
    expect(h.body.error.param).toBe('ir');
    expect(h.body.error.details).toEqual([{ nodeId: 'n1', code: 'unknown_type', message: 'no such node type' }]);
  });

  it("passes body-parser's 4xx through with a readable message", () => {
    const h = toHttpError(Object.assign(new Error('Unexpected end'), { status: 400, type: 'entity.parse.failed' }));
    expect([h.status, h.body.error.code, h.body.error.message]).toEqual([400, 'entity.parse.failed', 'request body is not valid JSON: Unexpected end']);
  });

  it('answers 429 with Retry-After', () => {
    expect(toHttpError(new TokenRouterError('overloaded', 'full')).headers).toEqual({ 'Retry-After': '1' });
  });
});
