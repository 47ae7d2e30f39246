"""A paper estimate (no GPU was used) of data-parallel training throughput of
the seed models on 8 H100s in 2 nodes (4 + 4) over NCCL, as boundfit's NCCL
path runs it (csrc/cuda/nccl.cu: the fp32 gradients all-reduced in place
after backward, then the update) and as it would run with the gradient
buckets overlapped with backward (what the CPU path does, dist_overlap.c).

Model of a step, per GPU (every GPU does the same):
- compute: FLOPs of forward (2 per MAC) and backward (4 per MAC, 2 for the
  first layer, whose input needs no gradient) at an assumed fraction of the
  H100's fp32 peak, plus the memory-bound passes (activations, the Adam
  update) at an assumed fraction of HBM bandwidth;
- all-reduce: NCCL's ring, every GPU sends and receives 2 (N-1)/N of the
  gradient bytes; on 2 nodes the ring crosses the nodes, so its bus
  bandwidth is the nodes' InfiniBand (2 x 200 Gb/s = 50 GB/s a node, both
  NICs used by NCCL's channels), not NVLink (450 GB/s a GPU, the bound
  within a node); plus a latency term of 2 (N-1) hops;
- overlap: the gradients cut into buckets as dist_overlap.c cuts them
  (layers in backward order, closed at BUCKET floats, a larger layer in
  pieces), here with 25 MB buckets (PyTorch DDP's default; the CPU path's
  4 MiB would pay the latency term too often on 2 nodes); a bucket's
  all-reduce starts when backward has produced it and the previous one is
  done (one NCCL stream); the update waits for the last.

    python benchmarks/nccl_estimate.py
"""

GPUS, NODES = 8, 2
NVLINK = 450e9                  # bytes/s per GPU within a node
IB_NODE = 2 * 200e9 / 8         # bytes/s per node out of it (2 x 200 Gb/s)
HOP_LATENCY = 4e-6              # s per ring step (NCCL's LL protocol for small buckets, intra / inter node mixed)
BUCKET = 25 * 2**20 // 4        # floats per bucket when overlapped
FP32_PEAK = 67e12               # H100 SXM fp32 FLOP/s (no tensor cores: boundfit's fp32 cuBLAS / cuDNN)
HBM = 3.35e12                   # H100 SXM HBM3 bytes/s
EFF_GEMM, EFF_CONV, EFF_MEM = 0.7, 0.4, 0.7   # assumed fractions of peak reached

# layers in forward order: (name, MACs per sample, parameters, activation floats per sample, first, kind)
SEED_CNN = ("seed CNN: Conv2D(32, 3x3) on 100x100x3 -> MaxPool 2 -> Dense 128 -> Dense 10, batch 64", 64, [
    ("conv 3x3x3x32", 98 * 98 * 32 * 27, 3 * 3 * 3 * 32 + 32, 98 * 98 * 32 * 2 + 49 * 49 * 32, True, "conv"),
    ("dense 76832x128", 49 * 49 * 32 * 128, 49 * 49 * 32 * 128 + 128, 128 * 2, False, "gemm"),
    ("dense 128x10", 128 * 10, 128 * 10 + 10, 10 * 3, False, "gemm"),
])
SEED_MLP = ("seed MLP: Dense 10000 -> 5000 -> 2000 -> 10, batch 256", 256, [
    ("dense 10000x5000", 10000 * 5000, 10000 * 5000 + 5000, 5000 * 2, True, "gemm"),
    ("dense 5000x2000", 5000 * 2000, 5000 * 2000 + 2000, 2000 * 2, False, "gemm"),
    ("dense 2000x10", 2000 * 10, 2000 * 10 + 10, 10 * 3, False, "gemm"),
])


def flop_rate(kind):
    return FP32_PEAK * (EFF_CONV if kind == "conv" else EFF_GEMM)


def allreduce_seconds(nbytes, n=GPUS):
    """NCCL ring all-reduce of nbytes over n GPUs on NODES nodes."""
    if n == 1:
        return 0.0
    busbw = min(NVLINK, IB_NODE) if NODES > 1 else NVLINK
    return 2 * (n - 1) / n * nbytes / busbw + 2 * (n - 1) * HOP_LATENCY


def hierarchical_seconds(nbytes):
    """In-node reduce-scatter and all-gather over NVLink, the node's 1/NODES
    share exchanged between the nodes: each node sends 2 (M-1)/M of the bytes."""
    per_node = GPUS // NODES
    intra = 2 * (per_node - 1) / per_node * nbytes / NVLINK
    return intra + 2 * (NODES - 1) / NODES * nbytes / IB_NODE


def step(model, n=GPUS, overlap=False):
    _, batch, layers = model
    fwd = [2 * macs * batch / flop_rate(k) for _, macs, _, _, _, k in layers]
    bwd = [(2 if first else 4) * macs * batch / flop_rate(k) for _, macs, _, _, first, k in layers]
    # memory-bound passes: activations written / read about 4 times over forward + backward
    act = sum(a for *_, a, _f, _k in layers) * batch * 4 * 4 / (HBM * EFF_MEM)
    params = sum(p for _, _, p, *_ in layers)
    update = params * 4 * 7 / (HBM * EFF_MEM)   # Adam: read w, g, m, v; write w, m, v
    t = sum(fwd) + act
    # buckets (floats, layer index whose backward completes them), as dist_overlap.c builds them
    buckets, pending, ready = [], 0, None
    for i in reversed(range(len(layers))):
        pending += layers[i][2]
        ready = i
        while pending >= BUCKET:
            buckets.append((BUCKET, ready))
            pending -= BUCKET
        if pending == 0:
            ready = None
    if pending:
        buckets.append((pending, ready))
    comm_free, comm_total, b = 0.0, 0.0, 0
    for i in reversed(range(len(layers))):     # backward, last layer first
        t += bwd[i]
        while overlap and b < len(buckets) and buckets[b][1] == i:
            c = allreduce_seconds(buckets[b][0] * 4, n)
            comm_total += c
            comm_free = max(t, comm_free) + c
            b += 1
    if overlap:
        end = max(t, comm_free)
    else:
        end = t + allreduce_seconds(params * 4, n)   # one group after backward (nccl.cu)
        comm_total = end - t
    return {"compute": t + update, "comm": comm_total, "step": end + update, "exposed": end - t,
            "grad_bytes": params * 4, "batch": batch, "flops": sum(2 * m * batch + (2 if f else 4) * m * batch
                                                                  for _, m, _, _, f, _ in layers)}


def main():
    print(f"{GPUS} H100 in {NODES} nodes; NVLink {NVLINK / 1e9:.0f} GB/s, IB {IB_NODE / 1e9:.0f} GB/s a node; fp32 "
          f"{FP32_PEAK / 1e12:.0f} TFLOP/s x {EFF_GEMM} (GEMM) / {EFF_CONV} (conv), HBM {HBM / 1e12:.2f} TB/s x {EFF_MEM}")
    for model in (SEED_CNN, SEED_MLP):
        one = step(model, 1)
        print(f"\n{model[0]}")
        s = step(model)
        print(f"  gradients per step: {s['grad_bytes'] / 1e6:.1f} MB; FLOPs per step per GPU: {s['flops'] / 1e9:.1f} G")
        print(f"  1 GPU: step {one['step'] * 1e3:.2f} ms, {model[1] / one['step']:,.0f} samples/s")
        print(f"  ring all-reduce of all gradients over {GPUS}: "
              f"{allreduce_seconds(s['grad_bytes']) * 1e3:.2f} ms (intra-node alone: "
              f"{2 * (GPUS - 1) / GPUS * s['grad_bytes'] / NVLINK * 1e3:.2f} ms at NVLink); hierarchical bound "
              f"(reduce-scatter in the node, the shards across the 2 nodes, all-gather; NCCL's tree / CollNet "
              f"get near it): {hierarchical_seconds(s['grad_bytes']) * 1e3:.2f} ms")
        for overlap in (False, True):
            s = step(model, overlap=overlap)
            hidden = 1 - s["exposed"] / s["comm"] if s["comm"] else 1.0
            thr = GPUS * model[1] / s["step"]
            print(f"  {GPUS} GPUs, {'overlapped with backward' if overlap else 'after backward (as built)'}: "
                  f"step {s['step'] * 1e3:.2f} ms (compute {s['compute'] * 1e3:.2f}, communication "
                  f"{s['comm'] * 1e3:.2f}, exposed {s['exposed'] * 1e3:.2f}, {100 * hidden:.0f}% hidden); "
                  f"{thr:,.0f} samples/s = {thr / (model[1] / one['step']):.2f}x one GPU "
                  f"({100 * thr / (GPUS * model[1] / one['step']):.0f}% scaling efficiency)")


if __name__ == "__main__":
    main()
