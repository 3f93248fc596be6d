// Live-feed WebSocket messages (server → timeline): one zod schema, the server's type and the timeline's check derived from it.
import { z } from 'zod';
import { traceEventSchema } from '../trace.ts';

export const laneLiveStatsSchema = z.object({
  name: z.string(),
  running: z.number(),
  waiting: z.number(),
  pendingReturn: z.number(),
  kvBytes: z.number(),
  threshold: z.number(),
});
export type LaneLiveStats = z.infer<typeof laneLiveStatsSchema>;

function liveSchema<E extends z.ZodType>(event: E) {
  return z.discriminatedUnion('type', [
    z.object({ type: z.literal('snapshot'), events: z.array(event), now: z.number() }),
    z.object({ type: z.literal('events'), events: z.array(event) }),
    z.object({ type: z.literal('stats'), now: z.number(), models: z.array(laneLiveStatsSchema) }),
    /** Events this client missed because it read too slowly (the runtime never waits for a client). */
    z.object({ type: z.literal('dropped'), count: z.number() }),
    z.object({ type: z.literal('error'), message: z.string() }),
  ]);
}

/** A whole message, events included: what the server sends. */
export const liveMessageSchema = liveSchema(traceEventSchema);
export type LiveMessage = z.infer<typeof liveMessageSchema>;

/** The envelope alone: a client checks events one by one, so that one bad event does not cost the whole batch. */
export const liveEnvelopeSchema = liveSchema(z.unknown());
