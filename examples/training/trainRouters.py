#!/usr/bin/env python3
# Fits the word-problem family's router heads (CITER, R2R, Co-LLM over small's hidden state, labelled by large) and writes the routers folder the runtime loads.
"""
Needs trainFamily.py's checkpoints (TR_OUT/ckpt/<small>.pt and <labeller>.pt) and the corpus; the heads
go into the small's exported folder (exportFamily.ts writes it with the `hidden_states` output they read;
it deletes the folder first, so export before this script):
    npx tsx examples/training/exportFamily.ts --name small                          # and --name large
    nice -n 10 /usr/bin/python3 examples/training/trainRouters.py                   # writes TR_OUT/models/small/routers/
    npx tsx examples/training/checkRouters.ts --from TR_OUT --problems 40            # the runner against PyTorch, then routing
Thresholds for the algorithms, chosen on validation by accuracy (a task folder of the corpus' validation
split, {"prompt": question, "answer": final} lines, grader final-number):
    npx tokenrouter eval --task <folder> --models TR_OUT/models --split validation --plan heads \
      --max-tokens 112 --choose TR_OUT/models/small/routers/calibration.json
Environment: TR_OUT (default /work/family-out), TR_SMALL (small), TR_LABELLER (large; a stand-in such as
medium for plumbing runs), TR_LABELLER_CKPT (default TR_OUT/ckpt/<labeller>.pt), TR_ROUTER_TRAIN (3000 training problems per kind of data), TR_ROUTER_VAL (1000:
validation problems), TR_ROUTERS_OUT (default TR_OUT/models/<small>/routers), TR_THREADS (1).

Data, as train.py made it for the old family, all labels "agree = small's greedy token == large's greedy
token at the same prefix":
  - on-policy (heads citer, r2r, colm): small's greedy rollouts on training problems, then one
    teacher-forced pass of small and large over each rollout; every answer position (end id included).
  - teacher-forced (heads citer-tf, r2r-tf, colm-tf): the reference answers of other training problems.
The training problems are two disjoint seeded samples of train.jsonl (seed 99). The validation positions
are the same two kinds of data on the corpus' validation split (never in training): each head's AUC and
suggested threshold are measured there, the threshold routing on 90 % of the positions where small and
large disagree. The thresholds the algorithms use are then chosen on validation by accuracy
(`tokenrouter eval --plan heads --split validation --choose .../calibration.json`, examples/models/README.md).
R2R embeds the sampled token (a full Qwen3 id) with small's compact table inside its ONNX file, through a
one-hot over the corpus' ids (an id outside them embeds as zeros, as in the model's own graph).
The heads, their fitting and ONNX export live in routerHeads.py, shared with train.py (the old family).
Writes also TR_OUT/routers-check.json: PyTorch's hidden state, top logits and head scores after a few
validation prompts, which checkRouters.ts compares with what the runner computes from the exported files.

Wall times: printed per phase and kept in routers.json's `seconds`. Measured with stand-ins (small at 100
steps of the full run, labelled by the same run's step-200 checkpoint: TR_LABELLER=small
TR_LABELLER_CKPT=...), TR_ROUTER_TRAIN=200 TR_ROUTER_VAL=100, one thread, nice 10, load average ~20 on
the 2-core machine: rollouts 129 s, labels 124 s, fit and export of six heads 21 s, 281 s in all.
The defaults (4,000 rollouts, 8,000 labelled sequences, a large ~7x the small) scale that to roughly an
hour and a half on the same load (an estimate, not measured). With those stand-ins, checkRouters.ts
--problems 16 took 47 s and the heads plan above (65 entries, --problems 16) 647 s; it wrote calibration.json.
"""
import json
import os
import random
import re
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trainFamily as tf  # noqa: E402  (sets torch's threads from TR_THREADS)
from routerHeads import TOPK, fit_heads, input_specs  # noqa: E402

SMALL = os.environ.get('TR_SMALL', 'small')
LABELLER = os.environ.get('TR_LABELLER', 'large')
LABELLER_CKPT = os.environ.get('TR_LABELLER_CKPT')  # a checkpoint of LABELLER's size from elsewhere (stand-ins)
N_TRAIN = int(os.environ.get('TR_ROUTER_TRAIN', '3000'))
N_VAL = int(os.environ.get('TR_ROUTER_VAL', '1000'))
OUT_DIR = os.environ.get('TR_ROUTERS_OUT', os.path.join(tf.OUT, 'models', SMALL, 'routers'))
MAX_NEW = 112  # the longest reference answer of the corpus is 91 ids
BS = 50


def with_hidden(model):
    """Keeps the final norm's output (the hidden state the export names `hidden_states`) of each forward."""
    store = {}
    model.norm.register_forward_hook(lambda _m, _i, out: store.__setitem__('h', out))
    return store


@torch.no_grad()
def positions(small, large, store, seqs, full_ids):
    """(hidden, full token id, top-k logits, agree) at every position of `seqs` ((ids, start)) that predicts an answer id."""
    H, T, K, Y = [], [], [], []
    for i in range(0, len(seqs), BS):
        chunk = seqs[i:i + BS]
        L = max(len(s) for s, _ in chunk)
        x = torch.zeros((len(chunk), L), dtype=torch.long)
        m = torch.zeros((len(chunk), L), dtype=torch.long)
        sel = torch.zeros((len(chunk), L), dtype=torch.bool)
        for b, (s, st) in enumerate(chunk):
            x[b, :len(s)] = torch.tensor(s)
            m[b, :len(s)] = 1
            sel[b, st - 1:len(s) - 1] = True
        pos = torch.arange(L)[None].expand(len(chunk), L)
        ls, _ = small(x, m, pos)
        hs = store['h']
        ll, _ = large(x, m, pos)
        tok_s, tok_l = ls.argmax(-1)[sel], ll.argmax(-1)[sel]
        H.append(hs[sel])
        T.append(full_ids[tok_s])
        K.append(ls[sel].topk(TOPK, dim=-1).values)
        Y.append((tok_s == tok_l).float())
    return torch.cat(H), torch.cat(T), torch.cat(K), torch.cat(Y)


def answer_of(text):
    found = re.findall(r'The answer is (-?\d+)', text)
    return int(found[-1]) if found else None


@torch.no_grad()
def rollouts(small, rows, vocab, eos):
    """small's greedy answers as (prompt + answer [+ end id], start), and its exact match against each reference's final number."""
    seqs, right = [], 0
    for i in range(0, len(rows), BS):
        chunk = rows[i:i + BS]
        outs = tf.greedy(small, [r['ids'][:r['start']] for r in chunk], eos, max_new=MAX_NEW)
        for r, o in zip(chunk, outs):
            ended = len(o) < MAX_NEW
            seqs.append((r['ids'][:r['start']] + o + ([eos] if ended else []), r['start']))
            ref = answer_of(''.join(vocab['text'][t] for t in r['ids'][r['start']:]))
            right += ref is not None and answer_of(''.join(vocab['text'][t] for t in o)) == ref
    return seqs, right / max(1, len(rows))


def reference_seqs(rows, eos):
    return [(r['ids'][:r['ids'].index(eos, r['start']) + 1], r['start']) for r in rows]


@torch.no_grad()
def check_file(small, store, heads, modules, rows, full_ids, d):
    """PyTorch's signals and head scores at the end of a few validation prompts (checkRouters.ts recomputes them through ONNX Runtime)."""
    for p in small.parameters():
        p.copy_(p.half().float())  # the export stores the weights fp16 (trainFamily.reference does the same)
    cases = []
    for r in rows:
        ids = torch.tensor([r['ids'][:r['start']]])
        logits, _ = small(ids, torch.ones_like(ids), torch.arange(ids.shape[1])[None])
        h, lg = store['h'][0, -1], logits[0, -1]
        tok = int(full_ids[lg.argmax()])
        top = lg.topk(TOPK).values
        scores = {k: float(modules[k](*((h[None],) if 'token_id' not in v['inputs'] else (h[None], torch.tensor([[tok]]), top[None])))[0, 0])
                  for k, v in heads.items()}
        cases.append({'prompt': [int(full_ids[i]) for i in r['ids'][:r['start']]], 'token': tok, 'hidden': [round(float(x), 6) for x in h],
                      'topk_logits': [round(float(x), 6) for x in top], 'scores': scores})
    return {'model': SMALL, 'hidden_size': d, 'cases': cases}


def main():
    t0 = time.time()
    torch.manual_seed(99)
    vocab = tf.load_vocab()
    eos = vocab['ids'].index(vocab['eos'])
    full_ids = torch.tensor(vocab['ids'], dtype=torch.long)
    small, large = tf.load_model(SMALL, vocab), tf.Qwen3Compact(tf.CONFIGS[LABELLER], len(vocab['ids']))
    large.load_state_dict(torch.load(LABELLER_CKPT or os.path.join(tf.OUT, 'ckpt', f'{LABELLER}.pt')))
    large.eval()
    store = with_hidden(small)
    train_rows, val_rows = tf.load_rows('train'), tf.load_rows('validation')[:N_VAL]
    pick = random.Random(99).sample(range(len(train_rows)), 2 * N_TRAIN)
    op_rows, tf_rows = [train_rows[i] for i in pick[:N_TRAIN]], [train_rows[i] for i in pick[N_TRAIN:]]
    times = {}

    t = time.time()
    op_seqs, op_em = rollouts(small, op_rows, vocab, eos)
    va_seqs, va_em = rollouts(small, val_rows, vocab, eos)
    times['rollouts'] = round(time.time() - t, 1)
    print(f'[routers] {SMALL} rollouts: exact match {op_em:.4f} on {len(op_rows)} training, {va_em:.4f} on {len(val_rows)} validation problems '
          f'({times["rollouts"]}s)', flush=True)
    t = time.time()
    op_tr, op_va = positions(small, large, store, op_seqs, full_ids), positions(small, large, store, va_seqs, full_ids)
    tf_tr = positions(small, large, store, reference_seqs(tf_rows, eos), full_ids)
    tf_va = positions(small, large, store, reference_seqs(val_rows, eos), full_ids)
    times['labels'] = round(time.time() - t, 1)
    print(f'[routers] labelled by {LABELLER} ({times["labels"]}s)', flush=True)

    os.makedirs(OUT_DIR, exist_ok=True)
    table = small.embed_tokens.weight.detach()
    t = time.time()
    agree = f'agree = {SMALL} greedy token == {LABELLER} greedy token at the same prefix'
    specs = input_specs(table.shape[1], SMALL, f"the token {SMALL} just sampled, a Qwen3 id (embedded inside the router with {SMALL}'s compact table)")
    heads, modules = fit_heads(op_tr, op_va, table,
                               f"on-policy: every answer position of {SMALL}'s greedy rollouts on {len(op_rows)} training problems "
                               f'(seed 99); {agree} (one teacher-forced pass of {LABELLER} over the rollout)', '',
                               {'rollouts': {'train': len(op_rows), 'validation': len(val_rows), 'small_exact_match_train': round(op_em, 4),
                                             'small_exact_match_validation': round(va_em, 4)}}, OUT_DIR, specs, vocab['ids'])
    tf_heads, tf_modules = fit_heads(tf_tr, tf_va, table,
                                     f'teacher-forced answer positions of the reference answers of {len(tf_rows)} other training problems; {agree}',
                                     '-tf', {}, OUT_DIR, specs, vocab['ids'])
    heads.update(tf_heads)
    modules.update(tf_modules)
    times['fit_and_export'] = round(time.time() - t, 1)
    check = check_file(small, store, heads, modules, tf.load_rows('validation')[:4], full_ids, table.shape[1])
    json.dump(check, open(os.path.join(tf.OUT, 'routers-check.json'), 'w'))
    times['total'] = round(time.time() - t0, 1)
    meta = {'model': SMALL, 'labelled_by': LABELLER + (f' ({LABELLER_CKPT})' if LABELLER_CKPT else ''), 'topk': TOPK, 'threads': torch.get_num_threads(), 'seconds': times,
            'heads': dict(sorted(heads.items()))}
    with open(os.path.join(OUT_DIR, 'routers.json'), 'w') as f:
        json.dump(meta, f, indent=1)
    print(f'[routers] written {OUT_DIR} in {times["total"]:.0f}s', flush=True)


if __name__ == '__main__':
    main()
