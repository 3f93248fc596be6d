#!/usr/bin/env python3
# Trains, exports and grades the bundled TokenRouter tiny model family (small/medium/large + router heads).
"""
Reproducible recipe for the bundled models in examples/models/.

Task: worked multiplication, graded by exact match of the final number.
    prompt : "Q: 347*26=\nA: "
    answer : "347*6=2082,347*20=6940,2082+6940=9022" then </s>
The final answer is the number after the last '='. a in [10, 999], b in [2, 99].

Usage (Debian's python with torch 1.13 -- not the pyenv python3 on PATH):
    /usr/bin/python3 examples/training/train.py train small                 # 1200 steps, 1 thread
    /usr/bin/python3 examples/training/train.py train medium                # 700 steps, 1 thread
    /usr/bin/python3 examples/training/train.py train large                 # 1200 steps, 1 thread, then:
    TR_PHASE=1 TR_STEPS=600 TR_LR=3e-4 /usr/bin/python3 examples/training/train.py train large
    /usr/bin/python3 examples/training/train.py export small                # also medium, large
    /usr/bin/python3 examples/training/train.py routers                     # needs small + large checkpoints
    /usr/bin/python3 examples/training/train.py all                         # all of the above, in order
    /usr/bin/python3 examples/training/train.py eval small                  # PyTorch held-out accuracy
    python3 examples/training/splits.py                                     # heldout.json + validation.json (stdlib only)
Node re-check of accuracy through ONNX Runtime: npx tsx runtime/runner/onnxAccuracy.ts
Touching ckpt/<name>.stop during training anneals the lr over 150 more steps and finishes early;
TR_STOP_AT=<step> replays such an early finish exactly (see examples/models/README.md for the values used).
Checkpoints go to examples/training/ckpt/ (not committed); exports to examples/models/<name>/.
Seeds are fixed: training data seed 1000+model index, held-out eval seed 7, validation seed 8, router data seed 99.
"""
import json
import math
import os
import random
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import routerHeads  # noqa: E402
from routerHeads import TOPK  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, '..', '..'))
CKPT = os.environ.get('TR_CKPT', os.path.join(HERE, 'ckpt'))
MODELS = os.environ.get('TR_MODELS', os.path.join(ROOT, 'examples', 'models'))
THREADS = int(os.environ.get('TR_THREADS', '1'))
torch.set_num_threads(THREADS)

# ---------------------------------------------------------------- tokenizer (char level)
SPECIALS = ['<pad>', '<s>', '</s>', '<unk>']
CHARS = list('0123456789+-*/=(),.:;# \nQA')
VOCAB = SPECIALS + CHARS
STOI = {s: i for i, s in enumerate(VOCAB)}
PAD, BOS, EOS, UNK = 0, 1, 2, 3
MAX_CTX = 256


def encode(text):
    return [STOI.get(c, UNK) for c in text]


def decode(ids):
    return ''.join(VOCAB[i] for i in ids if i >= len(SPECIALS))


# ---------------------------------------------------------------- task
def prompt_text(a, b):
    return f'Q: {a}*{b}=\nA: '


def answer_text(a, b):
    if b < 10:
        return f'{a}*{b}={a * b}'
    t, u = (b // 10) * 10, b % 10
    if u == 0:
        return f'{a}*{b}={a * b}'
    p1, p2 = a * u, a * t
    return f'{a}*{u}={p1},{a}*{t}={p2},{p1}+{p2}={p1 + p2}'


def final_answer(text):
    text = text.strip()
    return text.rsplit('=', 1)[-1] if '=' in text else None


from splits import EVAL_SET, eval_problems, load_split, make_problem, write_splits  # noqa: E402  (stdlib only)


def train_batch(rng, bs):
    seqs, starts = [], []
    while len(seqs) < bs:
        a, b = make_problem(rng)
        if (a, b) in EVAL_SET:
            continue  # split problems never appear in training
        p = [BOS] + encode(prompt_text(a, b))
        seqs.append(p + encode(answer_text(a, b)) + [EOS])
        starts.append(len(p))
    T = max(len(s) for s in seqs)
    x = torch.full((bs, T), PAD, dtype=torch.long)
    y = torch.full((bs, T), -100, dtype=torch.long)
    for i, s in enumerate(seqs):
        x[i, :len(s)] = torch.tensor(s)
        # loss only on the answer tokens (predicting s[t+1] from s[..t])
        for t in range(starts[i] - 1, len(s) - 1):
            y[i, t] = s[t + 1]
    return x, y


# ---------------------------------------------------------------- model (Llama style)
CONFIGS = {
    # step counts are the ones the bundled models were trained with (TR_STEPS overrides);
    # large then had a second phase (TR_PHASE=1 TR_STEPS=600 TR_LR=3e-4)
    'small': dict(d=128, layers=2, heads=4, kv=2, ffn=344, steps=1200, lr=2e-3, bs=64),
    'medium': dict(d=192, layers=3, heads=6, kv=3, ffn=512, steps=700, lr=1.5e-3, bs=64),
    'large': dict(d=256, layers=4, heads=8, kv=4, ffn=768, steps=1200, lr=1e-3, bs=64),
}
NAMES = list(CONFIGS)


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(hd, n=MAX_CTX, base=10000.0):
    inv = 1.0 / (base ** (torch.arange(0, hd, 2).float() / hd))
    f = torch.outer(torch.arange(n).float(), inv)
    emb = torch.cat([f, f], dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, self.h, self.kv = c['d'], c['heads'], c['kv']
        self.hd = d // self.h
        self.ln1, self.ln2 = RMSNorm(d), RMSNorm(d)
        self.q = nn.Linear(d, self.h * self.hd, bias=False)
        self.k = nn.Linear(d, self.kv * self.hd, bias=False)
        self.v = nn.Linear(d, self.kv * self.hd, bias=False)
        self.o = nn.Linear(self.h * self.hd, d, bias=False)
        self.gate = nn.Linear(d, c['ffn'], bias=False)
        self.up = nn.Linear(d, c['ffn'], bias=False)
        self.down = nn.Linear(c['ffn'], d, bias=False)

    def forward(self, x, cos, sin, bias, past_k=None, past_v=None):
        B, S, _ = x.shape
        h = self.ln1(x)
        q = self.q(h).view(B, S, self.h, self.hd).transpose(1, 2)
        k = self.k(h).view(B, S, self.kv, self.hd).transpose(1, 2)
        v = self.v(h).view(B, S, self.kv, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if past_k is not None:
            k = torch.cat([past_k, k], dim=2)
            v = torch.cat([past_v, v], dim=2)
        present = (k, v)
        rep = self.h // self.kv
        # GQA: each kv head serves `rep` query heads (same order as repeat_interleave, simpler ONNX)
        kk = k.unsqueeze(2).expand(-1, -1, rep, -1, -1).reshape(B, self.h, -1, self.hd) if rep > 1 else k
        vv = v.unsqueeze(2).expand(-1, -1, rep, -1, -1).reshape(B, self.h, -1, self.hd) if rep > 1 else v
        att = (q @ kk.transpose(-1, -2)) * (1.0 / math.sqrt(self.hd)) + bias
        att = att.softmax(-1)
        y = (att @ vv).transpose(1, 2).reshape(B, S, self.h * self.hd)
        x = x + self.o(y)
        h = self.ln2(x)
        x = x + self.down(F.silu(self.gate(h)) * self.up(h))
        return x, present


class TinyLlama(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed = nn.Embedding(len(VOCAB), c['d'])
        self.blocks = nn.ModuleList([Block(c) for _ in range(c['layers'])])
        self.norm = RMSNorm(c['d'])
        self.lm_head = nn.Linear(c['d'], len(VOCAB), bias=False)
        cos, sin = rope_tables(c['d'] // c['heads'])
        self.register_buffer('cos', cos, persistent=False)
        self.register_buffer('sin', sin, persistent=False)
        for p in self.parameters():
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, input_ids, attention_mask, position_ids, past=None):
        """attention_mask: [B, past+S] (1 = real token); past: list of (k, v) or None."""
        B, S = input_ids.shape
        x = self.embed(input_ids)
        cos = self.cos[position_ids].unsqueeze(1)  # [B,1,S,hd]
        sin = self.sin[position_ids].unsqueeze(1)
        T = attention_mask.shape[1]
        # slot order is time order: query slot (T-S+i) sees key slots <= itself that are unmasked.
        qi = torch.arange(S).unsqueeze(1) + (T - S)
        kj = torch.arange(T).unsqueeze(0)
        causal = (kj <= qi).unsqueeze(0).unsqueeze(0)  # [1,1,S,T]
        keep = causal & (attention_mask[:, None, None, :] > 0)
        # finite large negative (not -inf): fully masked pad rows stay finite, so no NaN reaches the cache
        bias = (~keep).float() * -1e9
        presents = []
        for i, blk in enumerate(self.blocks):
            pk, pv = (past[i] if past is not None else (None, None))
            x, pres = blk(x, cos, sin, bias, pk, pv)
            presents.append(pres)
        hidden = self.norm(x)
        return self.lm_head(hidden), hidden, presents


def n_params(m):
    return sum(p.numel() for p in m.parameters())


def build(name):
    torch.manual_seed(0)
    return TinyLlama(CONFIGS[name])


def ckpt_path(name):
    return os.path.join(CKPT, f'{name}.pt')


def load(name):
    m = build(name)
    m.load_state_dict(torch.load(ckpt_path(name)))
    m.eval()
    return m


# ---------------------------------------------------------------- greedy decoding + grading
@torch.no_grad()
def greedy(m, prompts, max_new=64):
    """Batched greedy with left padding and a KV cache: returns generated ids (EOS excluded) per prompt."""
    B = len(prompts)
    L = max(len(p) for p in prompts)
    ids = torch.full((B, L), PAD, dtype=torch.long)
    mask = torch.zeros((B, L), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, L - len(p):] = torch.tensor(p)
        mask[i, L - len(p):] = 1
    pos = (mask.cumsum(1) - 1).clamp(min=0)
    logits, _, past = m(ids, mask, pos)
    out = [[] for _ in range(B)]
    done = [False] * B
    nxt_pos = mask.sum(1)
    for _ in range(max_new):
        nxt = logits[:, -1].argmax(-1)
        for i in range(B):
            if not done[i]:
                t = int(nxt[i])
                if t == EOS:
                    done[i] = True
                else:
                    out[i].append(t)
        if all(done) or nxt_pos.max() >= MAX_CTX:
            break
        mask = torch.cat([mask, torch.ones((B, 1), dtype=torch.long)], 1)
        logits, _, past = m(nxt[:, None], mask, nxt_pos[:, None], past)
        nxt_pos = nxt_pos + 1
    return out


def accuracy(m, problems, bs=100):
    ok = 0
    for i in range(0, len(problems), bs):
        chunk = problems[i:i + bs]
        outs = greedy(m, [[BOS] + encode(prompt_text(a, b)) for a, b in chunk])
        for (a, b), o in zip(chunk, outs):
            ok += final_answer(decode(o)) == str(a * b)
    return ok / len(problems)


# ---------------------------------------------------------------- training
def train(name):
    c = CONFIGS[name]
    os.makedirs(CKPT, exist_ok=True)
    m = build(name)
    # second phase: TR_PHASE=n continues from ckpt/<name>.pt with fresh data (seed + 100 n), lr TR_LR
    phase = int(os.environ.get('TR_PHASE', '0'))
    if phase:
        m.load_state_dict(torch.load(ckpt_path(name)))
        os.replace(ckpt_path(name), ckpt_path(name) + f'.phase{phase - 1}')
        c = dict(c, lr=float(os.environ.get('TR_LR', c['lr'] / 3)))
    m.train()
    idx = NAMES.index(name)
    rng = random.Random(1000 + idx + 100 * phase)
    torch.manual_seed(1000 + idx + 100 * phase)
    steps = int(os.environ.get('TR_STEPS', c['steps']))
    opt = torch.optim.AdamW(m.parameters(), lr=c['lr'], betas=(0.9, 0.98), weight_decay=0.01)
    warm = 100
    dev = load_split('validation')[:200] or eval_problems(200)  # only for progress lines
    print(f'[{name}] params={n_params(m)} steps={steps} threads={THREADS}', flush=True)
    t0 = time.time()
    stop_file = os.path.join(CKPT, f'{name}.stop')
    cut = None  # (step, lr) when a stop file asked to finish early: linear anneal over 150 more steps
    step = 0
    while step < steps:
        step += 1
        stop_now = os.path.exists(stop_file) or step == int(os.environ.get('TR_STOP_AT', '0'))
        if cut is None and stop_now and steps > step + 150:
            cut = (step, c['lr'] * (0.5 * (1 + math.cos(math.pi * step / steps)) * 0.95 + 0.05))
            print(f'[{name}] stop file seen at step {step}: annealing to step {step + 150}', flush=True)
            steps = step + 150
        if cut is None:
            lr = c['lr'] * min(1.0, step / warm) * (0.5 * (1 + math.cos(math.pi * min(1.0, step / steps))) * 0.95 + 0.05)
        else:
            lr = cut[1] + (c['lr'] * 0.05 - cut[1]) * (step - cut[0]) / (steps - cut[0])
        for g in opt.param_groups:
            g['lr'] = lr
        x, y = train_batch(rng, c['bs'])
        mask = (x != PAD).long()
        pos = torch.arange(x.shape[1]).unsqueeze(0).expand_as(x)
        logits, _, _ = m(x, mask, pos)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        if step % 100 == 0 or step == steps:
            msg = f'[{name}] step {step}/{steps} loss {loss.item():.4f} lr {lr:.2e} {time.time() - t0:.0f}s'
            if step % 500 == 0 or step == steps:
                m.eval()
                msg += f' dev_acc {accuracy(m, dev):.3f}'
                m.train()
            print(msg, flush=True)
        if step % 200 == 0:
            torch.save(m.state_dict(), ckpt_path(name) + '.partial')
    torch.save(m.state_dict(), ckpt_path(name))
    m.eval()
    acc = accuracy(m, eval_problems())
    info = dict(name=name, params=n_params(m), steps=steps, train_seconds=round(time.time() - t0, 1),
                threads=THREADS, heldout_acc_torch=acc, heldout_n=500, phase=phase, lr=c['lr'],
                early_stop=None if cut is None else {'at_step': cut[0], 'anneal_from_lr': cut[1]})
    info_p = os.path.join(CKPT, f'{name}.json')
    if phase and os.path.exists(info_p):
        info['previous_phases'] = [json.load(open(info_p))]
    with open(info_p, 'w') as f:
        json.dump(info, f, indent=1)
    print(f'[{name}] done: {info}', flush=True)



# ---------------------------------------------------------------- export (HF / Optimum decoder-only ONNX layout)
class OnnxWrapper(nn.Module):
    """Flat signature for torch.onnx: (ids, mask, pos, past.0.key, past.0.value, ...) -> (logits, presents..., hidden)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids, attention_mask, position_ids, *past_flat):
        L = len(self.m.blocks)
        past = [(past_flat[2 * i], past_flat[2 * i + 1]) for i in range(L)]
        logits, hidden, presents = self.m(input_ids, attention_mask, position_ids, past)
        flat = []
        for k, v in presents:
            flat += [k, v]
        return (logits, *flat, hidden)


def tokenizer_json():
    added = [dict(id=i, content=t, single_word=False, lstrip=False, rstrip=False, normalized=False, special=True)
             for i, t in enumerate(SPECIALS)]
    return {
        'version': '1.0', 'truncation': None, 'padding': None, 'added_tokens': added,
        'normalizer': None, 'pre_tokenizer': None, 'post_processor': None,
        'decoder': {'type': 'Fuse'},
        # char level: a BPE model with no merges (loads in @huggingface/tokenizers, unlike WordLevel)
        'model': {'type': 'BPE', 'dropout': None, 'unk_token': '<unk>', 'continuing_subword_prefix': None,
                  'end_of_word_suffix': None, 'fuse_unk': False, 'byte_fallback': False, 'ignore_merges': False,
                  'vocab': STOI, 'merges': []},
    }


CHAT_TEMPLATE = ("{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}"
                 "Q: {{ message['content'].strip() }}{% if not message['content'].strip().endswith('=') %}={% endif %}{{ '\\nA: ' }}"
                 "{% elif message['role'] == 'assistant' %}{{ message['content'] }}{{ eos_token }}{% endif %}{% endfor %}")


def golden_prompts():
    probs = eval_problems(20, seed=12345)
    return [prompt_text(a, b) for a, b in probs]


def export(name):
    m = load(name)
    c = m.c
    out = os.path.join(MODELS, name)
    os.makedirs(os.path.join(out, 'onnx'), exist_ok=True)
    L, kv, hd = c['layers'], c['kv'], c['d'] // c['heads']
    B, S, P = 2, 3, 4
    ids = torch.randint(4, len(VOCAB), (B, S))
    mask = torch.ones((B, P + S), dtype=torch.long)
    pos = torch.arange(P, P + S).unsqueeze(0).expand(B, S).contiguous()
    past = []
    in_names = ['input_ids', 'attention_mask', 'position_ids']
    out_names = ['logits']
    dyn = {'input_ids': {0: 'batch_size', 1: 'sequence_length'},
           'attention_mask': {0: 'batch_size', 1: 'total_sequence_length'},
           'position_ids': {0: 'batch_size', 1: 'sequence_length'},
           'logits': {0: 'batch_size', 1: 'sequence_length'},
           'hidden_states': {0: 'batch_size', 1: 'sequence_length'}}
    for i in range(L):
        for kind in ('key', 'value'):
            past.append(torch.randn(B, kv, P, hd))
            n_in, n_out = f'past_key_values.{i}.{kind}', f'present.{i}.{kind}'
            in_names.append(n_in)
            out_names.append(n_out)
            dyn[n_in] = {0: 'batch_size', 2: 'past_sequence_length'}
            dyn[n_out] = {0: 'batch_size', 2: 'total_sequence_length'}
    out_names.append('hidden_states')
    torch.onnx.export(OnnxWrapper(m), (ids, mask, pos, *past), os.path.join(out, 'onnx', 'model.onnx'),
                      input_names=in_names, output_names=out_names, dynamic_axes=dyn, opset_version=14,
                      do_constant_folding=True)
    cfg = {
        'architectures': ['LlamaForCausalLM'], 'model_type': 'llama',
        'hidden_size': c['d'], 'intermediate_size': c['ffn'], 'num_hidden_layers': L,
        'num_attention_heads': c['heads'], 'num_key_value_heads': kv, 'head_dim': hd,
        'vocab_size': len(VOCAB), 'max_position_embeddings': MAX_CTX, 'rms_norm_eps': 1e-5, 'rope_theta': 10000.0,
        'hidden_act': 'silu', 'tie_word_embeddings': False, 'torch_dtype': 'float32',
        'bos_token_id': BOS, 'eos_token_id': EOS, 'pad_token_id': PAD,
    }
    gen = {'bos_token_id': BOS, 'eos_token_id': EOS, 'pad_token_id': PAD, 'do_sample': False, 'max_new_tokens': 64}
    tok_cfg = {'tokenizer_class': 'PreTrainedTokenizerFast', 'bos_token': '<s>', 'eos_token': '</s>',
               'pad_token': '<pad>', 'unk_token': '<unk>', 'model_max_length': MAX_CTX, 'add_bos_token': False,
               'chat_template': CHAT_TEMPLATE}
    for fn, obj in (('config.json', cfg), ('generation_config.json', gen), ('tokenizer.json', tokenizer_json()),
                    ('tokenizer_config.json', tok_cfg)):
        with open(os.path.join(out, fn), 'w') as f:
            json.dump(obj, f, indent=1, ensure_ascii=False)
    # golden: unbatched PyTorch greedy, ids include the EOS token when one was produced
    rows = []
    for text in golden_prompts():
        ids_in = [BOS] + encode(text)
        gen_ids = greedy(m, [ids_in], max_new=64)[0]
        full = gen_ids + ([EOS] if len(gen_ids) < 64 else [])
        rows.append({'prompt': text, 'input_ids': ids_in, 'output_ids': full, 'output_text': decode(gen_ids)})
    with open(os.path.join(out, 'golden.json'), 'w') as f:
        json.dump({'model': name, 'decoding': 'greedy', 'max_new_tokens': 64, 'eos_token_id': EOS,
                   'source': 'PyTorch, unbatched, examples/training/train.py export', 'rows': rows}, f, indent=1)
    info_p = os.path.join(CKPT, f'{name}.json')
    info = json.load(open(info_p)) if os.path.exists(info_p) else {}
    info['config'] = c
    with open(os.path.join(out, 'training.json'), 'w') as f:
        json.dump(info, f, indent=1)
    write_splits()
    print(f'[{name}] exported to {out}', flush=True)




# ---------------------------------------------------------------- router heads for `small`, labelled by `large`
# (the heads, their fitting and ONNX export: routerHeads.py, shared with trainRouters.py)
@torch.no_grad()
def router_data(small, large, n_seq, seed):
    rng = random.Random(seed)
    H, T, K, Y = [], [], [], []
    for _ in range(n_seq // 200):
        x, y = train_batch(rng, 200)
        mask = (x != PAD).long()
        pos = torch.arange(x.shape[1]).unsqueeze(0).expand_as(x)
        ls, hs, _ = small(x, mask, pos)
        ll, _, _ = large(x, mask, pos)
        sel = y != -100  # answer positions of correct (teacher-forced) sequences
        tok_s, tok_l = ls.argmax(-1), ll.argmax(-1)
        H.append(hs[sel])
        T.append(tok_s[sel])
        K.append(ls[sel].topk(TOPK, dim=-1).values)
        Y.append((tok_s[sel] == tok_l[sel]).float())
    return torch.cat(H), torch.cat(T), torch.cat(K), torch.cat(Y)


ROLLOUT_LISTS = {'train': (97, 6000), 'dev': (96, 1500)}  # name: (seed, problems); router data seeds 99/98 were the teacher-forced ones
DATA = os.path.join(HERE, 'data')


def rollout_problems():
    """data/rollout-problems.json: distinct training-stream problems for on-policy rollouts, none in a split."""
    os.makedirs(DATA, exist_ok=True)
    lists, taken = {}, set()
    for name, (seed, n) in ROLLOUT_LISTS.items():
        rng, out = random.Random(seed), []
        while len(out) < n:
            p = make_problem(rng)
            if p in EVAL_SET or p in taken:
                continue  # never a validation or held-out problem, and train and dev share none
            taken.add(p)
            out.append(p)
        lists[name] = {'seed': seed, 'problems': out}
    splits = set(load_split('heldout')) | set(load_split('validation'))
    assert splits and not (taken & splits), 'rollout problems overlap a split'
    with open(os.path.join(DATA, 'rollout-problems.json'), 'w') as f:
        json.dump({'rule': 'distinct problems of the seed stream of make_problem, skipping split problems and earlier lists',
                   'lists': lists}, f)
    sizes = ', '.join('%s %d (seed %d)' % (k, len(v['problems']), v['seed']) for k, v in lists.items())
    print(f'[rollouts] problems: {sizes}; none of the {len(splits)} split problems', flush=True)


def routers():
    """Teacher-forced heads (the first shipped ones, kept as citer-tf, r2r-tf, colm-tf): needs the small and large checkpoints."""
    torch.manual_seed(99)
    small, large = load('small'), load('large')
    n = int(os.environ.get('TR_ROUTER_SEQ', '3000'))  # smaller only for smoke tests
    fit_heads(router_data(small, large, n, 99), router_data(small, large, n // 3, 98), small.embed.weight.data,
              'teacher-forced answer positions of correct sequences; agree = small greedy token == large greedy token',
              suffix='-tf')


def load_rollouts(name):
    """data/onpolicy-<name>.f32 from rollouts.ts as (hidden, token, topk, agree) tensors."""
    meta = json.load(open(os.path.join(DATA, f'onpolicy-{name}.json')))
    lay = meta['layout']
    a = torch.from_numpy(np.fromfile(os.path.join(DATA, f'onpolicy-{name}.f32'), dtype=np.float32).reshape(-1, meta['width']))
    h0, h1 = lay['hidden_states']
    k0, k1 = lay['topk_logits']
    return (a[:, h0:h1].contiguous(), a[:, lay['token_id']].long(), a[:, k0:k1].contiguous(), 1 - a[:, lay['diverge']]), meta


def small_embedding():
    """small's token embedding table, read from its ONNX export (R2R embeds the sampled token with it)."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(os.path.join(MODELS, 'small', 'onnx', 'model.onnx'))
    w = next(numpy_helper.to_array(i) for i in m.graph.initializer if i.name == 'm.embed.weight')
    return torch.from_numpy(w.copy())


def routers_onpolicy():
    """On-policy heads (shipped as citer, r2r, colm): trained on small's own greedy rollouts labelled by large (rollouts.ts)."""
    torch.manual_seed(99)
    tr, mtr = load_rollouts('train')
    va, mva = load_rollouts('dev')
    fit_heads(tr, va, small_embedding(),
              'on-policy: every answer position of small\'s greedy rollouts on training problems (seeds %d, %d); '
              'agree = small greedy token == large greedy token at the same prefix (one teacher-forced pass of large '
              'over the rollout)' % (mtr['seed'], mva['seed']), suffix='',
              extra={'rollouts': {'train': mtr['problems'], 'dev': mva['problems'],
                                  'small_exact_match_train': round(mtr['small_exact_match'], 4)}})


def fit_heads(train, val, embed_weight, labels, suffix, extra=None):
    """Fits CITER, R2R and Co-LLM (routerHeads.fit_heads) into examples/models/small/routers and merges their entries into routers.json."""
    out_dir = os.path.join(MODELS, 'small', 'routers')
    os.makedirs(out_dir, exist_ok=True)
    meta_p = os.path.join(out_dir, 'routers.json')
    meta = json.load(open(meta_p)) if os.path.exists(meta_p) else {'model': 'small', 'labelled_by': 'large', 'topk': TOPK, 'heads': {}}
    meta['heads'] = {k: v for k, v in meta['heads'].items() if not (k.endswith('-tf') == (suffix == '-tf'))}
    specs = routerHeads.input_specs(train[0].shape[1], 'small',
                                    "the token small just sampled (embedded inside the router with small's embedding table)")
    entries, _ = routerHeads.fit_heads(train, val, embed_weight, labels, suffix, extra or {}, out_dir, specs)
    meta['heads'].update(entries)
    for k in ('labels', 'val_positions', 'val_agree_rate'):
        meta.pop(k, None)  # per head now: the teacher-forced and on-policy heads have different labels
    meta['heads'] = dict(sorted(meta['heads'].items()))
    with open(meta_p, 'w') as f:
        json.dump(meta, f, indent=1)
    print('[routers] written', out_dir, flush=True)


if __name__ == '__main__':
    cmd = sys.argv[1] if len(sys.argv) > 1 else ''
    if cmd == 'train':
        train(sys.argv[2])
    elif cmd == 'all':
        for n in NAMES:
            train(n)
        # the bundled large model had a second phase: 600 more steps at lr 3e-4 on fresh data
        os.environ.update(TR_PHASE='1', TR_STEPS='600', TR_LR='3e-4')
        train('large')
        for n in NAMES:
            export(n)
        routers()
    elif cmd == 'export':
        export(sys.argv[2])
    elif cmd == 'routers':
        routers()
    elif cmd == 'routers-onpolicy':
        routers_onpolicy()
    elif cmd == 'rollout-problems':
        rollout_problems()
    elif cmd == 'splits':
        write_splits()
    elif cmd == 'eval':
        print(accuracy(load(sys.argv[2]), eval_problems()))
    else:
        print(__doc__)
