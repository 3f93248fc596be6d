// The input tensors of one forward pass over the batch: new tokens left-padded, positions, the attention mask over every slot.
import * as ort from 'onnxruntime-node';
import type { BatchState, CacheEntry } from './batchKvStore.ts';

/** The feeds as the graph takes them, and the mask over past and new slots the KV store keeps after the pass. */
export interface PassInputs {
  inputs: Record<string, ort.Tensor>;
  /** [B, T2] attention mask, and the same as bytes. */
  mask: BigInt64Array;
  valid: Uint8Array;
  /** Slots fed: every allocated past slot, then the S new ones. */
  T2: number;
}

/**
 * Row b of the batch is step row `order[b]`, feeding `feeds[order[b]]` (null: nothing, its new slots
 * masked) at the end of its cache. Every allocated slot is fed (the free ones masked): the buffers go in as they are.
 */
export function passInputs(
  batch: BatchState,
  entries: readonly CacheEntry[],
  order: readonly number[],
  feeds: readonly (readonly number[] | null)[],
  S: number,
  graph: { padTokenId: number; hasPositionIds: boolean; pastNames: readonly string[] },
): PassInputs {
  const B = feeds.length;
  const P = batch.cap;
  const T2 = P + S;
  const pad = BigInt(graph.padTokenId);
  const inputIds = new BigInt64Array(B * S).fill(pad);
  const positionIds = new BigInt64Array(B * S);
  const mask = new BigInt64Array(B * T2);
  const valid = new Uint8Array(B * T2);
  for (let b = 0; b < B; b++) {
    const f = feeds[order[b]];
    const k = f?.length ?? 0;
    const pos = entries[order[b]].len;
    // new tokens are left-padded so every row's last fed token sits at S-1
    for (let j = 0; j < k; j++) {
      inputIds[b * S + S - k + j] = BigInt(f![j]);
      positionIds[b * S + S - k + j] = BigInt(pos + j);
    }
    mask.set(batch.mask.subarray(b * P, b * P + P), b * T2);
    mask.fill(1n, b * T2 + P + S - k, b * T2 + T2);
    valid.set(batch.valid.subarray(b * P, b * P + P), b * T2);
    valid.fill(1, b * T2 + P + S - k, b * T2 + T2);
  }
  const inputs: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor('int64', inputIds, [B, S]),
    attention_mask: new ort.Tensor('int64', mask, [B, T2]),
  };
  if (graph.hasPositionIds) inputs.position_ids = new ort.Tensor('int64', positionIds, [B, S]);
  for (let i = 0; i < graph.pastNames.length; i++) inputs[graph.pastNames[i]] = batch.past[i];
  return { inputs, mask, valid, T2 };
}
