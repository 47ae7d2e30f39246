/* test_cuda_ops.c - every op of the CUDA backend's vtable against the CPU
 * kernels of csrc/cpu on the same inputs (a GPU is needed; without one it
 * prints SKIP with the reason and exits 0). Checks: Dense, activations,
 * losses (every kind, fused / from_logits / probabilities with clipping, the
 * SCCE bad-label error), accuracy (ties, NaN), sum / nonfinite / maxabs,
 * optimizers over several steps, Conv2D (valid, symmetric and asymmetric
 * 'same', strides, 1x1; backward accumulating into dw / db), pooling (incl.
 * global average), batchnorm (train / inference, forward / backward),
 * dropout (mask bit for bit), the BF_ERR_BUDGET of an impossible reservation,
 * and last, that a kernel fault poisons the backend.
 * Usage: test_cuda_ops path/to/_cuda.so   Exit status: number of failures. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_conv.h"
#include "cpu_ops.h"
#include "status.h"
#include "../../csrc/cuda/cuda_api.h"

static bf_backend *G;
static int failures, checks;
static char *dev_base;
static size_t dev_used, dev_cap;

/* ---- helpers ---- */

static unsigned long long rng_state = 0x1234567ull;
static float frand(float lo, float hi) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (float)((rng_state >> 40) * (1.0 / 16777216.0));
}
static float *hrand(size_t n, float lo, float hi) {
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = frand(lo, hi);
    return p;
}
static float *hzero(size_t n) { return calloc(n ? n : 1, sizeof(float)); }

static void expect(int ok, const char *what) {
    checks++;
    if (!ok) {
        failures++;
        printf("FAIL %s\n", what);
    }
}
static int ok_status(bf_status s, const char *what) {
    if (s != BF_OK) {
        printf("FAIL %s: %s: %s\n", what, bf_status_name(s), bf_last_error()->msg);
        failures++;
        checks++;
        return 0;
    }
    return 1;
}

static void *dalloc(size_t bytes) {
    bytes = (bytes + 255) / 256 * 256;
    if (dev_used + bytes > dev_cap) {
        printf("FAIL test arena exhausted\n");
        exit(1);
    }
    void *p = dev_base + dev_used;
    dev_used += bytes;
    return p;
}
static float *up(const float *h, size_t n) {
    float *d = dalloc(n * sizeof(float) + 4);
    if (n) ok_status(G->to_device(G, d, h, n * sizeof(float)), "to_device");
    return d;
}
static float *down(const float *d, size_t n) {
    float *h = malloc((n ? n : 1) * sizeof(float));
    if (n) ok_status(G->to_host(G, h, d, n * sizeof(float)), "to_host");
    return h;
}

/* got vs want: |got - want| <= atol + rtol * |want|, NaN matching NaN */
static void close_to(const char *what, const float *got, const float *want, size_t n, float rtol,
                     float atol) {
    double worst = 0;
    size_t at = 0;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        const float a = got[i], b = want[i];
        if (isnan(a) || isnan(b)) {
            if (isnan(a) != isnan(b)) { bad = 1; at = i; worst = INFINITY; }
            continue;
        }
        if (isinf(a) || isinf(b)) {
            if (a != b) { bad = 1; at = i; worst = INFINITY; }
            continue;
        }
        const double e = fabs((double)a - b) - (atol + rtol * fabs((double)b));
        if (e > worst) { worst = e; at = i; }
        if (e > 0) bad = 1;
    }
    checks++;
    if (bad) {
        failures++;
        printf("FAIL %s: element %zu got %.9g want %.9g\n", what, at, (double)got[at], (double)want[at]);
    } else {
        printf("ok   %s (%zu values)\n", what, n);
    }
}
/* download d (n) and compare with want */
static void dclose(const char *what, const float *d, const float *want, size_t n, float rtol, float atol) {
    float *h = down(d, n);
    close_to(what, h, want, n, rtol, atol);
    free(h);
}

/* ---- dense, activations ---- */

static void test_dense(void) {
    const int B = 37, IN = 53, OUT = 29;
    float *x = hrand((size_t)B * IN, -1, 1), *w = hrand((size_t)IN * OUT, -1, 1), *b = hrand(OUT, -1, 1);
    float *dout = hrand((size_t)B * OUT, -1, 1);
    float *out = hzero((size_t)B * OUT), *dx = hzero((size_t)B * IN);
    float *dw = hrand((size_t)IN * OUT, -1, 1), *db = hrand(OUT, -1, 1);
    float *dx_g = up(dx, (size_t)B * IN), *dw_g = up(dw, (size_t)IN * OUT), *db_g = up(db, OUT);
    float *x_g = up(x, (size_t)B * IN), *w_g = up(w, (size_t)IN * OUT), *b_g = up(b, OUT);
    float *out_g = up(out, (size_t)B * OUT), *dout_g = up(dout, (size_t)B * OUT);
    bf_cpu_dense_forward(NULL, out, x, w, b, B, IN, OUT);
    if (ok_status(G->dense_forward(G, out_g, x_g, w_g, b_g, B, IN, OUT), "dense_forward"))
        dclose("dense_forward", out_g, out, (size_t)B * OUT, 1e-5f, 1e-5f);
    bf_cpu_dense_backward(NULL, dx, dw, db, dout, x, w, B, IN, OUT);
    if (ok_status(G->dense_backward(G, dx_g, dw_g, db_g, dout_g, x_g, w_g, B, IN, OUT), "dense_backward")) {
        dclose("dense_backward dinp", dx_g, dx, (size_t)B * IN, 1e-5f, 1e-5f);
        dclose("dense_backward dw (accumulated)", dw_g, dw, (size_t)IN * OUT, 1e-5f, 1e-5f);
        dclose("dense_backward db (accumulated)", db_g, db, OUT, 1e-5f, 1e-5f);
    }
    expect(G->dense_forward(G, out_g, x_g, w_g, NULL, 0, IN, OUT) == BF_ERR_SHAPE, "dense B=0 is a shape error");
}

static void test_activations(void) {
    const char *names[] = {"linear", "relu", "sigmoid", "tanh", "softmax"};
    const int shapes[][2] = {{41, 7}, {5, 1000}};
    char what[96];
    for (int s = 0; s < 2; s++)
        for (int a = 0; a <= BF_ACT_SOFTMAX; a++) {
            const long N = shapes[s][0];
            const int C = shapes[s][1];
            const size_t n = (size_t)N * C;
            float *x = hrand(n, -30, 30), *dy = hrand(n, -1, 1), *y = hzero(n), *dx = hzero(n);
            float *x_g = up(x, n), *y_g = up(y, n), *dy_g = up(dy, n);
            bf_cpu_act_forward(NULL, y, x, (bf_act)a, N, C);
            snprintf(what, sizeof what, "act_forward %s (%ld,%d)", names[a], N, C);
            if (ok_status(G->act_forward(G, y_g, x_g, (bf_act)a, N, C), what)) dclose(what, y_g, y, n, 2e-6f, 1e-7f);
            /* backward from the same forward output, in place on dout */
            float *y_up = up(y, n);
            bf_cpu_act_backward(NULL, dx, dy, y, (bf_act)a, N, C);
            snprintf(what, sizeof what, "act_backward %s (%ld,%d), in place", names[a], N, C);
            if (ok_status(G->act_backward(G, dy_g, dy_g, y_up, (bf_act)a, N, C), what))
                dclose(what, dy_g, dx, n, 2e-6f, 1e-7f);
            free(x), free(dy), free(y), free(dx);
        }
}

/* ---- losses, accuracy, reductions ---- */

static void test_losses(void) {
    const char *kinds[] = {"mse", "bce", "cce", "scce"};
    char what[128];
    const int B = 53, C = 37;
    for (int k = 0; k <= BF_LOSS_SCCE; k++)
        for (int mode = 0; mode < 3; mode++) { /* 0 probabilities, 1 fused, 2 from_logits */
            if (k == BF_LOSS_MSE && mode) continue;
            const int fused = mode == 1, from_logits = mode == 2;
            const size_t n = (size_t)B * C;
            float *p = mode ? hrand(n, -8, 8) : hrand(n, 0.0f, 1.0f);
            if (!mode && k != BF_LOSS_MSE) { /* clipping at both ends */
                p[3] = 0.0f;
                p[C + 5] = 1.0f;
                p[2 * C + 1] = 1e-9f;
            }
            float *t;
            size_t tn = k == BF_LOSS_SCCE ? (size_t)B : n;
            if (k == BF_LOSS_SCCE) {
                t = malloc(B * sizeof *t);
                for (int i = 0; i < B; i++) t[i] = (float)(i * 7 % C);
            } else if (k == BF_LOSS_CCE) {
                t = hzero(n);
                for (int i = 0; i < B; i++) t[(size_t)i * C + i % C] = 1.0f;
                t[C + 2] = 0.5f; /* a soft label row */
            } else if (k == BF_LOSS_BCE) {
                t = hrand(n, 0, 1);
                for (size_t i = 0; i < n; i++) t[i] = t[i] > 0.5f ? 1.0f : 0.0f;
            } else {
                t = hrand(n, -2, 2);
            }
            float *l = hzero(B), *d = hzero(n);
            float *p_g = up(p, n), *t_g = up(t, tn), *l_g = up(l, B), *d_g = up(d, n);
            const float scale = 1.0f / 64;
            bf_status cs = bf_cpu_loss_forward_backward(NULL, l, d, NULL, p, t, (bf_loss_kind)k, fused, from_logits,
                                                        B, C, scale);
            snprintf(what, sizeof what, "loss %s %s", kinds[k], mode == 0 ? "probabilities" : mode == 1 ? "fused" : "from_logits");
            if (cs == BF_OK &&
                ok_status(G->loss_forward_backward(G, l_g, d_g, NULL, p_g, t_g, (bf_loss_kind)k, fused, from_logits,
                                                   B, C, scale), what)) {
                dclose(what, l_g, l, B, 2e-5f, 1e-6f);
                strcat(what, " gradient");
                dclose(what, d_g, d, n, 2e-5f, 1e-7f);
            }
            /* accuracy, with a tie and a NaN first value */
            float *acc = hzero(B), *acc_g = up(acc, B);
            p[0] = p[1];
            p[2 * C] = NAN;
            float *p2_g = up(p, n);
            bf_cpu_accuracy(NULL, acc, p, t, (bf_loss_kind)k, fused || from_logits, B, C);
            snprintf(what, sizeof what, "accuracy %s %s", kinds[k], mode == 0 ? "probabilities" : "logits");
            if (ok_status(G->accuracy(G, acc_g, p2_g, t_g, (bf_loss_kind)k, fused || from_logits, B, C), what))
                dclose(what, acc_g, acc, B, 0, 0);
            free(p), free(t), free(l), free(d), free(acc);
        }
    /* SCCE labels that are not class ids: the CPU's error, the first bad row */
    const int Bb = 9, Cb = 4;
    float *p = hrand((size_t)Bb * Cb, -1, 1), t[9] = {0, 1, 2, 3, 1, 4, 2, -1, 0.5f};
    float *p_g = up(p, (size_t)Bb * Cb), *t_g = up(t, Bb), *l_g = dalloc(Bb * 4), *d_g = dalloc(Bb * Cb * 4);
    float l[9], d[36];
    bf_cpu_loss_forward_backward(NULL, l, d, NULL, p, t, BF_LOSS_SCCE, 1, 0, Bb, Cb, 1.0f);
    char cpu_msg[BF_MSG_LEN];
    snprintf(cpu_msg, sizeof cpu_msg, "%s", bf_last_error()->msg);
    bf_status s = G->loss_forward_backward(G, l_g, d_g, NULL, p_g, t_g, BF_LOSS_SCCE, 1, 0, Bb, Cb, 1.0f);
    printf("     SCCE bad label: %s\n", bf_last_error()->msg);
    expect(s == BF_ERR_DATA && !strcmp(cpu_msg, bf_last_error()->msg), "SCCE bad label: BF_ERR_DATA, same message as the CPU");
    /* with a flag: no wait, the lowest bad row (5) as B - row, loss and gradient 0 there, as the CPU */
    int flag_c = 0, flag_g = -1, *flag_d = dalloc(sizeof(int));
    G->fill_zero(G, flag_d, sizeof(int));
    expect(bf_cpu_loss_forward_backward(NULL, l, d, &flag_c, p, t, BF_LOSS_SCCE, 1, 0, Bb, Cb, 1.0f) == BF_OK &&
           flag_c == Bb - 5, "CPU SCCE bad label flag");
    if (ok_status(G->loss_forward_backward(G, l_g, d_g, flag_d, p_g, t_g, BF_LOSS_SCCE, 1, 0, Bb, Cb, 1.0f),
                  "SCCE with a bad-label flag")) {
        G->to_host(G, &flag_g, flag_d, sizeof flag_g);
        expect(flag_g == flag_c, "SCCE bad label flag: the CPU's");
        dclose("SCCE loss with bad labels", l_g, l, Bb, 2e-5f, 1e-6f);
        dclose("SCCE gradient with bad labels", d_g, d, (size_t)Bb * Cb, 2e-5f, 1e-7f);
    }
    free(p);
}

/* reductions write into device memory (dsum / dflag / dmax) without waiting */
static double dev_sum(const float *x_g, long n) {
    static double *d;
    double h = -1;
    if (!d) d = dalloc(sizeof *d);
    if (ok_status(G->sum(G, d, x_g, n), "sum")) G->to_host(G, &h, d, sizeof h);
    return h;
}
static int dev_nonfinite(const float *x_g, long n) {
    static int *d;
    int h = -1;
    if (!d) d = dalloc(sizeof *d);
    G->fill_zero(G, d, sizeof *d);
    if (ok_status(G->nonfinite(G, d, x_g, n), "nonfinite")) G->to_host(G, &h, d, sizeof h);
    return h;
}
static float dev_maxabs(const float *x_g, long n) {
    static float *d;
    float h = -1;
    if (!d) d = dalloc(sizeof *d);
    G->fill_zero(G, d, sizeof *d);
    if (ok_status(G->maxabs(G, d, x_g, n), "maxabs")) G->to_host(G, &h, d, sizeof h);
    return h;
}

static void test_reductions(void) {
    const long n = 1000003;
    float *x = hrand(n, -1, 1);
    float *x_g = up(x, n);
    double s_cpu;
    bf_cpu_sum(NULL, &s_cpu, x, n);
    double s_gpu = dev_sum(x_g, n);
    printf("     sum cpu %.12g gpu %.12g\n", s_cpu, s_gpu);
    expect(fabs(s_cpu - s_gpu) <= 1e-9 * n, "sum matches in double");
    expect(dev_sum(x_g, n) == s_gpu, "sum is deterministic");
    float mc = 0;
    expect(dev_nonfinite(x_g, n) == 0, "nonfinite: finite data");
    bf_cpu_maxabs(NULL, &mc, x, n);
    expect(dev_maxabs(x_g, n) == mc, "maxabs equals the CPU's");
    const float inf = INFINITY, nan = NAN;
    G->to_device(G, x_g + 777777, &nan, 4);
    expect(dev_nonfinite(x_g, n) == 1, "nonfinite finds a NaN");
    expect(!isfinite(dev_maxabs(x_g, n)), "maxabs is not finite with a NaN");
    G->to_device(G, x_g + 777777, &inf, 4);
    expect(dev_nonfinite(x_g, n) == 1, "nonfinite finds an Inf");
    expect(isinf(dev_maxabs(x_g, n)), "maxabs is Inf with an Inf");
    expect(dev_sum(x_g, 0) == 0, "sum of nothing");
    free(x);
}

/* ---- optimizers ---- */

static void test_optimizers(void) {
    const long n = 4099;
    char what[96];
    for (int o = 0; o < 6; o++) {
        float *w = hrand(n, -1, 1), *s1 = hzero(n), *s2 = hzero(n);
        float *w_g = up(w, n), *s1_g = up(s1, n), *s2_g = up(s2, n);
        for (int step = 1; step <= 5; step++) {
            float *g = hrand(n, -1, 1), *g_g = up(g, n);
            bf_status s = BF_OK;
            switch (o) {
            case 0: bf_cpu_sgd_update(NULL, w, s1, g, n, 0.1f, 0.0f, 0); s = G->sgd_update(G, w_g, s1_g, g_g, n, 0.1f, 0.0f, 0); snprintf(what, sizeof what, "sgd"); break;
            case 1: bf_cpu_sgd_update(NULL, w, s1, g, n, 0.1f, 0.9f, 0); s = G->sgd_update(G, w_g, s1_g, g_g, n, 0.1f, 0.9f, 0); snprintf(what, sizeof what, "sgd momentum"); break;
            case 2: bf_cpu_sgd_update(NULL, w, s1, g, n, 0.1f, 0.9f, 1); s = G->sgd_update(G, w_g, s1_g, g_g, n, 0.1f, 0.9f, 1); snprintf(what, sizeof what, "sgd nesterov"); break;
            case 3: bf_cpu_adam_update(NULL, w, s1, s2, g, n, 1e-3f, 0.9f, 0.999f, 1e-7f, step); s = G->adam_update(G, w_g, s1_g, s2_g, g_g, n, 1e-3f, 0.9f, 0.999f, 1e-7f, step); snprintf(what, sizeof what, "adam"); break;
            case 4: bf_cpu_rmsprop_update(NULL, w, s1, NULL, g, n, 1e-3f, 0.9f, 0.0f, 1e-7f); s = G->rmsprop_update(G, w_g, s1_g, NULL, g_g, n, 1e-3f, 0.9f, 0.0f, 1e-7f); snprintf(what, sizeof what, "rmsprop"); break;
            default: bf_cpu_rmsprop_update(NULL, w, s1, s2, g, n, 1e-3f, 0.9f, 0.5f, 1e-7f); s = G->rmsprop_update(G, w_g, s1_g, s2_g, g_g, n, 1e-3f, 0.9f, 0.5f, 1e-7f); snprintf(what, sizeof what, "rmsprop momentum"); break;
            }
            ok_status(s, what);
            free(g);
        }
        strcat(what, ": weights after 5 steps");
        dclose(what, w_g, w, n, 1e-5f, 1e-6f);
        free(w), free(s1), free(s2);
    }
}

/* ---- conv, pooling ---- */

/* Keras output size and padding */
static bf_conv_geom geom(int B, int H, int W, int C, int K, int KH, int KW, int SH, int SW, int same) {
    bf_conv_geom g = {0};
    g.B = B, g.H = H, g.W = W, g.C = C, g.K = K, g.KH = KH, g.KW = KW, g.SH = SH, g.SW = SW;
    if (same) {
        g.OH = (H + SH - 1) / SH;
        g.OW = (W + SW - 1) / SW;
        int th = (g.OH - 1) * SH + KH - H, tw = (g.OW - 1) * SW + KW - W;
        g.PT = th > 0 ? th / 2 : 0;
        g.PL = tw > 0 ? tw / 2 : 0;
    } else {
        g.OH = (H - KH) / SH + 1;
        g.OW = (W - KW) / SW + 1;
    }
    return g;
}

static void test_conv(void) {
    const bf_conv_geom gs[] = {
        geom(3, 9, 9, 3, 4, 3, 3, 1, 1, 1),   /* same, symmetric */
        geom(3, 5, 5, 4, 6, 2, 2, 2, 2, 1),   /* same, asymmetric: padded into the workspace */
        geom(2, 10, 8, 3, 5, 3, 3, 2, 2, 1),  /* same, stride 2, even size: asymmetric */
        geom(4, 11, 10, 2, 5, 3, 3, 2, 2, 0), /* valid, stride 2 */
        geom(2, 7, 7, 8, 3, 1, 1, 1, 1, 0),   /* 1x1 */
        geom(2, 12, 9, 3, 7, 5, 4, 3, 2, 0),  /* valid, uneven window and strides */
        geom(1, 6, 6, 3, 2, 6, 6, 1, 1, 0),   /* window = image */
    };
    char what[160];
    for (size_t t = 0; t < sizeof gs / sizeof gs[0]; t++) {
        const bf_conv_geom *g = &gs[t];
        snprintf(what, sizeof what, "conv2d B%d %dx%dx%d -> %dx%dx%d k%dx%d s%dx%d pad %d,%d", g->B, g->H, g->W, g->C,
                 g->OH, g->OW, g->K, g->KH, g->KW, g->SH, g->SW, g->PT, g->PL);
        const size_t nx = (size_t)g->B * g->H * g->W * g->C, ny = (size_t)g->B * g->OH * g->OW * g->K;
        const size_t nw = (size_t)g->KH * g->KW * g->C * g->K;
        float *x = hrand(nx, -1, 1), *w = hrand(nw, -1, 1), *b = hrand(g->K, -1, 1), *y = hzero(ny);
        float *dy = hrand(ny, -1, 1), *dx = hzero(nx), *dw = hrand(nw, -1, 1), *db = hrand(g->K, -1, 1);
        float *x_g = up(x, nx), *w_g = up(w, nw), *b_g = up(b, g->K), *y_g = up(y, ny), *dy_g = up(dy, ny);
        float *dx_g = up(dx, nx), *dw_g = up(dw, nw), *db_g = up(db, g->K);
        size_t fws = G->conv2d_workspace_bytes(G, g, 0), bws = G->conv2d_workspace_bytes(G, g, 1);
        printf("     %s: workspace forward %zu, backward %zu bytes\n", what, fws, bws);
        void *fws_g = dalloc(fws), *bws_g = dalloc(bws);
        void *cws = malloc(bf_cpu_conv2d_workspace_bytes(g, 1) + bf_cpu_conv2d_workspace_bytes(g, 0) + 64);
        ok_status(bf_cpu_conv2d_forward(NULL, y, cws, x, w, b, g), "cpu conv2d_forward");
        if (ok_status(G->conv2d_forward(G, y_g, fws_g, x_g, w_g, b_g, g), what)) dclose(what, y_g, y, ny, 1e-4f, 1e-5f);
        ok_status(bf_cpu_conv2d_backward(NULL, dx, dw, db, cws, dy, x, w, g), "cpu conv2d_backward");
        if (ok_status(G->conv2d_backward(G, dx_g, dw_g, db_g, bws_g, dy_g, x_g, w_g, g), what)) {
            char w2[200];
            snprintf(w2, sizeof w2, "%s dinp", what);
            dclose(w2, dx_g, dx, nx, 1e-4f, 1e-5f);
            snprintf(w2, sizeof w2, "%s dw (accumulated)", what);
            dclose(w2, dw_g, dw, nw, 1e-4f, 1e-5f);
            snprintf(w2, sizeof w2, "%s db (accumulated)", what);
            dclose(w2, db_g, db, g->K, 1e-4f, 1e-5f);
        }
        /* a smaller last batch runs in the workspace planned for the full one */
        bf_conv_geom h = *g;
        h.B = 1;
        expect(G->conv2d_workspace_bytes(G, &h, 1) <= bws && G->conv2d_workspace_bytes(G, &h, 0) <= fws,
               "conv2d workspace of a smaller batch fits the planned one");
        expect(G->conv2d_backward(G, NULL, dw_g, NULL, bws_g, dy_g, x_g, w_g, &h) == BF_OK && G->sync(G) == BF_OK,
               "conv2d backward of a smaller batch, dinp and db NULL");
        free(x), free(w), free(b), free(y), free(dy), free(dx), free(dw), free(db), free(cws);
    }
}

static void test_pool(void) {
    const bf_conv_geom gs[] = {
        geom(3, 9, 9, 4, 4, 2, 2, 2, 2, 1),   /* 9x9 -> 5x5, uneven 'same' window */
        geom(2, 5, 5, 6, 6, 2, 2, 1, 1, 1),   /* stride 1 'same': overlapping windows */
        geom(2, 8, 7, 3, 3, 3, 3, 2, 2, 0),   /* valid, overlapping */
        geom(2, 7, 6, 5, 5, 3, 3, 1, 1, 1),   /* same, 3x3 stride 1 */
        geom(3, 6, 5, 7, 7, 6, 5, 1, 1, 0),   /* global average */
    };
    char what[160];
    for (size_t t = 0; t < sizeof gs / sizeof gs[0]; t++) {
        const bf_conv_geom *g = &gs[t];
        const size_t nx = (size_t)g->B * g->H * g->W * g->C, ny = (size_t)g->B * g->OH * g->OW * g->C;
        float *x = hrand(nx, -1, 1), *y = hzero(ny), *dy = hrand(ny, -1, 1), *dx = hzero(nx);
        for (size_t i = 0; i < nx; i += 5) x[i] = 0.25f; /* ties: the first max takes the gradient */
        float *x_g = up(x, nx), *y_g = up(y, ny), *dy_g = up(dy, ny), *dx_g = up(dx, nx);
        for (int avg = 0; avg < 2; avg++) {
            snprintf(what, sizeof what, "%s B%d %dx%dx%d -> %dx%d k%dx%d s%dx%d pad %d,%d", avg ? "avgpool" : "maxpool",
                     g->B, g->H, g->W, g->C, g->OH, g->OW, g->KH, g->KW, g->SH, g->SW, g->PT, g->PL);
            bf_status s;
            if (avg) {
                bf_cpu_avgpool_forward(NULL, y, x, g);
                s = G->avgpool_forward(G, y_g, x_g, g);
            } else {
                bf_cpu_maxpool_forward(NULL, y, x, g);
                s = G->maxpool_forward(G, y_g, x_g, g);
            }
            if (ok_status(s, what)) dclose(what, y_g, y, ny, 1e-6f, 1e-7f);
            float *y_up = up(y, ny);
            if (avg) {
                bf_cpu_avgpool_backward(NULL, dx, dy, g);
                s = G->avgpool_backward(G, dx_g, dy_g, g);
            } else {
                bf_cpu_maxpool_backward(NULL, dx, dy, y, x, g);
                s = G->maxpool_backward(G, dx_g, dy_g, y_up, x_g, g);
            }
            strcat(what, " backward");
            if (ok_status(s, what)) dclose(what, dx_g, dx, nx, 1e-6f, 1e-7f);
        }
        free(x), free(y), free(dy), free(dx);
    }
}

/* ---- batchnorm, dropout ---- */

static void test_batchnorm(void) {
    const long Ns[] = {7, 3000, 70001};
    const int Cs[] = {5, 64, 3};
    char what[128];
    for (int t = 0; t < 3; t++) {
        const long N = Ns[t];
        const int C = Cs[t];
        const size_t n = (size_t)N * C;
        float *x = hrand(n, 2, 4), *gm = hrand(C, 0.5f, 1.5f), *bt = hrand(C, -1, 1);
        float *mm = hrand(C, -1, 1), *mv = hrand(C, 0.5f, 2), *y = hzero(n), *st = hzero(2 * (size_t)C);
        float *x_g = up(x, n), *gm_g = up(gm, C), *bt_g = up(bt, C), *mm_g = up(mm, C), *mv_g = up(mv, C);
        float *y_g = up(y, n), *st_g = up(st, 2 * (size_t)C);
        for (int training = 1; training >= 0; training--) {
            snprintf(what, sizeof what, "batchnorm_forward N=%ld C=%d %s", N, C, training ? "training" : "inference");
            bf_cpu_batchnorm_forward(NULL, y, st, st + C, mm, mv, x, gm, bt, N, C, 0.99f, 1e-3f, training);
            if (ok_status(G->batchnorm_forward(G, y_g, st_g, st_g + C, mm_g, mv_g, x_g, gm_g, bt_g, N, C, 0.99f, 1e-3f,
                                               training), what)) {
                dclose(what, y_g, y, n, 1e-5f, 1e-5f);
                char w2[160];
                snprintf(w2, sizeof w2, "%s mean/invstd", what);
                dclose(w2, st_g, st, 2 * (size_t)C, 1e-5f, 1e-6f);
                snprintf(w2, sizeof w2, "%s moving mean", what);
                dclose(w2, mm_g, mm, C, 1e-5f, 1e-6f);
                snprintf(w2, sizeof w2, "%s moving var", what);
                dclose(w2, mv_g, mv, C, 1e-5f, 1e-6f);
            }
        }
        /* backward from training statistics, in place on dout, gamma NULL once */
        bf_cpu_batchnorm_forward(NULL, y, st, st + C, mm, mv, x, gm, bt, N, C, 0.99f, 1e-3f, 1);
        float *st2_g = up(st, 2 * (size_t)C);
        for (int use_gamma = 1; use_gamma >= 0; use_gamma--) {
            float *dy = hrand(n, -1, 1), *dx = hzero(n), *dg = hrand(C, -1, 1), *dbt = hrand(C, -1, 1);
            float *dy_g = up(dy, n), *dg_g = up(dg, C), *dbt_g = up(dbt, C);
            bf_cpu_batchnorm_backward(NULL, dx, dg, dbt, dy, x, st, st + C, use_gamma ? gm : NULL, N, C);
            snprintf(what, sizeof what, "batchnorm_backward N=%ld C=%d%s, in place", N, C, use_gamma ? "" : " gamma NULL");
            if (ok_status(G->batchnorm_backward(G, dy_g, dg_g, dbt_g, dy_g, x_g, st2_g, st2_g + C,
                                                use_gamma ? gm_g : NULL, N, C), what)) {
                dclose(what, dy_g, dx, n, 1e-4f, 1e-5f);
                char w2[160];
                snprintf(w2, sizeof w2, "%s dgamma", what);
                dclose(w2, dg_g, dg, C, 1e-4f, 1e-4f);
                snprintf(w2, sizeof w2, "%s dbeta", what);
                dclose(w2, dbt_g, dbt, C, 1e-4f, 1e-4f);
            }
            free(dy), free(dx), free(dg), free(dbt);
        }
        free(x), free(gm), free(bt), free(mm), free(mv), free(y), free(st);
    }
}

static void test_dropout(void) {
    const long n = 100003;
    const float rates[] = {0.0f, 0.3f, 0.5f, 0.9f};
    char what[96];
    for (int r = 0; r < 4; r++) {
        float *x = hrand(n, -1, 1), *y = hzero(n), *m = hzero(n), *dy = hrand(n, -1, 1), *dx = hzero(n);
        x[17] = INFINITY;
        float *x_g = up(x, n), *y_g = up(y, n), *m_g = up(m, n), *dy_g = up(dy, n), *dx_g = up(dx, n);
        const uint64_t seed = 0xfeedbeefULL + (uint64_t)r;
        bf_cpu_dropout_forward(NULL, y, m, x, n, rates[r], seed);
        snprintf(what, sizeof what, "dropout_forward rate %.1f", (double)rates[r]);
        if (ok_status(G->dropout_forward(G, y_g, m_g, x_g, n, rates[r], seed), what)) {
            float *hy = down(y_g, n), *hm = down(m_g, n);
            expect(!memcmp(hm, m, n * sizeof(float)), "dropout mask bit for bit");
            expect(!memcmp(hy, y, n * sizeof(float)), "dropout output bit for bit");
            printf("ok   %s: mask and output bit for bit\n", what);
            free(hy), free(hm);
        }
        bf_cpu_dropout_backward(NULL, dx, dy, m, n, rates[r]);
        snprintf(what, sizeof what, "dropout_backward rate %.1f", (double)rates[r]);
        if (ok_status(G->dropout_backward(G, dx_g, dy_g, m_g, n, rates[r]), what)) dclose(what, dx_g, dx, n, 0, 0);
        free(x), free(y), free(m), free(dy), free(dx);
    }
    expect(G->dropout_forward(G, NULL, NULL, NULL, 10, 1.0f, 1) == BF_ERR_ARG, "dropout rate 1 is an argument error");
}

/* ---- double-buffered uploads: slot k's next upload waits for its readers ---- */

static void test_uploads(void) {
    enum { N = 1 << 20 };
    float *h = malloc(2 * N * sizeof(float));
    for (long i = 0; i < 2L * N; i++) h[i] = (float)(i % 1000);
    float *d[2] = {dalloc(N * sizeof(float)), dalloc(N * sizeof(float))};
    G->host_pin(G, h, 2 * N * sizeof(float));
    double want = 0, got[2] = {0, 0};
    for (long i = 0; i < N; i++) want += h[i];
    for (int round = 0; round < 3; round++)
        for (int k = 0; k < 2; k++) {
            ok_status(G->upload(G, k, d[k], h + (long)k * N, N * sizeof(float)), "upload");
            got[k] = dev_sum(d[k], N);
            ok_status(G->batch_consumed(G, k), "batch_consumed");
            ok_status(G->batch_wait(G, k), "batch_wait");
        }
    double want1 = 0;
    for (long i = N; i < 2L * N; i++) want1 += h[i];
    expect(got[0] == want && got[1] == want1, "uploaded slots hold their host slots");
    expect(G->upload(G, 2, d[0], h, 4) == BF_ERR_INTERNAL, "upload into slot 2 is refused");
    G->host_unpin(G, h);
    free(h);
}

/* ---- memory errors, poisoning ---- */

static void test_budget(void) {
    void *p = NULL;
    bf_status s = G->reserve(G, &p, (size_t)1 << 44);
    printf("     reserve(16 TiB): %s: %s\n", bf_status_name(s), bf_last_error()->msg);
    expect(s == BF_ERR_BUDGET && p == NULL && strstr(bf_last_error()->msg, G->name), "impossible reservation is BF_ERR_BUDGET naming the device");
    expect(G->sync(G) == BF_OK, "backend usable after an out-of-memory reservation");
}

static void test_poison(void) {
    /* a kernel writing to an unmapped address: a sticky error */
    float *bogus = (float *)(uintptr_t)0x10;
    bf_status s = G->act_forward(G, bogus, bogus, BF_ACT_RELU, 1 << 20, 1);
    if (s == BF_OK) s = G->sync(G);
    printf("     after a faulting kernel: %s: %s\n", bf_status_name(s), bf_last_error()->msg);
    expect(s == BF_ERR_DEVICE, "a faulting kernel surfaces as BF_ERR_DEVICE");
    s = G->fill_zero(G, dev_base, 256);
    printf("     next op: %s: %s\n", bf_status_name(s), bf_last_error()->msg);
    expect(s == BF_ERR_DEVICE && strstr(bf_last_error()->msg, "poisoned"), "later ops fail fast: poisoned");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s path/to/_cuda.so\n", argv[0]);
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("FAIL dlopen: %s\n", dlerror());
        return 1;
    }
    int (*check)(int, char *, size_t) = (int (*)(int, char *, size_t))dlsym(h, "bf_cuda_check");
    bf_status (*open)(const bf_cuda_host *, int, bf_backend **) =
        (bf_status(*)(const bf_cuda_host *, int, bf_backend **))dlsym(h, "bf_cuda_open");
    void (*close)(bf_backend *) = (void (*)(bf_backend *))dlsym(h, "bf_cuda_close");
    char msg[1024];
    if (check(0, msg, sizeof msg)) {
        printf("SKIP no usable GPU: %s\n", msg);
        return 0;
    }
    const bf_cuda_host host = {bf_vfail};
    if (open(&host, 0, &G) != BF_OK) {
        printf("FAIL bf_cuda_open: %s\n", bf_last_error()->msg);
        return 1;
    }
    dev_cap = (size_t)1 << 30;
    if (!ok_status(G->reserve(G, (void **)&dev_base, dev_cap), "reserve 1 GiB")) return 1;
    {
        expect(G->sum(G, (double *)dev_base, (const float *)dev_base, 4) == BF_ERR_INTERNAL,
               "a reduction without a bound run workspace is an error, not a crash");
        size_t wsb = G->run_workspace_bytes(G);
        if (!ok_status(G->bind_workspace(G, dalloc(wsb), wsb), "bind the run workspace")) return 1;
    }
    test_uploads();
    test_dense();
    test_activations();
    test_losses();
    test_reductions();
    test_optimizers();
    test_conv();
    test_pool();
    test_batchnorm();
    test_dropout();
    test_budget();
    test_poison(); /* last: the backend is unusable afterwards */
    G->release(G, dev_base);
    close(G);
    printf("%d of %d checks failed\n", failures, checks);
    return failures;
}
