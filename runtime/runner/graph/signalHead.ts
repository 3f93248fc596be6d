// Nodes appended after a decoder's logits so ORT does each row's O(V) work natively: top-k candidates, log-sum-exp, entropy and a seeded temperature draw.
import { FLOAT, GRAPH_INPUT, GRAPH_OUTPUT, INT64, initializer, node, valueInfo, type Attr } from './onnxProto.ts';

/** The inputs a step feeds the signal nodes and the outputs it may fetch (each [B, 1, ·]). */
export const SIG = {
  /** int64 [1]: how many candidates TopK keeps. */
  k: 'tr_k',
  /** float [B, 1, 1]: 1 / temperature per row (any positive number on a greedy row). */
  invT: 'tr_inv_t',
  /** float [B, 1, 1]: the row's seeded uniform in [0, 1). */
  u: 'tr_u',
  /** float / int64 [B, 1, K]: the K best logits and their ids, best first (ties: lower id first). */
  topLogits: 'tr_top_logits',
  topIds: 'tr_top_ids',
  /** float [B, 1, 1]: log Σ exp(logits). */
  lse: 'tr_lse',
  /** float [B, 1, 1]: the entropy in nats, -Σ p log p = lse - Σ p·logits. */
  entropy: 'tr_entropy',
  /** float [B, 1, V]: the tempered probabilities softmax(logits / T) (the exact fallback reads them). */
  weights: 'tr_weights',
  /** float [B, 1, 1]: Σ of the tempered probabilities (summed block by block; 1 up to rounding). */
  weightSum: 'tr_weight_sum',
  /** float [B, 1, K]: the tempered probabilities of the candidates. */
  topWeights: 'tr_top_weights',
  /** int64 [B, 1, 1]: the inverse-CDF draw in id order over the whole vocabulary (how many cumulative sums stay <= u · sum). */
  draw: 'tr_draw',
  /** float [B, 1, 1]: the drawn token's logit. */
  drawLogit: 'tr_draw_logit',
} as const;

/** Ids per block of the two-level draw: a divisor of V near √V·2 (no padding copy), else 512. */
export function drawBlock(vocab: number): number {
  for (let b = 1024; b >= 64; b--) if (vocab % b === 0) return b;
  return vocab <= 1024 ? vocab : 512;
}

/**
 * The graph fields (nodes, initializers, inputs, outputs) computing SIG's outputs from `logits`
 * ([B, L, V]; the last position is taken, unless `lastOnly` says L is 1 already). `opset` is the model's: reductions take their axes as
 * an attribute before opset 18 (ReduceSum: before 13).
 */
export function signalHead(logits: string, opts: { opset: number; vocab: number; lastOnly: boolean }): Uint8Array[] {
  const { opset, vocab, lastOnly } = opts;
  const block = drawBlock(vocab);
  const out: Uint8Array[] = [];
  const c = (n: string): string => `tr/${n}`;
  const reduce = (op: string, input: string, output: string, axis: -1 | 1 = -1): void => {
    const attrAxes = op === 'ReduceSum' ? opset < 13 : opset < 18;
    if (attrAxes) out.push(node(op, [input], [output], [{ name: 'axes', ints: [axis] }, { name: 'keepdims', i: 1 }]));
    else out.push(node(op, [input, c(axis === 1 ? 'axis_seq' : 'axis_last')], [output], [{ name: 'keepdims', i: 1 }]));
  };
  const le = opset >= 12 ? 'LessOrEqual' : 'Less';
  const op = (type: string, inputs: string[], output: string, attrs: Attr[] = []): void => {
    out.push(node(type, inputs, [output], attrs));
  };
  out.push(initializer(c('axis_last'), INT64, [1], [-1]));
  out.push(initializer(c('axis_seq'), INT64, [1], [1]));
  out.push(initializer(c('minus1'), INT64, [1], [-1]));
  out.push(initializer(c('zero'), INT64, [1], [0]));
  out.push(initializer(c('one'), INT64, [1], [1]));
  out.push(initializer(c('end'), INT64, [1], [2 ** 53 - 1]));
  out.push(initializer(c('two'), INT64, [1], [2]));
  out.push(initializer(c('onef'), FLOAT, [], [1]));
  out.push(initializer(c('blockf'), FLOAT, [], [block]));
  out.push(initializer(c('block_shape'), INT64, [3], [0, -1, block]));
  out.push(initializer(c('row_shape'), INT64, [3], [1, 1, block]));
  // the last position of every row: [B, 1, V]
  if (lastOnly) op('Identity', [logits], c('x'));
  else op('Slice', [logits, c('minus1'), c('end'), c('axis_seq')], c('x'));
  out.push(node('TopK', [c('x'), SIG.k], [SIG.topLogits, SIG.topIds], [{ name: 'axis', i: -1 }, { name: 'largest', i: 1 }, { name: 'sorted', i: 1 }], 'topk'));
  // Softmax is one vectorised kernel; elementwise ops with a per-row operand cost several times an Exp in ORT
  op('Softmax', [c('x')], c('p'), [{ name: 'axis', i: -1 }]);
  op('Slice', [SIG.topLogits, c('zero'), c('one'), c('axis_last')], c('max'));
  op('Slice', [SIG.topIds, c('zero'), c('one'), c('axis_last')], c('arg'));
  op('GatherElements', [c('p'), c('arg')], c('p_max'), [{ name: 'axis', i: -1 }]);
  // log Σ e^x = max - log p(max): exact to float rounding, as p(max) >= 1 / V
  op('Log', [c('p_max')], c('log_p_max'));
  op('Sub', [c('max'), c('log_p_max')], SIG.lse);
  // H = lse - Σ p·x (a batched MatMul [B,1,V] x [B,V,1] would take ~7x as long as Mul + ReduceSum)
  op('Mul', [c('p'), c('x')], c('p_x'));
  reduce('ReduceSum', c('p_x'), c('px'));
  op('Sub', [SIG.lse, c('px')], SIG.entropy);
  // the draw: tempered probabilities in id order, inverse CDF in two levels (blocks of `block` ids, then
  // within the block) as one CumSum over the whole vocabulary runs ~20x slower in ORT than a sum
  op('Mul', [c('x'), SIG.invT], c('xt'));
  op('Softmax', [c('xt')], SIG.weights, [{ name: 'axis', i: -1 }]);
  op('Shape', [c('x')], c('shape'));
  op('Slice', [c('shape'), c('minus1'), c('end'), c('zero')], c('v'));
  if (vocab % block === 0) op('Reshape', [SIG.weights, c('block_shape')], c('blocks'));
  else {
    out.push(initializer(c('block'), INT64, [1], [block]), initializer(c('zeros5'), INT64, [5], [0, 0, 0, 0, 0]));
    op('Mod', [c('v'), c('block')], c('v_mod'));
    op('Sub', [c('block'), c('v_mod')], c('pad_raw'));
    op('Mod', [c('pad_raw'), c('block')], c('pad'));
    op('Concat', [c('zeros5'), c('pad')], c('pads'), [{ name: 'axis', i: 0 }]);
    op('Pad', [SIG.weights, c('pads')], c('wp'));
    op('Reshape', [c('wp'), c('block_shape')], c('blocks'));
  }
  reduce('ReduceSum', c('blocks'), c('bs'));
  op('CumSum', [c('bs'), c('axis_seq')], c('bc'));
  op('Slice', [c('bc'), c('minus1'), c('end'), c('axis_seq')], SIG.weightSum);
  op('Mul', [SIG.weightSum, SIG.u], c('target'));
  op(le, [c('bc'), c('target')], c('b_below'));
  op('Cast', [c('b_below')], c('b_below_f'), [{ name: 'to', i: FLOAT }]);
  reduce('ReduceSum', c('b_below_f'), c('blk_n'), 1);
  op('Mul', [c('bs'), c('b_below_f')], c('b_before'));
  reduce('ReduceSum', c('b_before'), c('prev'), 1);
  op('Shape', [c('bs')], c('bs_shape'));
  op('Slice', [c('bs_shape'), c('one'), c('two'), c('zero')], c('nb'));
  op('Cast', [c('nb')], c('nb_f'), [{ name: 'to', i: FLOAT }]);
  op('Sub', [c('nb_f'), c('onef')], c('nb_last'));
  op('Min', [c('blk_n'), c('nb_last')], c('blk_f'));
  op('Cast', [c('blk_f')], c('blk'), [{ name: 'to', i: INT64 }]);
  op('Expand', [c('blk'), c('row_shape')], c('blk_idx'));
  op('GatherElements', [c('blocks'), c('blk_idx')], c('row'), [{ name: 'axis', i: 1 }]);
  op('CumSum', [c('row'), c('axis_last')], c('row_cs'));
  op('Add', [c('row_cs'), c('prev')], c('row_acc'));
  op(le, [c('row_acc'), c('target')], c('below'));
  op('Cast', [c('below')], c('below_f'), [{ name: 'to', i: FLOAT }]);
  reduce('ReduceSum', c('below_f'), c('in_blk'));
  op('Mul', [c('blk_f'), c('blockf')], c('blk_start'));
  op('Add', [c('blk_start'), c('in_blk')], c('count'));
  // clamped to the last id (u · total may round past the final cumulative sum)
  op('Cast', [c('v')], c('v_f'), [{ name: 'to', i: FLOAT }]);
  op('Sub', [c('v_f'), c('onef')], c('last_f'));
  op('Min', [c('count'), c('last_f')], c('token_f'));
  op('Cast', [c('token_f')], SIG.draw, [{ name: 'to', i: INT64 }]);
  op('GatherElements', [c('x'), SIG.draw], SIG.drawLogit, [{ name: 'axis', i: -1 }]);
  op('GatherElements', [SIG.weights, SIG.topIds], SIG.topWeights, [{ name: 'axis', i: -1 }]);
  out.push(valueInfo(GRAPH_INPUT, SIG.k, INT64), valueInfo(GRAPH_INPUT, SIG.invT, FLOAT), valueInfo(GRAPH_INPUT, SIG.u, FLOAT));
  for (const o of [SIG.topLogits, SIG.lse, SIG.entropy, SIG.weights, SIG.weightSum, SIG.topWeights, SIG.drawLogit]) out.push(valueInfo(GRAPH_OUTPUT, o, FLOAT));
  for (const o of [SIG.topIds, SIG.draw]) out.push(valueInfo(GRAPH_OUTPUT, o, INT64));
  return out;
}
