"""keras.ops.ctc_loss and keras.ops.ctc_decode (keras.ops and keras.ops.nn),
on arrays only: Keras's JAX algorithms in NumPy.

ctc_loss(target (B, N) ids, output (B, T, K) logits, target_length (B,),
output_length (B,)): the negative log-likelihood per sample (B,) by the
forward recursion over blank (phi, (B, N+1)) and label (emit, (B, N))
states in log space, log(0) as -1e5 (optax's ctc_loss_with_forward_probs,
which Keras's JAX backend uses). ctc_decode: greedy (argmax per step, repeats
merged, blanks dropped and the labels packed left, -1 after them; scores
-sum of the max logits) or beam search (jnp's unique / stable argsort order,
so ties break as Keras's).

ctc_loss on symbolic tensors (a loss function's y_true / y_pred, a custom
layer's call()) is the same recursion unrolled over the T steps of the
output's static length: per step a few Slice / Concatenate nodes and Binary
logaddexp / add nodes on the (N+1,) and (N,) states, the emissions a Gather
of the log-softmax at the labels (take_along_axis), the loss a Gather of the
last blank state at target_length; so the engine differentiates it: 12
layer calls a step (19 with a symbolic output_length), so T up to 39 (24)
steps fit the engine's graph limit; longer outputs are refused by name. Lengths are symbolic (B,) tensors or numbers; a label
outside [0, num_classes) gives NaN there (Keras's one_hot gives 0).
ctc_decode on a symbolic tensor is refused by name: its result is integer
class ids chosen by the values."""

import builtins

import numpy as np

from . import ops_lax as lx
from .layers.node import KerasTensor
from .layers.opnode import record

_LOG_EPS = -1e5


def _log_softmax(x):
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def ctc_loss(target, output, target_length, output_length, mask_index=0):
    """keras.ops.ctc_loss: per-sample CTC loss (B,) of logits output (B, T, K) for labels target (B, N)"""
    if lx.sym(target, output, target_length, output_length):
        y = _sym_ctc_loss(target, output, target_length, output_length, int(mask_index))
        return record(y, "CTCLoss", lx.NN, {"mask_index": int(mask_index)},
                      [target, output, target_length, output_length])
    return _np_ctc_loss(target, output, target_length, output_length, mask_index)


def _np_ctc_loss(target, output, target_length, output_length, mask_index):
    target = np.asarray(target).astype(np.int64)
    output = np.asarray(output, np.float32)
    if output.ndim != 3 or target.ndim != 2 or target.shape[0] != output.shape[0]:
        raise ValueError(f"keras.ops.ctc_loss: target must be (batch, max_label_length) and output (batch, "
                         f"max_length, num_classes) of one batch, got {target.shape} and {output.shape}")
    B, T, K = output.shape
    N = target.shape[1]
    tlen = np.broadcast_to(np.asarray(target_length).astype(np.int64), (B,))
    olen = np.broadcast_to(np.asarray(output_length).astype(np.int64), (B,))
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


def _per_sample(name, v):
    """a length: a symbolic (B,) tensor as (1,) per sample, or one number (an array of one value)"""
    if isinstance(v, KerasTensor):
        if v._ps not in ((), (1,)):
            lx.refuse("ctc_loss", f"{name} of shape {v.shape}: one length per sample, (batch,)")
        return lx.reshape(v, (1,))
    a = np.unique(np.asarray(v))
    if a.size != 1:
        lx.refuse("ctc_loss", f"{name} as an array of several values beside symbolic tensors (a model's batch "
                  "varies): give it as a tensor of the graph, or one number")
    return int(a[0])


_MAX_CALLS = 500      # of the engine's 512 layer calls a graph holds, what the unrolled recursion may take


def _sym_ctc_loss(target, output, target_length, output_length, mask_index):
    """the forward recursion of _np_ctc_loss on the engine's nodes; per sample: target (N,), output (T, K), the
    states phi (1, N+1) and emit (1, N). phi's first entry is kept by a logaddexp with log(0) = -1e5 (exact in
    float32 while it is above -99896, T steps of log-probabilities above -1e4 each)."""
    for name, v in (("target", target), ("output", output)):
        if not isinstance(v, KerasTensor):
            lx.refuse("ctc_loss", f"{name} as an array beside symbolic tensors (a model's batch varies)")
    lx.batched("ctc_loss", target, output)
    if len(target._ps) != 1 or len(output._ps) != 2:
        raise ValueError(f"keras.ops.ctc_loss: target must be (batch, max_label_length) and output (batch, "
                         f"max_length, num_classes), got {target.shape} and {output.shape}")
    (N,), (T, K) = lx.static("ctc_loss", target), lx.static("ctc_loss", output)
    tlen, olen = _per_sample("target_length", target_length), _per_sample("output_length", output_length)
    steps = T if isinstance(olen, KerasTensor) else max(0, min(T, olen))
    per_step = 19 if isinstance(olen, KerasTensor) else 12
    if steps * per_step + 28 > _MAX_CALLS:
        lx.refuse("ctc_loss", f"of {steps} output steps: the recursion unrolls into about {per_step} layer calls a "
                  f"step, {steps * per_step + 28} in all, and a graph holds at most {_MAX_CALLS} of them here "
                  f"(T <= {(_MAX_CALLS - 28) // per_step}); shorten the output sequence or compute the loss on arrays")
    logp = lx.sub(output, lx.reduce("logsumexp", output, (1,), keepdims=True))              # (T, K)
    lp_phi = lx.take(logp, np.array([mask_index]), 1)                                      # (T, 1)
    lp_emit = lx.along(logp, lx.reshape(target, (1, N)), 1)                                # (T, N)
    row = lx.reshape(target, (1, N))
    if N > 1:
        same = lx.binary("equal", lx.cut(row, 1, 0, N - 1), lx.cut(row, 1, 1, N))
        repeat = lx.concat([same, lx.const(np.zeros((1, 1)), target)], 1)                  # (1, N)
    else:
        repeat = lx.const(np.zeros((1, 1)), target)
    rep_eps = lx.mul(repeat, _LOG_EPS)
    norep_eps = lx.binary("multiply", lx.binary("subtract", 1.0, repeat), _LOG_EPS)
    nothing = lx.const(np.full((1, 1), _LOG_EPS), output)                                  # log(0), one node
    phi = lx.const(np.array([[0.0] + [_LOG_EPS] * N]), output)                             # (1, N+1)
    emit = lx.const(np.full((1, N), _LOG_EPS), output)                                     # (1, N)

    def with_phi(p, added):                  # p[:, 1:] logaddexp'ed with added, p[:, 0] kept
        return lx.binary("logaddexp", p, lx.concat([nothing, added], 1))

    if isinstance(olen, KerasTensor):
        olen = lx.reshape(olen, (1, 1))
    for t in range(steps):
        e, b = lx.cut(lp_emit, 0, t, t + 1), lx.cut(lp_phi, 0, t, t + 1)                 # (1, N), (1, 1)
        prev_phi = with_phi(phi, lx.add(emit, rep_eps))
        next_emit = lx.add(lx.binary("logaddexp", lx.cut(prev_phi, 1, 0, N), emit), e)
        next_phi = lx.add(with_phi(prev_phi, lx.add(emit, norep_eps)), b)
        if isinstance(olen, KerasTensor):                       # steps from output_length on keep the state
            pad = lx.unary("less_equal", olen, param=float(t))
            next_emit = lx.add(next_emit, lx.mul(pad, lx.sub(emit, next_emit)))
            next_phi = lx.add(next_phi, lx.mul(pad, lx.sub(phi, next_phi)))
        phi, emit = next_phi, next_emit
    last = with_phi(phi, emit)                                                              # (1, N+1)
    if isinstance(tlen, KerasTensor):
        picked = lx.along(last, lx.reshape(tlen, (1, 1)), 1)
    else:
        picked = lx.take(last, np.array([min(max(tlen, 0), N)]), 1)
    return lx.reshape(lx.mul(picked, -1.0), ())


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
