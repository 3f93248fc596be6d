// Nodes appended after a decoder's logits so ORT does each row's O(V) work natively, over the rows that read it: top-k candidates, log-sum-exp, entropy, a seeded temperature draw; for grammar-masked rows the same over their allowed tokens.
import { BOOL, concat, FLOAT, GRAPH_INPUT, GRAPH_OUTPUT, INT64, initializer, node, valueInfo, wrap, type Attr } from './onnxProto.ts';

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
  /** int64 [Bm]: the grammar-masked rows (batch rows): the MASKED group's nodes run over them, in this order. */
  maskRows: 'tr_mask_rows',
  /** bool [Bm, 1, V]: the tokens each masked row's grammar allows (maskRows order). */
  allowed: 'tr_allowed',
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

/** The names one group of rows reads and writes: its row lists and its outputs (SIG's meanings). */
export type GroupNames = Record<
  'sigRows' | 'drawRows' | 'cutRows' | 'topLogits' | 'topIds' | 'lse' | 'entropy' | 'draw' | 'drawLogit' | 'weights' | 'weightSum' | 'topWeights',
  string
>;

/**
 * The masked rows' group: SIG's nodes over each masked row's logits with every refused token at
 * REFUSED, so candidates, signals and draws describe the softmax renormalised over the allowed
 * tokens (maskedRow.ts analyzeMasked is the reference). Row lists index the maskRows (0..Bm-1), not
 * the batch; TopK's candidates past the allowed tokens have the logit REFUSED.
 */
export const MASKED: GroupNames = {
  sigRows: 'tr_m_sig_rows',
  drawRows: 'tr_m_draw_rows',
  cutRows: 'tr_m_cut_rows',
  topLogits: 'tr_m_top_logits',
  topIds: 'tr_m_top_ids',
  lse: 'tr_m_lse',
  entropy: 'tr_m_entropy',
  draw: 'tr_m_draw',
  drawLogit: 'tr_m_draw_logit',
  weights: 'tr_m_weights',
  weightSum: 'tr_m_weight_sum',
  topWeights: 'tr_m_top_weights',
};

/** A refused token's logit: the lowest float, so its probability is exactly 0 and 0 × it is 0 in the entropy (with -inf it is NaN). */
export const REFUSED = -3.4028234663852886e38;

/** A group's outputs in the order group() declares them, which is the order the If's branches give them. */
const MASKED_OUTPUTS = ['topLogits', 'lse', 'entropy', 'weights', 'weightSum', 'topWeights', 'drawLogit', 'topIds', 'draw'] as const;

/** The inputs the signal nodes add to the graph (the runner feeds them every step); `masked`: with the masked group's. */
export function signalInputs(masked: boolean): string[] {
  const plain = [SIG.k, SIG.invT, SIG.u, SIG.sigRows, SIG.drawRows, SIG.cutRows, SIG.banIds, SIG.banOn];
  return masked ? [...plain, SIG.maskRows, SIG.allowed, MASKED.sigRows, MASKED.drawRows, MASKED.cutRows] : plain;
}

/** The inputs of the plain signal nodes (graphs built without the masked group). */
export const SIG_INPUTS: readonly string[] = signalInputs(false);

/** Ids per block of the two-level draw: a divisor of V near √V·2 (no padding copy), else 512. */
export function drawBlock(vocab: number): number {
  for (let b = 1024; b >= 64; b--) if (vocab % b === 0) return b;
  return vocab <= 1024 ? vocab : 512;
}

/** What one group's nodes read: its rows' logits and per-row feeds (all [rows, 1, ·], in the same row order). */
interface GroupSource {
  x: string;
  invT: string;
  u: string;
  banIds: string;
  banOn: string;
}

/**
 * The graph fields (nodes, initializers, inputs, outputs) computing SIG's outputs from `logits`
 * ([B, L, V]; the last position is taken, unless `lastOnly` says L is 1 already), and with `masked`
 * MASKED's. `opset` is the model's: reductions take their axes as an attribute before opset 18
 * (ReduceSum: before 13).
 */
export function signalHead(logits: string, opts: { opset: number; vocab: number; lastOnly: boolean; masked?: boolean }): Uint8Array[] {
  const { opset, vocab, lastOnly } = opts;
  const block = drawBlock(vocab);
  const out: Uint8Array[] = [];
  const c = (n: string): string => `tr/${n}`;
  const reduce = (op: string, input: string, output: string, axis: -1 | 1 = -1): void => {
    const attrAxes = op === 'ReduceSum' ? opset < 13 : opset < 18;
    if (attrAxes)
      out.push(
        node(
          op,
          [input],
          [output],
          [
            { name: 'axes', ints: [axis] },
            { name: 'keepdims', i: 1 },
          ],
        ),
      );
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
  const nb = Math.ceil(vocab / block);
  // static shapes: a -1 cannot be inferred over a group of no rows
  out.push(initializer(c('block_shape'), INT64, [3], [0, nb, block]));
  if (vocab % block !== 0) out.push(initializer(c('pads'), INT64, [6], [0, 0, 0, 0, 0, nb * block - vocab]));

  /** One group's nodes over `src`, node names prefixed `p`. */
  const group = (src: GroupSource, names: GroupNames, p: string): void => {
    const g = (n: string): string => c(p + n);
    const rows = (input: string, list: string, name: string): string => {
      op('Gather', [input, list], g(name), [{ name: 'axis', i: 0 }]);
      return g(name);
    };
    out.push(
      node(
        'TopK',
        [src.x, SIG.k],
        [names.topLogits, names.topIds],
        [
          { name: 'axis', i: -1 },
          { name: 'largest', i: 1 },
          { name: 'sorted', i: 1 },
        ],
        `${p}topk`,
      ),
    );
    // log-sum-exp and entropy of the sigRows; Softmax is one vectorised kernel, where elementwise ops
    // with a per-row operand cost several times an Exp in ORT
    const xs = rows(src.x, names.sigRows, 's_x');
    op('Softmax', [xs], g('p'), [{ name: 'axis', i: -1 }]);
    op('Slice', [rows(names.topLogits, names.sigRows, 's_top'), c('zero'), c('one'), c('axis_last')], g('max'));
    op('Slice', [rows(names.topIds, names.sigRows, 's_ids'), c('zero'), c('one'), c('axis_last')], g('arg'));
    op('GatherElements', [g('p'), g('arg')], g('p_max'), [{ name: 'axis', i: -1 }]);
    // log Σ e^x = max - log p(max): exact to float rounding, as p(max) >= 1 / V
    op('Log', [g('p_max')], g('log_p_max'));
    op('Sub', [g('max'), g('log_p_max')], names.lse);
    // H = lse - Σ p·x (a batched MatMul [B,1,V] x [B,V,1] would take ~7x as long as Mul + ReduceSum)
    op('Mul', [g('p'), xs], g('p_x'));
    reduce('ReduceSum', g('p_x'), g('px'));
    op('Sub', [names.lse, g('px')], names.entropy);
    // the draw of the drawRows: tempered probabilities in id order, inverse CDF in two levels (blocks of
    // `block` ids, then within the block) as one CumSum over the whole vocabulary runs ~20x slower in ORT than a sum
    // a group's rows with their banned ids at -inf: the current values are written back where no ban holds
    const banned = (xg: string, list: string, b: string): string => {
      const ids = rows(src.banIds, list, `${b}_ban_ids`);
      op('GatherElements', [xg, ids], g(`${b}_ban_cur`), [{ name: 'axis', i: -1 }]);
      op('Where', [rows(src.banOn, list, `${b}_ban_on`), c('neg_inf'), g(`${b}_ban_cur`)], g(`${b}_ban_val`));
      op('ScatterElements', [xg, ids, g(`${b}_ban_val`)], g(`${b}_xb`), [{ name: 'axis', i: -1 }]);
      return g(`${b}_xb`);
    };
    const xd = banned(rows(src.x, names.drawRows, 'd_x'), names.drawRows, 'd');
    op('Mul', [xd, rows(src.invT, names.drawRows, 'd_inv_t')], g('xt'));
    op('Softmax', [g('xt')], g('w'), [{ name: 'axis', i: -1 }]);
    if (vocab % block === 0) op('Reshape', [g('w'), c('block_shape')], g('blocks'));
    else {
      op('Pad', [g('w'), c('pads')], g('wp'));
      op('Reshape', [g('wp'), c('block_shape')], g('blocks'));
    }
    reduce('ReduceSum', g('blocks'), g('bs'));
    op('CumSum', [g('bs'), c('axis_seq')], g('bc'));
    op('Slice', [g('bc'), c('minus1'), c('end'), c('axis_seq')], g('w_sum'));
    op('Mul', [g('w_sum'), rows(src.u, names.drawRows, 'd_u')], g('target'));
    op(le, [g('bc'), g('target')], g('b_below'));
    op('Cast', [g('b_below')], g('b_below_f'), [{ name: 'to', i: FLOAT }]);
    reduce('ReduceSum', g('b_below_f'), g('blk_n'), 1);
    op('Mul', [g('bs'), g('b_below_f')], g('b_before'));
    reduce('ReduceSum', g('b_before'), g('prev'), 1);
    op('Min', [g('blk_n'), c('nb_last')], g('blk_f'));
    op('Cast', [g('blk_f')], g('blk'), [{ name: 'to', i: INT64 }]);
    op('Expand', [g('blk'), c('row_shape')], g('blk_idx'));
    op('GatherElements', [g('blocks'), g('blk_idx')], g('row'), [{ name: 'axis', i: 1 }]);
    op('CumSum', [g('row'), c('axis_last')], g('row_cs'));
    op('Add', [g('row_cs'), g('prev')], g('row_acc'));
    op(le, [g('row_acc'), g('target')], g('below'));
    op('Cast', [g('below')], g('below_f'), [{ name: 'to', i: FLOAT }]);
    reduce('ReduceSum', g('below_f'), g('in_blk'));
    op('Mul', [g('blk_f'), c('blockf')], g('blk_start'));
    op('Add', [g('blk_start'), g('in_blk')], g('count'));
    // clamped to the last id (u · total may round past the final cumulative sum)
    op('Min', [g('count'), c('last_f')], g('token_f'));
    op('Cast', [g('token_f')], names.draw, [{ name: 'to', i: INT64 }]);
    op('GatherElements', [xd, names.draw], names.drawLogit, [{ name: 'axis', i: -1 }]);
    // the cutRows' tempered probabilities, for the draw under min-p / top-k / top-p in JavaScript
    op('Mul', [banned(rows(src.x, names.cutRows, 'c_x'), names.cutRows, 'c'), rows(src.invT, names.cutRows, 'c_inv_t')], g('ct'));
    op('Softmax', [g('ct')], names.weights, [{ name: 'axis', i: -1 }]);
    reduce('ReduceSum', names.weights, names.weightSum);
    op('GatherElements', [names.weights, rows(names.topIds, names.cutRows, 'c_ids')], names.topWeights, [{ name: 'axis', i: -1 }]);
    for (const o of [names.topLogits, names.lse, names.entropy, names.weights, names.weightSum, names.topWeights, names.drawLogit])
      out.push(valueInfo(GRAPH_OUTPUT, o, FLOAT));
    for (const o of [names.topIds, names.draw]) out.push(valueInfo(GRAPH_OUTPUT, o, INT64));
  };

  // the last position of every row: [B, 1, V]
  if (lastOnly) op('Identity', [logits], c('x'));
  else op('Slice', [logits, c('minus1'), c('end'), c('axis_seq')], c('x'));
  group({ x: c('x'), invT: SIG.invT, u: SIG.u, banIds: SIG.banIds, banOn: SIG.banOn }, SIG, '');
  if (opts.masked) {
    /*
     * The masked group sits in an If on "maskRows is not empty", so a step without masked rows runs
     * none of its nodes (each costs ORT a kernel launch even over no rows); the else branch gives
     * empty outputs. Its nodes go in the then branch, reading the outer graph's values.
     */
    out.push(initializer(c('refused'), FLOAT, [], [REFUSED]));
    out.push(initializer(c('zero_scalar'), INT64, [], [0]));
    out.push(initializer(c('empty_f'), FLOAT, [0, 1, 1], []));
    out.push(initializer(c('empty_i'), INT64, [0, 1, 1], []));
    const outer = out.length;
    // the masked rows' logits with refused tokens at REFUSED, and their per-row feeds, in maskRows order
    const m = (input: string, name: string): string => {
      op('Gather', [input, SIG.maskRows], c(`m_${name}`), [{ name: 'axis', i: 0 }]);
      return c(`m_${name}`);
    };
    op('Where', [SIG.allowed, m(c('x'), 'raw'), c('refused')], c('m_x'));
    const inner = Object.fromEntries(Object.entries(MASKED).map(([k, v]) => [k, k.endsWith('Rows') ? v : `${v}/then`])) as GroupNames;
    group({ x: c('m_x'), invT: m(SIG.invT, 'inv_t'), u: m(SIG.u, 'u'), banIds: m(SIG.banIds, 'ban_ids'), banOn: m(SIG.banOn, 'ban_on') }, inner, 'm_');
    // group() wrote its outputs as graph outputs: in the branch they are the branch's outputs
    const thenBranch = concat([...out.splice(outer), wrap(2, new TextEncoder().encode('tr_masked_then'))]);
    const outputs = MASKED_OUTPUTS.map((k) => MASKED[k]);
    const elseBranch = concat([
      ...MASKED_OUTPUTS.map((k) => node('Identity', [k === 'topIds' || k === 'draw' ? c('empty_i') : c('empty_f')], [`${MASKED[k]}/else`])),
      ...MASKED_OUTPUTS.map((k) => valueInfo(GRAPH_OUTPUT, `${MASKED[k]}/else`, k === 'topIds' || k === 'draw' ? INT64 : FLOAT)),
      wrap(2, new TextEncoder().encode('tr_masked_else')),
    ]);
    op('Size', [SIG.maskRows], c('mask_count'));
    op('Greater', [c('mask_count'), c('zero_scalar')], c('mask_any'));
    out.push(
      node(
        'If',
        [c('mask_any')],
        outputs,
        [
          { name: 'then_branch', g: thenBranch },
          { name: 'else_branch', g: elseBranch },
        ],
        'mask_if',
      ),
    );
    for (const k of MASKED_OUTPUTS) out.push(valueInfo(GRAPH_OUTPUT, MASKED[k], k === 'topIds' || k === 'draw' ? INT64 : FLOAT));
  }
  const inputs = signalInputs(opts.masked === true);
  for (const i of inputs) out.push(valueInfo(GRAPH_INPUT, i, i === SIG.invT || i === SIG.u ? FLOAT : i === SIG.banOn || i === SIG.allowed ? BOOL : INT64));
  return out;
}
