/* window.cuh - the window arithmetic of pooling and depthwise convolution
 * (pool.cu, depthwise.cu): the valid part of a window, and the outputs whose
 * windows cover an input index (for the gathering backward kernels), an
 * output cell's coordinates and window. */
#ifndef BF_WINDOW_CUH
#define BF_WINDOW_CUH

/* valid part [*a, *z) of the window starting at s (length k) in [0, n) */
__device__ __forceinline__ void bf_win_clip(int s, int k, int n, int *a, int *z) {
    *a = s < 0 ? 0 : s;
    *z = s + k > n ? n : s + k;
}

/* outputs [*a, *z) whose window (start o*S - P, length K) contains input index i, of O */
__device__ __forceinline__ void bf_win_covering(int i, int K, int S, int P, int O, int *a, int *z) {
    const int lo = i + P - K + 1; /* o*S >= lo */
    *a = lo <= 0 ? 0 : (lo + S - 1) / S;
    const int hi = (i + P) / S + 1; /* o*S <= i + P */
    *z = hi > O ? O : hi;
}

/* output cell i of (B, OH, OW, N): its channel q, sample b, position (oh, ow)
 * and the valid part [h0, h1) x [w0, w1) of its window in the (H, W) input */
struct bf_win_cell {
    int q, oh, ow, h0, h1, w0, w1;
    long b;
};
__device__ __forceinline__ bf_win_cell bf_win_at(long i, int N, const bf_conv_geom &g) {
    bf_win_cell c;
    c.q = (int)(i % N);
    long r = i / N;
    c.ow = (int)(r % g.OW);
    r /= g.OW;
    c.oh = (int)(r % g.OH);
    c.b = r / g.OH;
    bf_win_clip(c.oh * g.SH - g.PT, g.KH, g.H, &c.h0, &c.h1);
    bf_win_clip(c.ow * g.SW - g.PL, g.KW, g.W, &c.w0, &c.w1);
    return c;
}

#endif
