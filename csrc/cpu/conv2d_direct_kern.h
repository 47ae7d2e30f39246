/* conv2d_direct_kern.h - the direct Conv2D kernels (conv2d_direct.h), written
 * once and compiled per instruction set: the including file defines the
 * vector type V of VW floats, a lane mask type MASK, the operations below and
 * a name suffix SFX, after `#pragma GCC target` for its ISA.
 *   VZERO()          all zeros        VBC(p)       *p in every lane
 *   VLOADM(p, m)     lanes of m from p, others 0
 *   VSTOREM(p, m, v) lanes of m to p  VFMA(a, b, c) a*b + c (fused)
 *   VADD(a, b)       MASKOF(n) the first n lanes (1 <= n <= VW), MFULL all
 *   NVMAX            vectors of k per pass; RB_n / CB_n the pixel / channel
 *                    blocking for n vectors (accumulators in registers).
 * Forward: a block of R output pixels of one row times NV vectors of output
 * channels is summed in registers over (kh, kw, c); pixels whose window
 * crosses the padding go one at a time with the window clipped, which keeps
 * the same order of the terms that are there. dw: a block of CB of the
 * (kw, c) positions of one kh times NV vectors of output channels, summed
 * over rows r0 .. r1 and their pixels in order, added to dw. */
#include <stddef.h>

#define BF_CAT_(a, b) a##b
#define BF_CAT(a, b) BF_CAT_(a, b)
#define FN(n) BF_CAT(n, SFX)
#define BF_INL static inline __attribute__((always_inline))

/* ---- forward ---- */

/* out pixels y[r*K + k0 ..] for r < nr (nr <= R), window rows kh_lo..kh_hi,
 * columns kw_lo..kw_hi; x the sample, ih0 / iw0 the window's top-left cell */
#define DEF_FWD_BLK(NV, R)                                                                            \
    BF_INL void FN(fwd_blk_##NV)(float *y, const float *x, const bf_cdir *j, int ih0, int kh_lo,       \
                                 int kh_hi, int iw0, int kw_lo, int kw_hi, int k0, MASK mt, int nr) { \
        V acc[R][NV];                                                                                 \
        MASK mk[NV];                                                                                  \
        const int C = j->C, K = j->K, W = j->W, KW = j->KW;                                           \
        _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++) mk[v] = v == NV - 1 ? mt : MFULL;       \
        _Pragma("GCC unroll 16") for (int r = 0; r < R; r++)                                          \
            _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++) acc[r][v] = VZERO();                \
        for (int kh = kh_lo; kh < kh_hi; kh++) {                                                      \
            const float *xr = x + (size_t)(ih0 + kh) * W * C;                                         \
            for (int kw = kw_lo; kw < kw_hi; kw++) {                                                  \
                const float *xp = xr + (ptrdiff_t)(iw0 + kw) * C;                                     \
                const float *wp = j->w + (size_t)(kh * KW + kw) * C * K + k0;                         \
                for (int c = 0; c < C; c++, wp += K) {                                                \
                    V wv[NV];                                                                         \
                    _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++) wv[v] = VLOADM(wp + v * VW, mk[v]); \
                    _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) {                            \
                        if (r < nr) {                                                                 \
                            const V xb = VBC(xp + (size_t)r * C + c);                                 \
                            _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++)                     \
                                acc[r][v] = VFMA(xb, wv[v], acc[r][v]);                               \
                        }                                                                             \
                    }                                                                                 \
                }                                                                                     \
            }                                                                                         \
        }                                                                                             \
        _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) {                                        \
            if (r < nr) {                                                                             \
                _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++) {                               \
                    V o = acc[r][v];                                                                  \
                    if (j->b) o = VADD(o, VLOADM(j->b + k0 + v * VW, mk[v]));                         \
                    VSTOREM(y + (size_t)r * K + k0 + v * VW, mk[v], o);                               \
                }                                                                                     \
            }                                                                                         \
        }                                                                                             \
    }                                                                                                 \
    /* one output row: edge pixels one by one, interior [lo, hi) in blocks of R */                    \
    static void FN(fwd_row_##NV)(float *y, const float *x, const bf_cdir *j, int ih0, int kh_lo,      \
                                 int kh_hi, int lo, int hi, int k0, MASK mt) {                        \
        const int K = j->K, W = j->W, KW = j->KW, PL = j->PL, OW = j->OW;                             \
        int ow = 0;                                                                                   \
        for (;; ow++) {                                                                               \
            if (ow == lo) {                                                                           \
                for (; ow + R <= hi; ow += R)                                                         \
                    FN(fwd_blk_##NV)(y + (size_t)ow * K, x, j, ih0, kh_lo, kh_hi, ow - PL, 0, KW, k0, mt, R); \
                if (ow < hi) FN(fwd_blk_##NV)(y + (size_t)ow * K, x, j, ih0, kh_lo, kh_hi, ow - PL, 0, KW, k0, mt, hi - ow); \
                ow = hi;                                                                              \
            }                                                                                         \
            if (ow >= OW) break;                                                                      \
            const int iw0 = ow - PL;                                                                  \
            const int kwl = iw0 < 0 ? -iw0 : 0, kwh = W - iw0 < KW ? W - iw0 : KW;                   \
            FN(fwd_blk_##NV)(y + (size_t)ow * K, x, j, ih0, kh_lo, kh_hi, iw0, kwl, kwh, k0, mt, 1);  \
        }                                                                                             \
    }

DEF_FWD_BLK(1, RB_1)
#if NVMAX >= 2
DEF_FWD_BLK(2, RB_2)
#endif
#if NVMAX >= 3
DEF_FWD_BLK(3, RB_3)
#endif
#if NVMAX >= 4
DEF_FWD_BLK(4, RB_4)
#endif

void FN(bf_cdir_fwd_rows_)(const bf_cdir *j, long r0, long r1) {
    const int H = j->H, W = j->W, C = j->C, K = j->K, KH = j->KH, KW = j->KW, OH = j->OH, OW = j->OW;
    /* interior columns: the whole window row inside the image */
    int lo = j->PL < OW ? j->PL : OW, hi = W - KW + j->PL + 1;
    if (hi > OW) hi = OW;
    if (hi < lo) hi = lo;
    for (long r = r0; r < r1; r++) {
        const long b = r / OH;
        const int oh = (int)(r - b * OH), ih0 = oh - j->PT;
        const int kh_lo = ih0 < 0 ? -ih0 : 0, kh_hi = H - ih0 < KH ? H - ih0 : KH;
        const float *x = j->x + (size_t)b * H * W * C;
        float *y = j->y + (size_t)r * OW * K;
        for (int k0 = 0; k0 < K; k0 += NVMAX * VW) {
            const int nk = K - k0 < NVMAX * VW ? K - k0 : NVMAX * VW, nv = (nk + VW - 1) / VW;
            const MASK mt = MASKOF(nk - (nv - 1) * VW);
            switch (nv) {
#if NVMAX >= 4
            case 4: FN(fwd_row_4)(y, x, j, ih0, kh_lo, kh_hi, lo, hi, k0, mt); break;
#endif
#if NVMAX >= 3
            case 3: FN(fwd_row_3)(y, x, j, ih0, kh_lo, kh_hi, lo, hi, k0, mt); break;
#endif
#if NVMAX >= 2
            case 2: FN(fwd_row_2)(y, x, j, ih0, kh_lo, kh_hi, lo, hi, k0, mt); break;
#endif
            default: FN(fwd_row_1)(y, x, j, ih0, kh_lo, kh_hi, lo, hi, k0, mt); break;
            }
        }
    }
}

/* ---- dw ---- */

/* dw[kh, q0 + i, k0 ..] (i < ncb <= CB) += sums over rows r0 .. r1, pixels
 * owlo .. owhi, of x[b, ih, ow - PL, q0 + i] * dy[r, ow, k0 ..], with q the
 * index over (kw, c) (the layout of dw, and of a window row of x): a block
 * may span several kw for pixels whose whole window row is in the image */
#define DEF_DW_BLK(NV, CB)                                                                            \
    BF_INL void FN(dw_blk_##NV)(float *dw, const bf_cdir *j, long r0, long r1, int kh, int q0,         \
                                int owlo, int owhi, int k0, MASK mt, int ncb) {                       \
        V acc[CB][NV];                                                                                \
        MASK mk[NV];                                                                                  \
        const int H = j->H, W = j->W, C = j->C, K = j->K, OH = j->OH, OW = j->OW;                     \
        float *dp = dw + ((size_t)kh * j->KW * C + q0) * K + k0;                                      \
        _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++) mk[v] = v == NV - 1 ? mt : MFULL;       \
        _Pragma("GCC unroll 16") for (int i = 0; i < CB; i++)                                         \
            _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++)                                     \
                acc[i][v] = i >= ncb ? VZERO() : VLOADM(dp + (size_t)i * K + v * VW, mk[v]);          \
        for (long r = r0; r < r1; r++) {                                                              \
            const long b = r / OH;                                                                    \
            const int ih = (int)(r - b * OH) - j->PT + kh;                                            \
            if (ih < 0 || ih >= H) continue;                                                          \
            const float *xp = j->x + (size_t)(b * H + ih) * W * C + (ptrdiff_t)(owlo - j->PL) * C + q0; \
            const float *gp = j->y + ((size_t)r * OW + owlo) * K + k0;                                \
            for (int ow = owlo; ow < owhi; ow++, xp += C, gp += K) {                                  \
                V g[NV];                                                                              \
                _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++) g[v] = VLOADM(gp + v * VW, mk[v]); \
                _Pragma("GCC unroll 16") for (int i = 0; i < CB; i++) {                               \
                    if (i < ncb) {                                                                    \
                        const V xb = VBC(xp + i);                                                     \
                        _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++)                         \
                            acc[i][v] = VFMA(xb, g[v], acc[i][v]);                                    \
                    }                                                                                 \
                }                                                                                     \
            }                                                                                         \
        }                                                                                             \
        _Pragma("GCC unroll 16") for (int i = 0; i < CB; i++)                                         \
            if (i < ncb)                                                                              \
                _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++)                                 \
                    VSTOREM(dp + (size_t)i * K + v * VW, mk[v], acc[i][v]);                           \
    }                                                                                                 \
    /* q in [qa, qb) in blocks of CB, pixels owlo .. owhi */                                          \
    static void FN(dw_seg_##NV)(float *dw, const bf_cdir *j, long r0, long r1, int kh, int qa, int qb, \
                                int owlo, int owhi, int k0, MASK mt) {                                \
        if (owlo >= owhi) return;                                                                     \
        int q = qa;                                                                                   \
        for (; q + CB <= qb; q += CB) FN(dw_blk_##NV)(dw, j, r0, r1, kh, q, owlo, owhi, k0, mt, CB);  \
        if (q < qb) FN(dw_blk_##NV)(dw, j, r0, r1, kh, q, owlo, owhi, k0, mt, qb - q);                \
    }

DEF_DW_BLK(1, CB_1)
#if NVMAX >= 2
DEF_DW_BLK(2, CB_2)
#endif
#if NVMAX >= 3
DEF_DW_BLK(3, CB_3)
#endif
#if NVMAX >= 4
DEF_DW_BLK(4, CB_4)
#endif

static void FN(dw_seg)(int nv, float *dw, const bf_cdir *j, long r0, long r1, int kh, int qa, int qb,
                       int owlo, int owhi, int k0, MASK mt) {
    switch (nv) {
#if NVMAX >= 4
    case 4: FN(dw_seg_4)(dw, j, r0, r1, kh, qa, qb, owlo, owhi, k0, mt); break;
#endif
#if NVMAX >= 3
    case 3: FN(dw_seg_3)(dw, j, r0, r1, kh, qa, qb, owlo, owhi, k0, mt); break;
#endif
#if NVMAX >= 2
    case 2: FN(dw_seg_2)(dw, j, r0, r1, kh, qa, qb, owlo, owhi, k0, mt); break;
#endif
    default: FN(dw_seg_1)(dw, j, r0, r1, kh, qa, qb, owlo, owhi, k0, mt); break;
    }
}

/* For each kh: the interior pixels [lo, hi) (whole window row in the image)
 * over all q = (kw, c) at once, then per kw the edge pixels where kw is in
 * the image, left of lo and right of hi. The order depends on the geometry
 * only. */
void FN(bf_cdir_dw_rows_)(float *dw, const bf_cdir *j, long r0, long r1) {
    const int K = j->K, C = j->C, W = j->W, KW = j->KW, PL = j->PL, OW = j->OW;
    int lo = PL < OW ? PL : OW, hi = W - KW + PL + 1;
    if (hi > OW) hi = OW;
    if (hi < lo) hi = lo;
    for (int kh = 0; kh < j->KH; kh++)
        for (int k0 = 0; k0 < K; k0 += NVMAX * VW) {
            const int nk = K - k0 < NVMAX * VW ? K - k0 : NVMAX * VW, nv = (nk + VW - 1) / VW;
            const MASK mt = MASKOF(nk - (nv - 1) * VW);
            FN(dw_seg)(nv, dw, j, r0, r1, kh, 0, KW * C, lo, hi, k0, mt);
            for (int kw = 0; kw < KW; kw++) {
                const int vlo = PL - kw > 0 ? PL - kw : 0, vhi = W + PL - kw < OW ? W + PL - kw : OW;
                FN(dw_seg)(nv, dw, j, r0, r1, kh, kw * C, kw * C + C, vlo, lo < vhi ? lo : vhi, k0, mt);
                FN(dw_seg)(nv, dw, j, r0, r1, kh, kw * C, kw * C + C, hi > vlo ? hi : vlo, vhi, k0, mt);
            }
        }
}
