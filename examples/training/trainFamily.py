#!/usr/bin/env python3
# Trains the word-problem family (Qwen3 architecture over the corpus' compact vocabulary) and writes weights that exportFamily.ts turns into HF / Optimum folders.
"""
The corpus comes from Node (the serving runner's own Qwen3 tokenizer and chat template):
    npx tsx examples/training/makeCorpus.ts --out /work/family-out/corpus --train 60000
Then, with Debian's python3-torch (1.13; the product never needs Python) and libopenblas0-pthread
(Debian's torch uses the system BLAS: the generic one ran a 1024^2 matmul at 5.5 GFLOPS, OpenBLAS at 49):
    nice -n 15 /usr/bin/python3 examples/training/trainFamily.py train small      # TR_STEPS, TR_BS, TR_LR, TR_SHAPE, TR_PRECISION override; resumes from ckpt/small.state.pt
    nice -n 15 /usr/bin/python3 examples/training/trainFamily.py eval small 300   # greedy exact match on validation (add `heldout` for the held-out split)
    nice -n 15 /usr/bin/python3 examples/training/trainFamily.py weights small    # weights + reference logits from ckpt/small.pt
    npx tsx examples/training/exportFamily.ts --name small                        # HF / Optimum folder
Why a compact vocabulary: the corpus uses a few hundred of Qwen3's 151,936 tokens. Training runs over
those ids only (a softmax over ~330 rows, not 151,936), and the export keeps only their rows: the ONNX
graph maps a full-vocabulary id to its row (unused ids: a zero row) and scatters the compact logits
back to 151,936 columns, the unused ones at -1e9, so the runner sees Qwen3's real vocabulary, while
the files hold U x hidden numbers instead of 151,936 x hidden (at hidden 512, fp16: 0.3 MB, not 156 MB).
Sampled softmax would train a full table whose unused rows never learn anything a masked row does not.
Files (TR_OUT, default /work/family-out): ckpt/<name>.pt, weights/<name>.bin + .json (float32, the
graph builder's layout: every linear weight as [in, out]), ckpt/<name>.log.json (wall time, losses).
"""
import json
import math
import os
import random
import re
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

OUT = os.environ.get('TR_OUT', '/work/family-out')
CORPUS = os.environ.get('TR_CORPUS', os.path.join(OUT, 'corpus'))
torch.set_num_threads(int(os.environ.get('TR_THREADS', '1')))


def cpu_has_bf16():
    try:
        flags = open('/proc/cpuinfo').read()
    except OSError:
        return False
    return 'avx512_bf16' in flags or 'amx_bf16' in flags


# Mixed precision (bf16 matmuls; weights, optimizer and loss fp32): on this machine's AVX-512 BF16 cores the large's
# step of 32 chats took 4.1 s against 13 s in fp32. It learns less per step: the small 160 / 3 reached loss 0.072 after
# 1,400 bf16 steps against 0.047 after 1,200 in fp32 (validation exact match 34 % against 45 %). So the large, whose
# fp32 step is the long pole, trains in bf16 and the small, in minutes either way, in fp32. Without those instructions
# bf16 is emulated (slower than fp32): such a CPU trains in fp32.
def precision(c):
    p = os.environ.get('TR_PRECISION', c['precision'])
    if p not in ('bf16', 'fp32'):
        sys.exit(f'TR_PRECISION must be bf16 or fp32, got {p!r}')
    return p if p == 'fp32' or cpu_has_bf16() else 'fp32'


# Qwen3-0.6B's fixed fields (RoPE theta, norm eps, tied head, q/k norm); sizes per model
ROPE_THETA, EPS = 1_000_000.0, 1e-6
# The small's held-out exact match jumps with its step count (160 / 3: 1,200 steps 44.6 %, 1,350 47.2 %, 1,450 65.9 %,
# 1,500 60.5 %): 1,350 keeps it under the 60 % that leaves the large room to route, with margin.
CONFIGS = {
    'small': dict(hidden=160, layers=3, heads=2, kv=1, head_dim=64, ffn=480, lr=2e-3, steps=1350, bs=32, precision='fp32'),
    'medium': dict(hidden=320, layers=5, heads=5, kv=1, head_dim=64, ffn=960, lr=1.5e-3, steps=1500, bs=32, precision='bf16'),
    'large': dict(hidden=512, layers=7, heads=8, kv=1, head_dim=64, ffn=1536, lr=1.5e-3, steps=2800, bs=32, precision='bf16'),
}


def load_vocab():
    return json.load(open(os.path.join(CORPUS, 'vocab.json')))


def load_rows(split):
    with open(os.path.join(CORPUS, f'{split}.jsonl')) as f:
        return [json.loads(line) for line in f if line.strip()]


class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * self.weight


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, nh, kv, hd = c['hidden'], c['heads'], c['kv'], c['head_dim']
        self.nh, self.kv, self.hd = nh, kv, hd
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(H), RMSNorm(H)
        self.q_proj = nn.Linear(H, nh * hd, bias=False)
        self.k_proj = nn.Linear(H, kv * hd, bias=False)
        self.v_proj = nn.Linear(H, kv * hd, bias=False)
        self.o_proj = nn.Linear(nh * hd, H, bias=False)
        self.q_norm, self.k_norm = RMSNorm(hd), RMSNorm(hd)
        self.gate_proj = nn.Linear(H, c['ffn'], bias=False)
        self.up_proj = nn.Linear(H, c['ffn'], bias=False)
        self.down_proj = nn.Linear(c['ffn'], H, bias=False)

    def forward(self, x, cos, sin, bias, past=None):
        B, S, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_norm(self.q_proj(h).view(B, S, self.nh, self.hd)).transpose(1, 2)
        k = self.k_norm(self.k_proj(h).view(B, S, self.kv, self.hd)).transpose(1, 2)
        v = self.v_proj(h).view(B, S, self.kv, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if past is not None:
            k = torch.cat([past[0], k], 2)
            v = torch.cat([past[1], v], 2)
        g = self.nh // self.kv  # query head i reads KV head i // g (transformers' repeat_kv)
        kk = k.repeat_interleave(g, 1) if g > 1 else k
        vv = v.repeat_interleave(g, 1) if g > 1 else v
        att = (q @ kk.transpose(-1, -2)) / math.sqrt(self.hd) + bias
        y = (att.softmax(-1) @ vv).transpose(1, 2).reshape(B, S, self.nh * self.hd)
        x = x + self.o_proj(y)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h)), (k, v)


class Qwen3Compact(nn.Module):
    def __init__(self, c, vocab):
        super().__init__()
        self.c = c
        self.embed_tokens = nn.Embedding(vocab, c['hidden'])
        self.layers = nn.ModuleList([Layer(c) for _ in range(c['layers'])])
        self.norm = RMSNorm(c['hidden'])
        hd = c['head_dim']
        self.register_buffer('inv_freq', 1.0 / (ROPE_THETA ** (torch.arange(0, hd, 2).float() / hd)), persistent=False)
        for p in self.parameters():
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, ids, mask, pos, past=None):
        """mask [B, T] (1 = real, T = past + S), pos [B, S]; returns compact logits [B, S, U] and the new caches."""
        B, S = ids.shape
        T = mask.shape[1]
        x = self.embed_tokens(ids)
        f = pos[..., None].float() * self.inv_freq
        emb = torch.cat([f, f], -1)[:, None]  # [B, 1, S, hd]
        cos, sin = emb.cos(), emb.sin()
        qi = torch.arange(S)[:, None] + (T - S)
        keep = (torch.arange(T)[None, :] <= qi)[None, None] & (mask[:, None, None, :] > 0)
        bias = (~keep).float() * -1e9
        caches = []
        for i, layer in enumerate(self.layers):
            x, kv = layer(x, cos, sin, bias, None if past is None else past[i])
            caches.append(kv)
        return self.norm(x) @ self.embed_tokens.weight.t(), caches


def batch_of(rows, eos):
    """Right-padded ids, mask, positions and targets (loss on the answer through the first end-of-turn id only)."""
    seqs = []
    for r in rows:
        ids = r['ids']
        end = ids.index(eos, r['start']) + 1
        seqs.append((ids[:end], r['start']))
    T = max(len(s) for s, _ in seqs)
    x = torch.zeros((len(seqs), T), dtype=torch.long)
    m = torch.zeros((len(seqs), T), dtype=torch.long)
    y = torch.full((len(seqs), T), -100, dtype=torch.long)
    for i, (s, st) in enumerate(seqs):
        x[i, :len(s)] = torch.tensor(s)
        m[i, :len(s)] = 1
        y[i, st - 1:len(s) - 1] = torch.tensor(s[st:])
    pos = torch.arange(T)[None].expand(len(seqs), T)
    return x, m, pos, y


@torch.no_grad()
def greedy(model, prompts, eos, max_new=96):
    """Batched greedy with left padding and the KV cache: generated compact ids per prompt (end id excluded)."""
    B, L = len(prompts), max(len(p) for p in prompts)
    ids = torch.zeros((B, L), dtype=torch.long)
    mask = torch.zeros((B, L), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, L - len(p):] = torch.tensor(p)
        mask[i, L - len(p):] = 1
    pos = (mask.cumsum(1) - 1).clamp(min=0)
    logits, past = model(ids, mask, pos)
    out, done, nxt_pos = [[] for _ in range(B)], [False] * B, mask.sum(1)
    for _ in range(max_new):
        nxt = logits[:, -1].argmax(-1)
        for i in range(B):
            if not done[i]:
                if int(nxt[i]) == eos:
                    done[i] = True
                else:
                    out[i].append(int(nxt[i]))
        if all(done):
            break
        mask = torch.cat([mask, torch.ones((B, 1), dtype=torch.long)], 1)
        logits, past = model(nxt[:, None], mask, nxt_pos[:, None], past)
        nxt_pos = nxt_pos + 1
    return out


def exact_match(model, rows, vocab, n, bs=50):
    """Share of `rows[:n]` whose greedy answer's last "The answer is N" equals the reference (the grader of wordProblems.ts)."""
    eos = vocab['ids'].index(vocab['eos'])
    ok, samples = 0, []
    for i in range(0, min(n, len(rows)), bs):
        chunk = rows[i:i + bs]
        outs = greedy(model, [r['ids'][:r['start']] for r in chunk], eos)
        for r, o in zip(chunk, outs):
            text = ''.join(vocab['text'][t] for t in o)
            found = re.findall(r'The answer is (-?\d+)', text)
            ok += bool(found) and int(found[-1]) == r['final']
            if len(samples) < 3:
                samples.append(text)
    return ok / min(n, len(rows)), samples


def config(name):
    """CONFIGS[name] with the environment's overrides (TR_STEPS, TR_BS, TR_LR, TR_SHAPE)."""
    c = dict(CONFIGS[name])
    for k, env in (('steps', 'TR_STEPS'), ('bs', 'TR_BS')):
        if env in os.environ:
            c[k] = int(os.environ[env])
    if 'TR_LR' in os.environ:
        c['lr'] = float(os.environ['TR_LR'])
    if 'TR_SHAPE' in os.environ:
        # a size tried before it gets a name: hidden/layers/heads/kvHeads/headDim/intermediate, as `npm run bench -- batch-cost --sizes` takes it
        shape = [int(v) for v in os.environ['TR_SHAPE'].split('/')]
        c.update(zip(('hidden', 'layers', 'heads', 'kv', 'head_dim', 'ffn'), shape))
    return c


def train(name):
    c = config(name)
    mixed = precision(c) == 'bf16'
    vocab = load_vocab()
    eos = vocab['ids'].index(vocab['eos'])
    rows = load_rows('train')
    dev = load_rows('validation')
    torch.manual_seed(1000 + list(CONFIGS).index(name))
    rng = random.Random(1000 + list(CONFIGS).index(name))
    model = Qwen3Compact(c, len(vocab['ids']))
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=c['lr'], betas=(0.9, 0.98), weight_decay=0.01)
    os.makedirs(os.path.join(OUT, 'ckpt'), exist_ok=True)
    print(f'[{name}] params={n_params} (compact vocab {len(vocab["ids"])}) steps={c["steps"]} bs={c["bs"]} threads={torch.get_num_threads()} precision={precision(c)}', flush=True)
    t0, log, order, first, segments = time.time(), [], [], 1, []
    state_path = os.path.join(OUT, 'ckpt', f'{name}.state.pt')
    if os.path.exists(state_path) and os.environ.get('TR_RESUME', '1') != '0':
        # a run cut short (a session ends, a machine restarts) goes on from its last checkpoint
        st = torch.load(state_path)
        model.load_state_dict(st['model'])
        opt.load_state_dict(st['opt'])
        rng.setstate(st['rng'])
        order, log, first = st['order'], st['log'], st['step'] + 1
        segments = st.get('segments', [])
        t0 -= st['seconds']
        print(f'[{name}] resuming after step {st["step"]} ({st["seconds"]:.0f}s trained)', flush=True)
    # a run resumed with other settings (more steps, another lr or precision) says so in its log
    segments.append(dict(from_step=first, steps=c['steps'], lr=c['lr'], bs=c['bs'], precision=precision(c), threads=torch.get_num_threads()))
    for step in range(first, c['steps'] + 1):
        lr = c['lr'] * min(1.0, step / 100) * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * step / c['steps'])))
        for g in opt.param_groups:
            g['lr'] = lr
        if len(order) < c['bs']:
            order = list(range(len(rows)))
            rng.shuffle(order)
        x, m, pos, y = batch_of([rows[order.pop()] for _ in range(c['bs'])], eos)
        with torch.autocast('cpu', dtype=torch.bfloat16, enabled=mixed):
            logits, _ = model(x, m, pos)
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1), ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0 or step == c['steps']:
            log.append({'step': step, 'loss': round(loss.item(), 4), 'seconds': round(time.time() - t0, 1)})
            print(f'[{name}] step {step} loss {loss.item():.4f} lr {lr:.2e} {time.time() - t0:.0f}s', flush=True)
        if step % 100 == 0:
            torch.save(model.state_dict(), os.path.join(OUT, 'ckpt', f'{name}.pt'))
            st = dict(model=model.state_dict(), opt=opt.state_dict(), rng=rng.getstate(), order=order, log=log, step=step, segments=segments,
                      seconds=time.time() - t0)
            torch.save(st, state_path + '.tmp')
            os.replace(state_path + '.tmp', state_path)
    seconds = time.time() - t0
    torch.save(model.state_dict(), os.path.join(OUT, 'ckpt', f'{name}.pt'))
    model.eval()
    n_eval = int(os.environ.get('TR_EVAL_N', '200'))
    acc = exact_match(model, dev, vocab, n_eval)[0] if n_eval else None
    info = dict(name=name, config=c, params=n_params, train_seconds=round(seconds, 1), validation_exact_match=acc, validation_n=n_eval, segments=segments, log=log)
    json.dump(info, open(os.path.join(OUT, 'ckpt', f'{name}.log.json'), 'w'), indent=1)
    write_weights(name, model)
    reference(name)
    print(f'[{name}] done in {seconds:.0f}s, validation exact match ({n_eval}) {acc}', flush=True)


def hf_name(key):
    """transformers' Qwen3 names: layers.0.q_proj.weight -> layers.0.self_attn.q_proj.weight."""
    parts = key.split('.')
    if parts[0] == 'layers':
        sub = {'q_proj': 'self_attn', 'k_proj': 'self_attn', 'v_proj': 'self_attn', 'o_proj': 'self_attn', 'q_norm': 'self_attn',
               'k_norm': 'self_attn', 'gate_proj': 'mlp', 'up_proj': 'mlp', 'down_proj': 'mlp'}.get(parts[2])
        if sub:
            parts.insert(2, sub)
    return '.'.join(parts)


@torch.no_grad()
def reference(name, n=4):
    """Compact logits at each of the first n validation prompts' last position, the weights rounded to fp16 as the export stores them."""
    vocab = load_vocab()
    model = load_model(name, vocab)
    for p in model.parameters():
        p.copy_(p.half().float())
    rows = load_rows('validation')[:n]
    out = []
    for r in rows:
        ids = torch.tensor([r['ids'][:r['start']]])
        logits, _ = model(ids, torch.ones_like(ids), torch.arange(ids.shape[1])[None])
        out.append({'prompt': [vocab['ids'][i] for i in r['ids'][:r['start']]], 'logits': [round(float(x), 5) for x in logits[0, -1]]})
    json.dump({'name': name, 'vocab': vocab['ids'], 'rows': out}, open(os.path.join(OUT, 'weights', f'{name}.reference.json'), 'w'))
    print(f'[{name}] reference logits for {n} prompts', flush=True)


def load_model(name, vocab):
    model = Qwen3Compact(config(name), len(vocab['ids']))
    model.load_state_dict(torch.load(os.path.join(OUT, 'ckpt', f'{name}.pt')))
    model.eval()
    return model


def write_weights(name, model):
    """float32 weights in the graph builder's names and layout (linear weights transposed to [in, out])."""
    os.makedirs(os.path.join(OUT, 'weights'), exist_ok=True)
    entries, offset, chunks = [], 0, []
    for key, t in model.state_dict().items():
        t = t.detach().float()
        hf = 'model.' + hf_name(key)
        if key.endswith('_proj.weight'):
            t = t.t().contiguous()
        b = t.numpy().astype('<f4').tobytes()
        entries.append({'name': hf, 'shape': list(t.shape), 'offset': offset})
        chunks.append(b)
        offset += len(b)
    with open(os.path.join(OUT, 'weights', f'{name}.bin'), 'wb') as f:
        for b in chunks:
            f.write(b)
    json.dump({'name': name, 'config': {k: v for k, v in model.c.items() if k not in ('lr', 'steps', 'bs')}, 'tensors': entries},
              open(os.path.join(OUT, 'weights', f'{name}.json'), 'w'), indent=1)


def evaluate(name, n, split):
    if split not in ('validation', 'heldout'):
        sys.exit(f'the split must be validation or heldout, got {split!r}')
    vocab = load_vocab()
    model = load_model(name, vocab)
    t0 = time.time()
    acc, samples = exact_match(model, load_rows(split), vocab, n)
    print(json.dumps({'name': name, 'split': split, 'n': n, 'exact_match': acc, 'seconds': round(time.time() - t0, 1), 'samples': samples[:2]}))


if __name__ == '__main__':
    cmd, name = sys.argv[1], sys.argv[2]
    if name not in CONFIGS:
        sys.exit(f'unknown model {name!r} (known: {", ".join(CONFIGS)})')
    if cmd == 'train':
        train(name)
    elif cmd == 'eval':
        evaluate(name, int(sys.argv[3]) if len(sys.argv) > 3 else 300, sys.argv[4] if len(sys.argv) > 4 else 'validation')
    elif cmd == 'weights':
        write_weights(name, load_model(name, load_vocab()))
        reference(name)
    else:
        sys.exit(f'unknown command {cmd!r} (train, eval, weights)')
