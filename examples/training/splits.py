#!/usr/bin/env python3
# The task's problem stream and its splits (held-out, validation), kept out of every training run; stdlib only.
"""
    python3 examples/training/splits.py      # writes examples/models/heldout.json and validation.json
"""
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.environ.get('TR_MODELS', os.path.join(HERE, '..', '..', 'examples', 'models'))


def make_problem(rng):
    a = rng.randint(10, 999)
    b = rng.randint(2, 99) if rng.random() < 0.9 else rng.randint(2, 9)
    return a, b


def eval_problems(n=500, seed=7):
    rng = random.Random(seed)
    seen, out = set(), []
    while len(out) < n:
        p = make_problem(rng)
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


# The first 500 held-out problems (seed 7) were drawn before any training and excluded from it. The
# shipped runs drew most of the ~97,000 possible problems, so every problem added to a split since
# comes from outside what those runs drew: SHIPPED_RUNS replays them (seed, batches, batch size).
HELDOUT_N, HELDOUT_FIRST, HELDOUT_SEED = 2000, 500, 7
VALIDATION_N, VALIDATION_SEED = 1000, 8
SHIPPED_RUNS = [
    {'run': 'train small', 'seed': 1000, 'batches': 1200, 'batch_size': 64},
    {'run': 'train medium', 'seed': 1001, 'batches': 700, 'batch_size': 64},
    {'run': 'train large', 'seed': 1002, 'batches': 1200, 'batch_size': 64},
    {'run': 'train large, phase 1', 'seed': 1102, 'batches': 600, 'batch_size': 64},
    {'run': 'routers, training positions', 'seed': 99, 'batches': 15, 'batch_size': 200},
    {'run': 'routers, validation positions', 'seed': 98, 'batches': 5, 'batch_size': 200},
]


def split_path(name):
    return os.path.join(MODELS, f'{name}.json')


def load_split(name):
    p = split_path(name)
    if not os.path.exists(p):
        return []
    return [tuple(int(x) for x in r['question'].split('*')) for r in json.load(open(p))['rows']]


# Every split problem is kept out of training: the held-out set and the validation set.
EVAL_SET = set(eval_problems(HELDOUT_FIRST, HELDOUT_SEED)) | set(load_split('heldout')) | set(load_split('validation'))


def drawn_by(run, excluded):
    """Every problem a training run's data stream drew, the skipped ones included (replays train_batch)."""
    rng, seen = random.Random(run['seed']), set()
    for _ in range(run['batches']):
        kept = 0
        while kept < run['batch_size']:
            p = make_problem(rng)
            seen.add(p)
            kept += p not in excluded
    return seen


def write_splits():
    """heldout.json (the first 500 unchanged, grown to HELDOUT_N) and validation.json, both outside every shipped run."""
    first = eval_problems(HELDOUT_FIRST, HELDOUT_SEED)
    trained = set()
    for run in SHIPPED_RUNS:
        trained |= drawn_by(run, set(first))

    def draw(seed, n, taken, keep_first=0):
        rng, seen, out = random.Random(seed), set(), []
        while len(out) < n:
            p = make_problem(rng)
            if p in seen:
                continue
            seen.add(p)
            if len(out) >= keep_first and (p in trained or p in taken):
                continue
            out.append(p)
        return out

    heldout = draw(HELDOUT_SEED, HELDOUT_N, set(), keep_first=HELDOUT_FIRST)
    assert heldout[:HELDOUT_FIRST] == first
    validation = draw(VALIDATION_SEED, VALIDATION_N, set(heldout))
    rule = ('distinct problems of the seed-{seed} stream of make_problem, skipping every problem a run in '
            'excluded_runs drew and, for validation, every held-out problem')
    for name, probs, seed, use in (
            ('heldout', heldout, HELDOUT_SEED, 'reporting only; rows 0-499 were drawn before training and excluded from it'),
            ('validation', validation, VALIDATION_SEED, 'every choice of thresholds, weights and training')):
        rows = [{'question': f'{a}*{b}', 'answer': str(a * b)} for a, b in probs]
        one_digit = sum(b < 10 for _, b in probs)
        with open(split_path(name), 'w') as f:
            json.dump({'task': 'worked multiplication, exact match of the number after the last "="', 'split': name,
                       'use': use, 'seed': seed, 'n': len(rows), 'rule': rule.format(seed=seed),
                       'first_kept': HELDOUT_FIRST if name == 'heldout' else 0,
                       'one_digit_b': one_digit, 'excluded_runs': SHIPPED_RUNS, 'rows': rows}, f, indent=0)
        print(f'[splits] {name}: {len(rows)} problems (seed {seed}, {one_digit} with one-digit b)', flush=True)
    print(f'[splits] the shipped runs drew {len(trained)} distinct problems', flush=True)



if __name__ == '__main__':
    write_splits()
