"""keras.ops.ctc_loss and keras.ops.ctc_decode (keras.ops and keras.ops.nn),
on arrays only: Keras's JAX algorithms in NumPy.

ctc_loss(target (B, N) ids, output (B, T, K) logits, target_length (B,),
output_length (B,)): the negative log-likelihood per sample (B,) by the
forward recursion over blank (phi, (B, N+1)) and label (emit, (B, N))
states in log space, log(0) as -1e5 (optax's ctc_loss_with_forward_probs,
which Keras's JAX backend uses). ctc_decode: greedy (argmax per step, repeats
merged, blanks dropped and the labels packed left, -1 after them; scores
-sum of the max logits) or beam search (jnp's unique / stable argsort order,
so ties break as Keras's). On a symbolic tensor both are refused by name:
the recursion is a loop over time the engine has no node for, and the
decoded paths' values are integer positions."""

import builtins

import numpy as np

from . import ops_lax as lx

_WHY = ("CTC's forward recursion over time is a loop the engine has no node for; compute the loss on arrays "
        "(keras.ops.ctc_loss on NumPy arrays) or train with another loss")
_LOG_EPS = -1e5


def _log_softmax(x):
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


@lx.arrays_only("ctc_loss", _WHY)
def ctc_loss(target, output, target_length, output_length, mask_index=0):
    """keras.ops.ctc_loss: per-sample CTC loss (B,) of logits output (B, T, K) for labels target (B, N)"""
    target = np.asarray(target).astype(np.int64)
    output = np.asarray(output, np.float32)
    if output.ndim != 3 or target.ndim != 2 or target.shape[0] != output.shape[0]:
        raise ValueError(f"keras.ops.ctc_loss: target must be (batch, max_label_length) and output (batch, "
                         f"max_length, num_classes) of one batch, got {target.shape} and {output.shape}")
    B, T, K = output.shape
    N = target.shape[1]
    tlen = np.asarray(target_length).astype(np.int64).reshape(B)
    olen = np.asarray(output_length).astype(np.int64).reshape(B)
    logp = _log_softmax(output)
    repeat = np.zeros((B, N), np.float32)
    repeat[:, :-1] = target[:, :-1] == target[:, 1:]
    lp_phi = logp[:, :, mask_index]                                             # (B, T)
    lp_emit = np.take_along_axis(logp, np.clip(target, 0, K - 1)[:, None, :].repeat(T, 1), axis=2)  # (B, T, N)
    lp_emit = np.where(((target >= 0) & (target < K))[:, None, :], lp_emit, 0.0).astype(np.float32)
    phi = np.full((B, N + 1), _LOG_EPS, np.float32)
    phi[:, 0] = 0.0
    emit = np.full((B, N), _LOG_EPS, np.float32)

    def with_phi(p, added):
        return np.concatenate([p[:, :1], np.logaddexp(p[:, 1:], added)], axis=1)

    for t in range(T):
        prev_phi_orig = phi
        prev_phi = with_phi(phi, emit + _LOG_EPS * repeat)
        e = lp_emit[:, t]
        next_emit = np.logaddexp(prev_phi[:, :-1] + e, emit + e)
        next_phi = with_phi(prev_phi + lp_phi[:, t:t + 1], emit + lp_phi[:, t:t + 1] + _LOG_EPS * (1.0 - repeat))
        pad = (t >= olen)[:, None]
        emit = np.where(pad, emit, next_emit).astype(np.float32)
        phi = np.where(pad, prev_phi_orig, next_phi).astype(np.float32)
    last = with_phi(phi, emit)
    return -last[np.arange(B), np.clip(tlen, 0, N)].astype(np.float32)


def _greedy(x, lengths, merge_repeated, mask_index):
    B, T, K = x.shape
    ids = x.argmax(axis=-1)
    scores = x.max(axis=-1)
    out = np.arange(T)[None, :] >= lengths[:, None]
    ids = np.where(out, mask_index, ids)
    scores = np.where(out, 0.0, scores)
    if merge_repeated:
        rep = np.zeros_like(out)
        rep[:, 1:] = ids[:, 1:] == ids[:, :-1]
        ids = np.where(rep, mask_index, ids)
    blank = ids == mask_index
    ids = np.where(blank, -1, ids)
    order = np.argsort(np.where(blank, T, np.arange(T)[None, :]), axis=-1, kind="stable")
    ids = np.take_along_axis(ids, order, axis=-1)
    return ids[None].astype(np.int32), (-scores.sum(axis=1)[:, None]).astype(np.float32)


def _merge(inverse, scores, size):
    m = scores.max()
    acc = np.zeros(size, np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        np.add.at(acc, inverse, np.exp(scores - m))
        return np.log(acc) + m


def _unique_rows(paths, size):
    u, inv = np.unique(paths, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    return np.concatenate([u, np.full((size - len(u), paths.shape[1]), -1, paths.dtype)]), inv


def _beam_one(x, length, beam_width, top_paths, mask_index):
    """one sample's beam search: x (T, K) log-probabilities, classes flipped as Keras's"""
    T, K = x.shape
    W = beam_width
    size = 2 * K * W
    n0 = builtins.min(K, W)
    first = np.argsort(x[0], kind="stable")[-n0:]
    paths = np.full((2 * W, T), -1, np.int64)
    paths[:n0, 0] = np.where(first == mask_index, -1, first)
    scores = np.full(2 * W, -np.inf)
    scores[:n0] = x[0][first]
    masked = paths[:, 0] == -1
    classes0 = np.arange(K)
    classes0[mask_index] = -1
    for t in range(1, T):
        if t >= length:
            continue
        p = np.repeat(paths, K, axis=0)
        s = np.repeat(scores, K)
        prev_masked = np.repeat(masked, K)
        tail_at = np.argmax(p == -1, axis=1)
        rows = np.arange(len(p))
        tails = np.where(tail_at == 0, -1, p[rows, tail_at - 1])
        classes = np.tile(classes0, 2 * W)
        masked_now = classes == -1
        classes = np.where(~prev_masked & (tails == classes), -1, classes)
        p[rows, tail_at] = classes
        s = s + np.tile(x[t], 2 * W)
        p, inv = _unique_rows(p, size)
        emit = _merge(inv, np.where(masked_now, -np.inf, s), size)
        mask = _merge(inv, np.where(masked_now, s, -np.inf), size)
        total = np.logaddexp(emit, mask)
        top = np.argsort(total, kind="stable")[-W:]
        paths = np.tile(p[top], (2, 1))
        scores = np.concatenate([emit[top], mask[top]])
        masked = np.concatenate([np.zeros(W, bool), np.ones(W, bool)])
    p, inv = _unique_rows(paths, size)
    s = _merge(inv, scores, size)
    top = np.argsort(s, kind="stable")[-top_paths:][::-1]
    return p[top], s[top]


def _beam(x, lengths, beam_width, top_paths, mask_index):
    B, T, K = x.shape
    x = np.flip(_log_softmax(x.astype(np.float64)).astype(np.float32), axis=2)
    flipped = K - mask_index - 1
    res = [_beam_one(x[b], lengths[b], beam_width, top_paths, flipped) for b in range(B)]
    paths = np.stack([r[0] for r in res])                                      # (B, top_paths, T)
    paths = np.where(paths == -1, -1, K - paths - 1)
    return np.transpose(paths, (1, 0, 2)).astype(np.int32), np.stack([r[1] for r in res]).astype(np.float32)


@lx.arrays_only("ctc_decode", "the decoded paths are integer class ids chosen by the values (a beam search or "
                "an argmax with repeats merged); decode a model's predict() output on arrays")
def ctc_decode(inputs, sequence_lengths, strategy="greedy", beam_width=100, top_paths=1, merge_repeated=True,
               mask_index=0):
    """keras.ops.ctc_decode: (paths (top_paths, B, T) with -1 after each path, scores (B, top_paths))"""
    x = np.asarray(inputs, np.float32)
    if x.ndim != 3:
        raise ValueError(f"keras.ops.ctc_decode: inputs must be (batch, max_length, num_classes), got {x.shape}")
    lengths = np.asarray(sequence_lengths).astype(np.int64).reshape(x.shape[0])
    if mask_index is None:
        mask_index = x.shape[2] - 1
    if strategy == "greedy":
        return _greedy(x, lengths, merge_repeated, int(mask_index))
    if strategy == "beam_search":
        if int(beam_width) < 1 or int(top_paths) < 1 or int(top_paths) > int(beam_width):
            raise ValueError(f"keras.ops.ctc_decode: beam_width ({beam_width}) and top_paths ({top_paths}) must "
                             "be positive, top_paths <= beam_width")
        return _beam(x, lengths, int(beam_width), int(top_paths), int(mask_index))
    raise ValueError(f"keras.ops.ctc_decode: strategy must be 'greedy' or 'beam_search', got {strategy!r}")
