// Nodes appended after a decoder's logits so ORT does each row's O(V) work natively, over the rows that read it: top-k candidates, log-sum-exp, entropy, a seeded temperature draw.
import { BOOL, FLOAT, GRAPH_INPUT, GRAPH_OUTPUT, INT64, initializer, node, valueInfo, type Attr } from './onnxProto.ts';

/**
 * The inputs a step feeds the signal nodes and the outputs it may fetch. Each group of nodes runs
 * over the rows a step names for it only (ORT runs every node whatever is fetched, and a [0, 1, V]
 * tensor costs nothing): TopK over every row; log-sum-exp and entropy over `sigRows`; ORT's draw
 * over `drawRows`; the tempered probabilities over `cutRows`. Outputs are [rows of the group, 1, ·].
 * The draw and the tempered probabilities leave each row's banned ids out; the signals do not.
 */
export const SIG = {
  /** int64 [1]: how many candidates TopK keeps. */
  k: 'tr_k',
  /** float [B, 1, 1]: 1 / temperature per row (any positive number on a greedy row). */
  invT: 'tr_inv_t',
  /** float [B, 1, 1]: the row's seeded uniform in [0, 1). */
  u: 'tr_u',
  /** int64 [Bs]: the rows whose log-sum-exp and entropy are read (ascending batch rows). */
  sigRows: 'tr_sig_rows',
  /** int64 [Bd]: the rows ORT draws for (temperature without cuts). */
  drawRows: 'tr_draw_rows',
  /** int64 [Bc]: the rows whose tempered probabilities are handed back (temperature with cuts). */
  cutRows: 'tr_cut_rows',
  /** int64 [B, 1, NB]: ids the draw leaves out where `banOn` holds (a row's banned EOS ids, padded with any id). */
  banIds: 'tr_ban_ids',
  /** bool [B, 1, NB]: which of `banIds` are left out of the row's draw (ORT's draw and the tempered probabilities; signals keep them). */
  banOn: 'tr_ban_on',
  /** float / int64 [B, 1, K]: the K best logits and their ids, best first (ties: lower id first). */
  topLogits: 'tr_top_logits',
  topIds: 'tr_top_ids',
  /** float [Bs, 1, 1]: log Σ exp(logits). */
  lse: 'tr_lse',
  /** float [Bs, 1, 1]: the entropy in nats, -Σ p log p = lse - Σ p·logits. */
  entropy: 'tr_entropy',
  /** int64 [Bd, 1, 1]: the inverse-CDF draw in id order over the whole vocabulary (how many cumulative sums stay <= u · sum). */
  draw: 'tr_draw',
  /** float [Bd, 1, 1]: the drawn token's logit. */
  drawLogit: 'tr_draw_logit',
  /** float [Bc, 1, V]: the tempered probabilities softmax(logits / T) (the exact fallback reads them). */
  weights: 'tr_weights',
  /** float [Bc, 1, 1]: Σ of the tempered probabilities (1 up to rounding). */
  weightSum: 'tr_weight_sum',
  /** float [Bc, 1, K]: the tempered probabilities of the candidates. */
  topWeights: 'tr_top_weights',
} as const;

/** The inputs the signal nodes add to the graph (the runner feeds them every step). */
export const SIG_INPUTS: readonly string[] = [SIG.k, SIG.invT, SIG.u, SIG.sigRows, SIG.drawRows, SIG.cutRows, SIG.banIds, SIG.banOn];

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
  out.push(initializer(c('neg_inf'), FLOAT, [], [-Infinity]));
  out.push(initializer(c('one'), INT64, [1], [1]));
  out.push(initializer(c('end'), INT64, [1], [2 ** 53 - 1]));
  out.push(initializer(c('blockf'), FLOAT, [], [block]));
  out.push(initializer(c('row_shape'), INT64, [3], [1, 1, block]));
  out.push(initializer(c('nb_last'), FLOAT, [], [Math.ceil(vocab / block) - 1]));
  out.push(initializer(c('last_f'), FLOAT, [], [vocab - 1]));
  // the last position of every row: [B, 1, V]
  if (lastOnly) op('Identity', [logits], c('x'));
  else op('Slice', [logits, c('minus1'), c('end'), c('axis_seq')], c('x'));
  out.push(node('TopK', [c('x'), SIG.k], [SIG.topLogits, SIG.topIds], [{ name: 'axis', i: -1 }, { name: 'largest', i: 1 }, { name: 'sorted', i: 1 }], 'topk'));
  const rows = (input: string, group: string, name: string): string => {
    op('Gather', [input, group], c(name), [{ name: 'axis', i: 0 }]);
    return c(name);
  };
  // log-sum-exp and entropy of the sigRows; Softmax is one vectorised kernel, where elementwise ops
  // with a per-row operand cost several times an Exp in ORT
  const xs = rows(c('x'), SIG.sigRows, 's_x');
  op('Softmax', [xs], c('p'), [{ name: 'axis', i: -1 }]);
  op('Slice', [rows(SIG.topLogits, SIG.sigRows, 's_top'), c('zero'), c('one'), c('axis_last')], c('max'));
  op('Slice', [rows(SIG.topIds, SIG.sigRows, 's_ids'), c('zero'), c('one'), c('axis_last')], c('arg'));
  op('GatherElements', [c('p'), c('arg')], c('p_max'), [{ name: 'axis', i: -1 }]);
  // log Σ e^x = max - log p(max): exact to float rounding, as p(max) >= 1 / V
  op('Log', [c('p_max')], c('log_p_max'));
  op('Sub', [c('max'), c('log_p_max')], SIG.lse);
  // H = lse - Σ p·x (a batched MatMul [B,1,V] x [B,V,1] would take ~7x as long as Mul + ReduceSum)
  op('Mul', [c('p'), xs], c('p_x'));
  reduce('ReduceSum', c('p_x'), c('px'));
  op('Sub', [SIG.lse, c('px')], SIG.entropy);
  // the draw of the drawRows: tempered probabilities in id order, inverse CDF in two levels (blocks of
  // `block` ids, then within the block) as one CumSum over the whole vocabulary runs ~20x slower in ORT than a sum
  // a group's rows with their banned ids at -inf: the current values are written back where no ban holds
  const banned = (xg: string, group: string, g: string): string => {
    const ids = rows(SIG.banIds, group, `${g}_ban_ids`);
    op('GatherElements', [xg, ids], c(`${g}_ban_cur`), [{ name: 'axis', i: -1 }]);
    op('Where', [rows(SIG.banOn, group, `${g}_ban_on`), c('neg_inf'), c(`${g}_ban_cur`)], c(`${g}_ban_val`));
    op('ScatterElements', [xg, ids, c(`${g}_ban_val`)], c(`${g}_xb`), [{ name: 'axis', i: -1 }]);
    return c(`${g}_xb`);
  };
  const xd = banned(rows(c('x'), SIG.drawRows, 'd_x'), SIG.drawRows, 'd');
  op('Mul', [xd, rows(SIG.invT, SIG.drawRows, 'd_inv_t')], c('xt'));
  op('Softmax', [c('xt')], c('w'), [{ name: 'axis', i: -1 }]);
  const nb = Math.ceil(vocab / block);
  // static shapes: a -1 cannot be inferred over a group of no rows
  out.push(initializer(c('block_shape'), INT64, [3], [0, nb, block]));
  if (vocab % block === 0) op('Reshape', [c('w'), c('block_shape')], c('blocks'));
  else {
    out.push(initializer(c('pads'), INT64, [6], [0, 0, 0, 0, 0, nb * block - vocab]));
    op('Pad', [c('w'), c('pads')], c('wp'));
    op('Reshape', [c('wp'), c('block_shape')], c('blocks'));
  }
  reduce('ReduceSum', c('blocks'), c('bs'));
  op('CumSum', [c('bs'), c('axis_seq')], c('bc'));
  op('Slice', [c('bc'), c('minus1'), c('end'), c('axis_seq')], c('w_sum'));
  op('Mul', [c('w_sum'), rows(SIG.u, SIG.drawRows, 'd_u')], c('target'));
  op(le, [c('bc'), c('target')], c('b_below'));
  op('Cast', [c('b_below')], c('b_below_f'), [{ name: 'to', i: FLOAT }]);
  reduce('ReduceSum', c('b_below_f'), c('blk_n'), 1);
  op('Mul', [c('bs'), c('b_below_f')], c('b_before'));
  reduce('ReduceSum', c('b_before'), c('prev'), 1);
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
  op('Min', [c('count'), c('last_f')], c('token_f'));
  op('Cast', [c('token_f')], SIG.draw, [{ name: 'to', i: INT64 }]);
  op('GatherElements', [xd, SIG.draw], SIG.drawLogit, [{ name: 'axis', i: -1 }]);
  // the cutRows' tempered probabilities, for the draw under min-p / top-k / top-p in JavaScript
  op('Mul', [banned(rows(c('x'), SIG.cutRows, 'c_x'), SIG.cutRows, 'c'), rows(SIG.invT, SIG.cutRows, 'c_inv_t')], c('ct'));
  op('Softmax', [c('ct')], SIG.weights, [{ name: 'axis', i: -1 }]);
  reduce('ReduceSum', SIG.weights, SIG.weightSum);
  op('GatherElements', [SIG.weights, rows(SIG.topIds, SIG.cutRows, 'c_ids')], SIG.topWeights, [{ name: 'axis', i: -1 }]);
  for (const i of SIG_INPUTS) out.push(valueInfo(GRAPH_INPUT, i, i === SIG.invT || i === SIG.u ? FLOAT : i === SIG.banOn ? BOOL : INT64));
  for (const o of [SIG.topLogits, SIG.lse, SIG.entropy, SIG.weights, SIG.weightSum, SIG.topWeights, SIG.drawLogit]) out.push(valueInfo(GRAPH_OUTPUT, o, FLOAT));
  for (const o of [SIG.topIds, SIG.draw]) out.push(valueInfo(GRAPH_OUTPUT, o, INT64));
  return out;
}
