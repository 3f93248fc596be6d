# Fits the router heads (CITER, R2R, Co-LLM) on labelled positions and exports each as the ONNX file routers.json names.
"""
Shared by train.py (the old multiplication family) and trainRouters.py (the word-problem family): each script
gathers its own positions and writes its own routers.json; this module holds what they have in common, so the
heads, their training, thresholds, ONNX inputs/outputs and routers.json entries stay one format.

Positions are four tensors over the answer positions: hidden (N, d) float, token (N,) long (small's greedy
token), topk (N, TOPK) float (small's largest raw logits, descending), agree (N,) float (1 when small's greedy
token equals the labeller's at the same prefix).
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

TOPK = 8


class CiterHead(nn.Module):
    """CITER: MLP(hidden) -> confidence that small's token is right (route to large when low)."""

    def __init__(self, d):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, 128), nn.GELU(), nn.Linear(128, 1))

    def forward(self, hidden):
        return torch.sigmoid(self.net(hidden))


class R2RHead(nn.Module):
    """R2R: MLP(hidden, small's embedding of the sampled token, top-k logits) -> probability of divergence.

    Without `vocab_ids` the token indexes `table` directly (the old family's ids are the table's rows); with
    them the token is a full-vocabulary id, embedded through a one-hot over `vocab_ids` (an id outside them
    embeds as zeros, as in the word-problem family's own graph).
    """

    def __init__(self, d, table, vocab_ids=None):
        super().__init__()
        self.one_hot = vocab_ids is not None
        if self.one_hot:
            self.register_buffer('ids', torch.tensor(vocab_ids, dtype=torch.long))
            self.register_buffer('table', table.clone())
        else:
            self.embed = nn.Embedding.from_pretrained(table.clone(), freeze=True)
        self.net = nn.Sequential(nn.Linear(2 * d + TOPK, 128), nn.GELU(), nn.Linear(128, 1))

    def forward(self, hidden, token_id, topk_logits):
        if self.one_hot:
            e = (token_id.reshape(-1, 1) == self.ids[None, :]).float() @ self.table
        else:
            e = self.embed(token_id.reshape(-1))
        return torch.sigmoid(self.net(torch.cat([hidden, e, topk_logits], dim=-1)))


class ColmHead(nn.Module):
    """Co-LLM: deferral probability sigmoid(h . g + b)."""

    def __init__(self, d):
        super().__init__()
        self.g = nn.Linear(d, 1)

    def forward(self, hidden):
        return torch.sigmoid(self.g(hidden))


def auc(score, label):
    """ROC AUC of `score` for positive `label` (rank statistic); None when the positions hold one class only."""
    s, lab = score.double(), label.bool()
    if lab.all() or not lab.any():
        return None
    ranks = torch.empty_like(s)
    ranks[s.argsort()] = torch.arange(1, len(s) + 1, dtype=torch.double)
    npos, nneg = int(lab.sum()), int((~lab).sum())
    return float((ranks[lab].sum() - npos * (npos + 1) / 2) / max(1, npos * nneg))


def input_specs(d, model, token_meaning):
    """routers.json's description of each ONNX input a head may read (the runtime feeds them by `source`)."""
    return {'hidden_states': {'shape': ['batch_size', d], 'dtype': 'float32', 'source': 'hidden',
                              'meaning': f"{model}'s last-layer hidden state (after final norm) at the sampled position"},
            'token_id': {'shape': ['batch_size', 1], 'dtype': 'int64', 'source': 'token', 'meaning': token_meaning},
            'topk_logits': {'shape': ['batch_size', TOPK], 'dtype': 'float32', 'source': 'topk_logits',
                            'meaning': f"{model}'s {TOPK} largest raw logits, descending"}}


def fit_heads(train, val, table, labels, suffix, extra, out_dir, specs, vocab_ids=None):
    """Fits CITER, R2R and Co-LLM on (hidden, token, topk, agree) positions and exports <name><suffix>.onnx into `out_dir`.

    `table` is small's embedding table for R2R (`vocab_ids`: see R2RHead), `labels` and `extra` go into each entry,
    `specs` is input_specs(...). Returns (routers.json entries by key, the fitted modules by key).
    """
    Htr, Ttr, Ktr, Ytr = train
    Hva, Tva, Kva, Yva = val
    d = Htr.shape[1]
    print(f'[routers{suffix}] train positions {len(Ytr)} (agree {Ytr.mean():.4f}), validation {len(Yva)} (agree {Yva.mean():.4f})', flush=True)
    heads = {
        # name: (module, target is "small right" (citer) or "diverge" (r2r, colm), inputs)
        'citer': (CiterHead(d), False, lambda H, T, K: (H,)),
        'r2r': (R2RHead(d, table, vocab_ids), True, lambda H, T, K: (H, T.unsqueeze(1), K)),
        'colm': (ColmHead(d), True, lambda H, T, K: (H,)),
    }
    entries, modules = {}, {}
    for name, (head, diverge, inputs) in heads.items():
        ytr = (1 - Ytr) if diverge else Ytr
        yva = (1 - Yva) if diverge else Yva
        opt = torch.optim.AdamW([p for p in head.parameters() if p.requires_grad], lr=3e-3, weight_decay=1e-4)
        g = torch.Generator().manual_seed(5)
        for _ in range(8):
            perm = torch.randperm(len(ytr), generator=g)
            for i in range(0, len(ytr), 512):
                j = perm[i:i + 512]
                p = head(*inputs(Htr[j], Ttr[j], Ktr[j])).squeeze(1).clamp(1e-6, 1 - 1e-6)
                loss = F.binary_cross_entropy(p, ytr[j])
                opt.zero_grad()
                loss.backward()
                opt.step()
        head.eval()
        with torch.no_grad():
            pv = head(*inputs(Hva, Tva, Kva)).squeeze(1)
        a = auc(pv, yva)
        acc = float(((pv > 0.5).float() == yva).float().mean())
        # suggested threshold: route on >= 90 % of the divergent validation positions (high recall, some extra large calls)
        div_score = pv if diverge else 1 - pv
        div = (1 - Yva).bool()
        t_div = float(torch.quantile(div_score[div], 0.10)) if div.any() else 0.5
        routed = float((div_score >= t_div).float().mean())
        thr = t_div if diverge else 1 - t_div
        print(f'[routers] {name}{suffix}: validation AUC {a if a is None else round(a, 4)} acc@0.5 {acc:.4f} threshold {thr:.4f} routes {routed:.3f} of positions', flush=True)
        names = ['hidden_states', 'token_id', 'topk_logits'] if name == 'r2r' else ['hidden_states']
        key = name + suffix
        torch.onnx.export(head, inputs(Hva[:2], Tva[:2], Kva[:2]), os.path.join(out_dir, f'{key}.onnx'), input_names=names,
                          output_names=['score'], dynamic_axes={**{k: {0: 'batch_size'} for k in names}, 'score': {0: 'batch_size'}},
                          opset_version=14)
        entries[key] = {
            'file': f'{key}.onnx', 'labels': labels, 'val_positions': len(Yva), 'val_agree_rate': round(float(Yva.mean()), 4),
            **extra, 'inputs': {k: specs[k] for k in names},
            'output': {'name': 'score', 'shape': ['batch_size', 1]},
            'score_meaning': 'probability small is right (route to large when score < threshold)' if not diverge
            else ('probability small diverges from large (route when score >= threshold)' if name == 'r2r'
                  else 'deferral probability sigmoid(h.g+b) (defer to large when score > threshold)'),
            'route_when': 'score < threshold' if not diverge else 'score >= threshold',
            'threshold': round(thr, 4), 'val_auc': a if a is None else round(a, 4), 'val_acc_at_0.5': round(acc, 4),
            'val_routed_fraction_at_threshold': round(routed, 4), 'val_divergence_recall_at_threshold': 0.9,
        }
        modules[key] = head
    return entries, modules
