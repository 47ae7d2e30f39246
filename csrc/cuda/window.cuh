/* window.cuh - the window arithmetic of pooling and depthwise convolution
 * (pool.cu, depthwise.cu): the valid part of a window, and the outputs whose
 * windows cover an input index (for the gathering backward kernels). */
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

#endif
