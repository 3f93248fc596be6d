// What sets an engine up and steers it beside the requests it serves: its settings, the port it talks on, lifecycle and operator messages.
import { z } from 'zod';
import { modelInfoSchema } from './runnerProtocol.ts';

const int = z.number().int();
/** Any number but NaN: capacities and deadlines may be Infinity (unbounded), which z.number() refuses. */
export const amount = z.custom<number>((v) => typeof v === 'number' && !Number.isNaN(v), 'a number');
export const list = <T extends z.ZodType>(item: T) => z.array(item).readonly();

/** The scheduling modes (runtime/core/servingPolicy.ts explains them); the config schema and the engine wire share this one list. */
export const SCHEDULING_MODES = ['step-sync', 'model-sync', 'async-immediate', 'async-delayed'] as const;

/**
 * What an engine begins with: the config's settings under their config names, plus what the entry
 * adds. `amount`s may be Infinity (no bound); `retainState: false` is standard serving.
 */
const engineSettingsSchema = z.object({
  index: int,
  models: list(z.string()),
  maxBatch: int,
  maxStepTokens: amount,
  threshold: int,
  kvCapacityTokens: amount,
  mode: z.enum(SCHEDULING_MODES),
  retainState: z.boolean(),
  maxWaitMs: amount,
  prefixCache: z.boolean(),
  origin: z.number(),
  trace: z.boolean(),
  checkInvariants: z.boolean(),
});

/** What the protocol uses of a MessagePort (one moves with the message that names it). */
export interface PortLike {
  postMessage(message: unknown, transfer?: readonly unknown[]): void;
  on(event: 'message', listener: (message: unknown) => void): unknown;
  close(): void;
}
const portSchema = z.custom<PortLike>((p) => typeof p === 'object' && p !== null && 'postMessage' in p && 'close' in p, 'a MessagePort');

/** Entry → engine, besides the requests: a deployment's start, peers (re)joining, the operator's and the serving policy's calls. */
export const controlToEngine = [
  z.object({ type: z.literal('begin'), settings: engineSettingsSchema, peers: z.record(z.string(), portSchema) }),
  z.object({ type: z.literal('peer'), name: z.string(), port: portSchema }),
  z.object({ type: z.literal('threshold'), threshold: int, maxWaitMs: amount }),
  /** A sync mode's round lets the engine launch one step. */
  z.object({ type: z.literal('grant') }),
  z.object({ type: z.literal('down'), down: z.boolean() }),
  z.object({ type: z.literal('trace'), on: z.boolean() }),
  /** The engine of `model` restarted empty: handoffs there carry the whole sequence again. */
  z.object({ type: z.literal('peer-lost'), model: z.string() }),
  z.object({ type: z.literal('close') }),
  /** Test hook: the thread dies with an uncaught error, as a native crash would kill it. */
  z.object({ type: z.literal('crash'), message: z.string() }),
] as const;

/** Engine → entry, besides the steps: an engine thread's loading and closing. */
export const controlFromEngine = [
  z.object({ type: z.literal('ready'), info: modelInfoSchema }),
  z.object({ type: z.literal('load-error'), message: z.string() }),
  z.object({ type: z.literal('closed') }),
] as const;

export type EngineSettings = z.infer<typeof engineSettingsSchema>;
