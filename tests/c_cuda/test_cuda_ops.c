/* test_cuda_ops.c - every op of the CUDA backend's vtable against the CPU
 * kernels of csrc/cpu on the same inputs (a GPU is needed; without one it
 * prints SKIP with the reason and exits 0). Checks: Dense, activations,
 * losses (every kind, fused / from_logits / probabilities with clipping,
 * sample weights and label smoothing, the SCCE bad-label error), every
 * metric kind (statistics), sum / nonfinite / maxabs, every optimizer update
 * over several steps and gradient clipping, Conv2D (valid, symmetric and asymmetric
 * 'same', strides, 1x1; backward accumulating into dw / db), pooling (incl.
 * global average), Conv1D (dilated, causal, strided, and on the Conv2D
 * kernels) and Conv2DTranspose (valid / same, strides below and above the
 * kernel; backward with dinp / dw / db NULL in turn), batchnorm (train / inference, forward / backward, frozen backward),
 * dropout (mask bit for bit), Keras 3's other activations, the strided
 * gather, rescale and the random image ops, PReLU, the BF_ERR_BUDGET of an impossible reservation,
 * and last, that a kernel fault poisons the backend.
 * Usage: test_cuda_ops path/to/_cuda.so   Exit status: number of failures. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_conv.h"
#include "cpu_convx.h"
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
    bf_cpu_dense_backward_serial(NULL, dx, dw, db, dout, x, w, B, IN, OUT);
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
            bf_cpu_act_forward_serial(NULL, y, x, (bf_act)a, N, C);
            snprintf(what, sizeof what, "act_forward %s (%ld,%d)", names[a], N, C);
            if (ok_status(G->act_forward(G, y_g, x_g, (bf_act)a, N, C), what)) dclose(what, y_g, y, n, 2e-6f, 1e-7f);
            /* backward from the same forward output, in place on dout */
            float *y_up = up(y, n);
            bf_cpu_act_backward_serial(NULL, dx, dy, y, (bf_act)a, N, C);
            snprintf(what, sizeof what, "act_backward %s (%ld,%d), in place", names[a], N, C);
            if (ok_status(G->act_backward(G, dy_g, dy_g, y_up, (bf_act)a, N, C), what))
                dclose(what, dy_g, dx, n, 2e-6f, 1e-7f);
            free(x), free(dy), free(y), free(dx);
        }
}

/* Keras 3's other activations (actx), the strided gather, rescale and the random image ops */
static void test_more_ops(void) {
    char what[96];
    const long n = 3001;
    const bf_act_param p = {0.3f, 2.5f, 0.2f};
    for (int a = BF_ACT_GELU; a <= BF_ACT_LAST; a++) {
        float *x = hrand(n, -8, 8), *dy = hrand(n, -1, 1), *y = hzero(n), *dx = hzero(n);
        float *x_g = up(x, n), *y_g = up(y, n), *dy_g = up(dy, n);
        bf_cpu_actx_forward_serial(NULL, y, x, (bf_act)a, &p, n);
        snprintf(what, sizeof what, "actx_forward %d", a);
        if (ok_status(G->actx_forward(G, y_g, x_g, (bf_act)a, &p, n), what)) dclose(what, y_g, y, (size_t)n, 2e-6f, 1e-6f);
        bf_cpu_actx_backward_serial(NULL, dx, dy, x, y, (bf_act)a, &p, n);
        snprintf(what, sizeof what, "actx_backward %d, in place", a);
        if (ok_status(G->actx_backward(G, dy_g, dy_g, x_g, up(y, n), (bf_act)a, &p, n), what))
            dclose(what, dy_g, dx, (size_t)n, 2e-6f, 1e-6f);
        free(x), free(dy), free(y), free(dx);
    }
    /* UpSampling2D backward: (2,3,4,5) from (2,6,12,5), 2 x 3 blocks summed */
    bf_strided g = {4, 2, {2, 3, 4, 5}, {60, 20, 5, 1}, {360, 120, 15, 1}, {2, 3}, {60, 5}};
    float *u = hrand(720, -1, 1), *v = hzero(120), *u_g = up(u, 720), *v_g = up(v, 120);
    bf_cpu_strided_copy(NULL, v, u, &g);
    if (ok_status(G->strided_copy(G, v_g, u_g, &g), "strided_copy (block sums)")) dclose("strided_copy", v_g, v, 120, 1e-6f, 1e-7f);
    /* Permute (2,1,3) of (4, 3, 5, 2) */
    bf_strided q = {4, 0, {4, 5, 3, 2}, {30, 6, 2, 1}, {30, 2, 10, 1}, {0, 0}, {0, 0}};
    bf_cpu_strided_copy(NULL, v, u, &q);
    if (ok_status(G->strided_copy(G, v_g, u_g, &q), "strided_copy (permute)")) dclose("permute", v_g, v, 120, 0, 0);
    float mean[5] = {0.1f, -2, 3, 0, 1}, var[5] = {1, 4, 1e-20f, 0.5f, 9};
    float *mg = up(mean, 5), *vg = up(var, 5);
    bf_cpu_rescale_forward(NULL, v, u, mean, var, 1.5f, -0.25f, 1e-7f, 24, 5);
    if (ok_status(G->rescale_forward(G, v_g, u_g, mg, vg, 1.5f, -0.25f, 1e-7f, 24, 5), "rescale_forward"))
        dclose("rescale_forward", v_g, v, 120, 1e-6f, 1e-7f);
    bf_cpu_rescale_backward(NULL, v, u, var, 1.5f, 1e-7f, 24, 5);
    if (ok_status(G->rescale_backward(G, v_g, u_g, vg, 1.5f, 1e-7f, 24, 5), "rescale_backward"))
        dclose("rescale_backward", v_g, v, 120, 1e-6f, 1e-7f);
    /* a translation with bilinear taps and every fill mode, then its transpose */
    for (int fill = BF_FILL_REFLECT; fill <= BF_FILL_WRAP; fill++) {
        bf_augment a = {3, 6, 7, 2, 6, 7, 3, 0, 1, -0.4f, 0.4f, -0.3f, 0.3f, fill, 1, 0.5f, 1, 99};
        const size_t m = 3 * 6 * 7 * 2;
        float *x = hrand(m, -1, 1), *y = hzero(m), *x_g = up(x, m), *y_g = up(y, m);
        bf_cpu_augment_forward(NULL, y, x, &a);
        snprintf(what, sizeof what, "augment_forward fill %d", fill);
        if (ok_status(G->augment_forward(G, y_g, x_g, &a), what)) dclose(what, y_g, y, m, 1e-5f, 1e-6f);
        bf_cpu_augment_backward(NULL, y, x, &a);
        snprintf(what, sizeof what, "augment_backward fill %d", fill);
        if (ok_status(G->augment_backward(G, y_g, x_g, &a), what)) dclose(what, y_g, y, m, 1e-5f, 1e-6f);
        free(x), free(y);
    }
    /* a rotation, then a zoom, with nearest and bilinear taps, and their transposes */
    for (int k = 0; k < 4; k++) {
        bf_augment a = {.B = 3, .H = 6, .W = 7, .C = 2, .OH = 6, .OW = 7, .fill = k % 4, .bilinear = k & 1,
                        .fill_value = 0.5f, .training = 1, .seed = 17};
        if (k < 2) a.rotate = 1, a.rot_lo = -40.0f, a.rot_hi = 70.0f;
        else a.zoom = 1, a.zh_lo = 0.7f, a.zh_hi = 1.3f, a.zw_lo = 0.8f, a.zw_hi = 1.2f;
        const size_t m = 3 * 6 * 7 * 2;
        float *x = hrand(m, -1, 1), *y = hzero(m), *x_g = up(x, m), *y_g = up(y, m);
        bf_cpu_augment_forward(NULL, y, x, &a);
        snprintf(what, sizeof what, "augment_forward %s", k < 2 ? "rotate" : "zoom");
        if (ok_status(G->augment_forward(G, y_g, x_g, &a), what)) dclose(what, y_g, y, m, 1e-5f, 1e-6f);
        bf_cpu_augment_backward(NULL, y, x, &a);
        snprintf(what, sizeof what, "augment_backward %s", k < 2 ? "rotate" : "zoom");
        if (ok_status(G->augment_backward(G, y_g, x_g, &a), what)) dclose(what, y_g, y, m, 1e-5f, 1e-6f);
        free(x), free(y);
    }
    /* GaussianNoise (noise 1) and GaussianDropout (noise 2), forward and backward */
    for (int k = 1; k <= 2; k++) {
        bf_augment a = {.B = 4, .H = 1, .W = 50, .C = 1, .OH = 1, .OW = 50, .noise = k, .stddev = 0.7f,
                        .training = 1, .seed = 31};
        const size_t m = 4 * 50;
        float *x = hrand(m, -1, 1), *y = hzero(m), *x_g = up(x, m), *y_g = up(y, m);
        snprintf(what, sizeof what, "augment noise %d forward", k);
        bf_cpu_augment_forward(NULL, y, x, &a);
        if (ok_status(G->augment_forward(G, y_g, x_g, &a), what)) dclose(what, y_g, y, m, 1e-5f, 1e-6f);
        snprintf(what, sizeof what, "augment noise %d backward", k);
        bf_cpu_augment_backward(NULL, y, x, &a);
        if (ok_status(G->augment_backward(G, y_g, x_g, &a), what)) dclose(what, y_g, y, m, 1e-5f, 1e-6f);
        free(x), free(y);
    }
    /* RandomContrast on 17x19 images (more pixels than a block's threads), clipped to [-0.6, 0.6] */
    {
        bf_augment a = {.B = 3, .H = 17, .W = 19, .C = 2, .OH = 17, .OW = 19, .contrast = 1, .c_lo = 0.5f,
                        .c_hi = 1.6f, .v_lo = -0.6f, .v_hi = 0.6f, .training = 1, .seed = 23};
        const size_t m = 3 * 17 * 19 * 2;
        float *x = hrand(m, -1, 1), *y = hzero(m), *d = hzero(m), *g = hrand(m, -1, 1);
        float *x_g = up(x, m), *y_g = up(y, m), *g_g = up(g, m), *d_g = up(d, m);
        bf_cpu_augment_forward(NULL, y, x, &a);
        if (ok_status(G->augment_forward(G, y_g, x_g, &a), "contrast forward"))
            dclose("contrast forward", y_g, y, m, 1e-5f, 1e-6f);
        a.out = y;
        bf_cpu_augment_backward(NULL, d, g, &a);
        a.out = y_g;
        if (ok_status(G->augment_backward(G, d_g, g_g, &a), "contrast backward"))
            dclose("contrast backward", d_g, d, m, 1e-5f, 1e-6f);
        a.out = NULL;
        if (G->augment_backward(G, d_g, g_g, &a) == BF_OK) {
            printf("FAIL contrast backward without the forward's output succeeded\n");
            failures++;
        }
        free(x), free(y), free(d), free(g);
    }
    free(u), free(v);
}

/* PReLU: alpha's gradient by the column reduction (few and many alpha elements) and by one thread per element (more
 * than the scratch holds); dalpha accumulates into what it held; dinp and dalpha NULL in turn */
static void test_prelu(void) {
    const long cases[][4] = {{7, 3, 5, 4}, {300, 2, 1, 1}, {3, 1, 1, 300}, {2, 5, 3, 1}, {2, 1, 1, 270000}};
    char what[96];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const long P = cases[k][0];
        const int Q = (int)cases[k][1], R = (int)cases[k][2], S = (int)cases[k][3];
        const size_t n = (size_t)P * Q * R * S, E = (size_t)Q * S;
        float *x = hrand(n, -2, 2), *dy = hrand(n, -1, 1), *a = hrand(E, -0.5f, 1.5f), *y = hzero(n);
        float *dx = hzero(n), *da = hrand(E, -1, 1);
        for (size_t i = 0; i < n; i += 11) x[i] = 0.0f; /* relu's kink: gradient 0 */
        float *x_g = up(x, n), *dy_g = up(dy, n), *a_g = up(a, E), *y_g = up(y, n), *da_g = up(da, E);
        bf_cpu_prelu_forward(NULL, y, x, a, P, Q, R, S);
        snprintf(what, sizeof what, "prelu_forward (%ld,%d,%d,%d)", P, Q, R, S);
        if (ok_status(G->prelu_forward(G, y_g, x_g, a_g, P, Q, R, S), what)) dclose(what, y_g, y, n, 0, 0);
        bf_cpu_prelu_backward(NULL, dx, da, dy, x, a, P, Q, R, S);
        snprintf(what, sizeof what, "prelu_backward dinp (%ld,%d,%d,%d)", P, Q, R, S);
        if (ok_status(G->prelu_backward(G, y_g, da_g, dy_g, x_g, a_g, P, Q, R, S), what)) {
            dclose(what, y_g, dx, n, 0, 0);
            snprintf(what, sizeof what, "prelu_backward dalpha (%ld,%d,%d,%d)", P, Q, R, S);
            dclose(what, da_g, da, E, 1e-6f, 1e-6f);
        }
        bf_cpu_prelu_backward(NULL, NULL, da, dy, x, a, P, Q, R, S);
        snprintf(what, sizeof what, "prelu_backward dinp NULL (%ld,%d,%d,%d)", P, Q, R, S);
        if (ok_status(G->prelu_backward(G, NULL, da_g, dy_g, x_g, a_g, P, Q, R, S), what))
            dclose(what, da_g, da, E, 1e-6f, 1e-6f);
        snprintf(what, sizeof what, "prelu_backward dalpha NULL (%ld,%d,%d,%d)", P, Q, R, S);
        if (ok_status(G->prelu_backward(G, y_g, NULL, dy_g, x_g, a_g, P, Q, R, S), what))
            dclose(what, y_g, dx, n, 0, 0);
        free(x), free(dy), free(a), free(y), free(dx), free(da);
    }
}

/* ---- losses, metrics, reductions ---- */

static void test_losses(void) {
    const char *kinds[] = {"mse", "bce", "cce", "scce", "mae", "huber", "log_cosh", "mean", "added"};
    char what[160];
    const int B = 53, C = 37;
    for (int k = 0; k <= BF_LOSS_LAST; k++)
        for (int mode = 0; mode < 4; mode++) { /* 0 probabilities, 1 fused, 2 from_logits, 3 weighted + smoothed */
            const int regression = k == BF_LOSS_MSE || k >= BF_LOSS_MAE; /* MAE, Huber, log-cosh, mean, added */
            if (regression && (mode == 1 || mode == 2)) continue;
            const int fused = mode == 1, from_logits = mode == 2;
            bf_loss_spec spec = {(bf_loss_kind)k, from_logits, mode == 3 && k != BF_LOSS_SCCE ? 0.1f : 0.0f, 0.7f};
            const size_t n = (size_t)B * C;
            float *p = mode == 1 || mode == 2 || regression ? hrand(n, -8, 8) : hrand(n, 0.0f, 1.0f);
            if (fused) { /* saturated rows: Keras's clipping of the activation's output */
                p[4 * C + 1] = 40.0f;
                p[5 * C + 2] = -40.0f;
                p[6 * C + 3] = 25.0f;
            }
            if (!mode && !regression) { /* clipping at both ends */
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
            float *sw = mode == 3 ? hrand(B, 0, 2) : NULL;
            float *l = hzero(B), *d = hzero(n);
            float *p_g = up(p, n), *t_g = up(t, tn), *l_g = up(l, B), *d_g = up(d, n), *sw_g = sw ? up(sw, B) : NULL;
            const float scale = 1.0f / 64;
            bf_status cs = bf_cpu_loss_forward_backward_serial(NULL, l, d, NULL, p, t, sw, &spec, fused, B, C, scale);
            snprintf(what, sizeof what, "loss %s %s", kinds[k],
                     mode == 0 ? "probabilities" : mode == 1 ? "fused" : mode == 2 ? "from_logits" : "weighted, smoothed");
            if (cs == BF_OK &&
                ok_status(G->loss_forward_backward(G, l_g, d_g, NULL, p_g, t_g, sw_g, &spec, fused, B, C, scale), what)) {
                dclose(what, l_g, l, B, 2e-5f, 1e-6f);
                strcat(what, " gradient");
                dclose(what, d_g, d, n, 2e-5f, 1e-7f);
            }
            free(p), free(t), free(l), free(d), free(sw);
        }
    /* SCCE labels that are not class ids: the CPU's error, the first bad row */
    const int Bb = 9, Cb = 4;
    float *p = hrand((size_t)Bb * Cb, -1, 1), t[9] = {0, 1, 2, 3, 1, 4, 2, -1, 0.5f};
    float *p_g = up(p, (size_t)Bb * Cb), *t_g = up(t, Bb), *l_g = dalloc(Bb * 4), *d_g = dalloc(Bb * Cb * 4);
    float l[9], d[36];
    const bf_loss_spec scce = {BF_LOSS_SCCE, 0, 0.0f, 1.0f};
    bf_cpu_loss_forward_backward_serial(NULL, l, d, NULL, p, t, NULL, &scce, 1, Bb, Cb, 1.0f);
    char cpu_msg[BF_MSG_LEN];
    snprintf(cpu_msg, sizeof cpu_msg, "%s", bf_last_error()->msg);
    bf_status s = G->loss_forward_backward(G, l_g, d_g, NULL, p_g, t_g, NULL, &scce, 1, Bb, Cb, 1.0f);
    printf("     SCCE bad label: %s\n", bf_last_error()->msg);
    expect(s == BF_ERR_DATA && !strcmp(cpu_msg, bf_last_error()->msg), "SCCE bad label: BF_ERR_DATA, same message as the CPU");
    /* with a flag: no wait, the lowest bad row (5) as B - row, loss and gradient 0 there, as the CPU */
    int flag_c = 0, flag_g = -1, *flag_d = dalloc(sizeof(int));
    G->fill_zero(G, flag_d, sizeof(int));
    expect(bf_cpu_loss_forward_backward_serial(NULL, l, d, &flag_c, p, t, NULL, &scce, 1, Bb, Cb, 1.0f) == BF_OK &&
                                               flag_c == Bb - 5, "CPU SCCE bad label flag");
    if (ok_status(G->loss_forward_backward(G, l_g, d_g, flag_d, p_g, t_g, NULL, &scce, 1, Bb, Cb, 1.0f),
                  "SCCE with a bad-label flag")) {
        G->to_host(G, &flag_g, flag_d, sizeof flag_g);
        expect(flag_g == flag_c, "SCCE bad label flag: the CPU's");
        dclose("SCCE loss with bad labels", l_g, l, Bb, 2e-5f, 1e-6f);
        dclose("SCCE gradient with bad labels", d_g, d, (size_t)Bb * Cb, 2e-5f, 1e-7f);
    }
    free(p);
}

/* every metric kind, probabilities and fused sigmoid / softmax, weighted or not:
 * the statistics the CPU accumulates (exact for counts; weighted sums to rounding) */
static void test_metrics(void) {
    const char *names[] = {"binary_accuracy", "categorical_accuracy", "sparse_categorical_accuracy", "top_k",
                           "sparse_top_k", "mae", "mse", "rmse", "auc", "precision", "recall",
                           "true_positives", "false_positives", "true_negatives", "false_negatives",
                           "precision_at_recall", "recall_at_precision", "sensitivity_at_specificity",
                           "specificity_at_sensitivity", "sums"};
    _Static_assert(sizeof names / sizeof *names == BF_MET_LAST + 1, "a name per metric kind");
    char what[160];
    const int B = 67, C = 11;
    const size_t n = (size_t)B * C;
    float *onehot = hzero(n), *ids = malloc(B * sizeof(float)), *soft = hrand(n, 0, 1), *sw = hrand(B, 0, 2);
    for (int i = 0; i < B; i++) {
        ids[i] = (float)(i * 5 % C);
        onehot[(size_t)i * C + i * 5 % C] = 1.0f;
    }
    for (size_t i = 0; i < n; i++) soft[i] = soft[i] > 0.6f ? 1.0f : 0.0f;
    float *onehot_g = up(onehot, n), *ids_g = up(ids, B), *soft_g = up(soft, n), *sw_g = up(sw, B);
    for (int kind = 0; kind <= BF_MET_LAST; kind++)
        for (int act = 0; act < 3; act++) /* linear (probabilities), sigmoid logits, softmax logits */
            for (int weighted = 0; weighted < 2; weighted++) {
                bf_metric_spec m = {.kind = (bf_metric_kind)kind, .weighted = weighted, .k = 3, .num_thresholds = 200,
                                    .value = 0.5f, .threshold = 0.5f, .col0 = 2, .ncols = 3}; /* SUMS: columns 2..4 */
                bf_act a = act == 0 ? BF_ACT_LINEAR : act == 1 ? BF_ACT_SIGMOID : BF_ACT_SOFTMAX;
                float *p = act ? hrand(n, -4, 4) : hrand(n, 0, 1);
                p[0] = p[1]; /* a tie */
                const int sparse = kind == BF_MET_SPARSE_CAT_ACC || kind == BF_MET_SPARSE_TOPK;
                const float *t = sparse ? ids : kind == BF_MET_CAT_ACC || kind == BF_MET_TOPK ? onehot : soft;
                const float *t_g = sparse ? ids_g : kind == BF_MET_CAT_ACC || kind == BF_MET_TOPK ? onehot_g : soft_g;
                const int T = sparse ? 1 : C;
                long nv = bf_metric_nvalues(&m);
                double *acc = calloc((size_t)nv, sizeof(double)), *back = calloc((size_t)nv, sizeof(double));
                double *acc_g = dalloc(sizeof(double) * (size_t)nv);
                float *p_g = up(p, n);
                G->fill_zero(G, acc_g, sizeof(double) * (size_t)nv);
                bf_cpu_metric_update_serial(NULL, acc, p, t, sw, &m, a, B, C, T);
                snprintf(what, sizeof what, "metric %s act %d%s", names[kind], act, weighted ? " weighted" : "");
                if (ok_status(G->metric_update(G, acc_g, p_g, t_g, sw_g, &m, a, B, C, T), what) &&
                    ok_status(G->to_host(G, back, acc_g, sizeof(double) * (size_t)nv), what)) {
                    int same = 1;
                    for (long k = 0; k < nv; k++)
                        if (fabs(back[k] - acc[k]) > 1e-5 * (1.0 + fabs(acc[k]))) same = 0;
                    expect(same, what);
                }
                free(p), free(acc), free(back);
            }
    free(onehot), free(ids), free(soft), free(sw);
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
    bf_cpu_maxabs_serial(NULL, &mc, x, n);
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

/* reductions over axes: every op over a few axis sets (merged, kept inner, reduced inner), forward and backward */
static void test_reduce_axes(void) {
    const long n[4] = {3, 4, 5, 6}, N = 360;
    const unsigned masks[] = {0x1, 0x8, 0x6, 0xA, 0xF, 0x5};
    char what[96];
    float *x = hrand(N, -2, 2), *dy = hrand(N, -1, 1), *y = hzero(N), *dx = hzero(N);
    for (long i = 0; i < N; i += 7) x[i] = (float)(int)x[i]; /* ties and zeros */
    float *x_g = up(x, N), *dy_g = up(dy, N), *y_g = up(y, N), *dx_g = up(dx, N);
    for (int op = 0; op <= BF_RED_LAST; op++)
        for (size_t k = 0; k < sizeof masks / sizeof masks[0]; k++) {
            bf_reduce_geom g = {.nd = 4, .mask = masks[k], .op = (bf_reduce_op)op};
            for (int d = 0; d < 4; d++) g.n[d] = n[d];
            long O = 1;
            for (int d = 0; d < 4; d++) O *= masks[k] >> d & 1u ? 1 : n[d];
            bf_cpu_reduce_forward(NULL, y, x, &g);
            snprintf(what, sizeof what, "reduce_forward op %d mask %x", op, masks[k]);
            if (ok_status(G->reduce_forward(G, y_g, x_g, &g), what)) dclose(what, y_g, y, O, 1e-6f, 1e-6f);
            G->to_device(G, y_g, y, (size_t)O * sizeof(float)); /* the same forward output on both */
            bf_cpu_reduce_backward(NULL, dx, dy, x, y, &g);
            snprintf(what, sizeof what, "reduce_backward op %d mask %x", op, masks[k]);
            if (ok_status(G->reduce_backward(G, dx_g, dy_g, x_g, y_g, &g), what)) dclose(what, dx_g, dx, N, 1e-6f, 1e-6f);
        }
    free(x), free(dy), free(y), free(dx);
}

/* ---- optimizers ---- */

static void test_optimizers(void) {
    const long n = 4099;
    char what[128];
    struct { const char *name; bf_update_args a; int nslots; } cases[] = {
        {"sgd", {.kind = BF_UPD_SGD, .lr = 0.1f}, 0},
        {"sgd momentum", {.kind = BF_UPD_SGD, .lr = 0.1f, .momentum = 0.9f}, 1},
        {"sgd nesterov, weight decay", {.kind = BF_UPD_SGD, .lr = 0.1f, .momentum = 0.9f, .nesterov = 1, .weight_decay = 0.01f}, 1},
        {"adam", {.kind = BF_UPD_ADAM, .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-7f}, 2},
        {"adam amsgrad, weight decay", {.kind = BF_UPD_ADAM, .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-7f, .amsgrad = 1, .weight_decay = 0.004f}, 3},
        {"rmsprop", {.kind = BF_UPD_RMSPROP, .lr = 1e-3f, .rho = 0.9f, .eps = 1e-7f}, 1},
        {"rmsprop momentum centered", {.kind = BF_UPD_RMSPROP, .lr = 1e-3f, .rho = 0.9f, .momentum = 0.5f, .eps = 1e-7f, .centered = 1}, 3},
        {"adagrad", {.kind = BF_UPD_ADAGRAD, .lr = 1e-2f, .eps = 1e-7f}, 1},
        {"nadam", {.kind = BF_UPD_NADAM, .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-7f}, 2},
        {"adamax, weight decay", {.kind = BF_UPD_ADAMAX, .lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-7f, .weight_decay = 0.01f}, 2},
        {"adadelta", {.kind = BF_UPD_ADADELTA, .lr = 1.0f, .rho = 0.95f, .eps = 1e-7f}, 2},
        {"ftrl", {.kind = BF_UPD_FTRL, .lr = 0.1f, .ftrl = {.lr_power = -0.5f}}, 2},
        {"ftrl power, regularized", {.kind = BF_UPD_FTRL, .lr = 0.1f, .ftrl = {-0.7f, 0.01f, 0.02f, 0.03f, 0.1f}}, 2},
        {"lion, weight decay", {.kind = BF_UPD_LION, .lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.99f, .weight_decay = 0.01f}, 1},
        {"lamb, weight decay", {.kind = BF_UPD_LAMB_MOMENTS, .lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-7f, .weight_decay = 0.01f}, 2},
        {"ema (use_ema's average)", {.kind = BF_UPD_EMA, .momentum = 0.9f, .weight_decay = 0.01f}, 1},
        {"ema overwrite", {.kind = BF_UPD_EMA_OVERWRITE, .weight_decay = 0.01f}, 1},
    };
    double *nrm_g = dalloc(2 * sizeof(double)); /* Lamb: sum w^2, sum update^2 (device) */
    for (size_t o = 0; o < sizeof cases / sizeof cases[0]; o++) {
        float *w = hrand(n, -1, 1), *s[3], *s_g[3];
        for (int k = 0; k < 3; k++) {
            const int acc = cases[o].a.kind == BF_UPD_ADAGRAD || cases[o].a.kind == BF_UPD_FTRL;
            s[k] = acc && k == 0 ? hrand(n, 0.1f, 0.1f) : hzero(n);
            s_g[k] = up(s[k], n);
        }
        float *w_g = up(w, n);
        float u_prod = 1.0f;
        for (int step = 1; step <= 5; step++) {
            float *g = hrand(n, -1, 1), *g_g = up(g, n);
            bf_update_args a = cases[o].a;
            a.t = step;
            if (a.kind == BF_UPD_NADAM) {
                a.u_t = 0.9f * (1.0f - 0.5f * powf(0.96f, (float)step));
                a.u_t1 = 0.9f * (1.0f - 0.5f * powf(0.96f, (float)(step + 1)));
                u_prod = u_prod * a.u_t;
                a.u_prod = u_prod;
                a.u_prod1 = u_prod * a.u_t1;
            }
            float *c0 = cases[o].nslots > 0 ? s[0] : NULL, *c1 = cases[o].nslots > 1 ? s[1] : NULL;
            float *c2 = cases[o].nslots > 2 ? s[2] : NULL;
            float *g0 = cases[o].nslots > 0 ? s_g[0] : NULL, *g1 = cases[o].nslots > 1 ? s_g[1] : NULL;
            float *g2 = cases[o].nslots > 2 ? s_g[2] : NULL;
            bf_cpu_opt_update_serial(NULL, w, c0, c1, c2, g, n, &a);
            snprintf(what, sizeof what, "%s", cases[o].name);
            ok_status(G->opt_update(G, w_g, g0, g1, g2, g_g, n, &a), what);
            if (a.kind == BF_UPD_LAMB_MOMENTS) { /* the norms, then the step */
                double nrm[2] = {0.0, 0.0};
                bf_cpu_sumsq(NULL, &nrm[0], w, n);
                bf_cpu_lamb_sumsq(NULL, &nrm[1], c0, c1, n, &a);
                G->fill_zero(G, nrm_g, 2 * sizeof(double));
                ok_status(G->sumsq(G, nrm_g, w_g, n), "lamb: sumsq");
                ok_status(G->lamb_sumsq(G, nrm_g + 1, g0, g1, n, &a), "lamb_sumsq");
                a.kind = BF_UPD_LAMB_APPLY;
                a.norms = nrm;
                bf_cpu_opt_update_serial(NULL, w, c0, c1, NULL, NULL, n, &a);
                a.norms = nrm_g;
                ok_status(G->opt_update(G, w_g, g0, g1, NULL, NULL, n, &a), "lamb apply");
            }
            free(g);
        }
        snprintf(what, sizeof what, "%s: weights after 5 steps", cases[o].name);
        dclose(what, w_g, w, n, 1e-5f, 1e-6f);
        if (cases[o].a.kind == BF_UPD_EMA) { /* the average moves, the weights do not */
            snprintf(what, sizeof what, "%s: average after 5 steps", cases[o].name);
            dclose(what, s_g[0], s[0], n, 1e-6f, 1e-7f);
        }
        free(w);
        for (int k = 0; k < 3; k++) free(s[k]);
    }
    /* clipping: per tensor norm, global norm, value */
    for (int mode = BF_CLIP_NORM; mode <= BF_CLIP_VALUE; mode++) {
        float *g = hrand(n, -1, 1), *g_g = up(g, n);
        double ss = 0.0, *ss_g = dalloc(sizeof(double));
        G->fill_zero(G, ss_g, sizeof(double));
        bf_cpu_sumsq(NULL, &ss, g, n);
        ok_status(G->sumsq(G, ss_g, g_g, n), "sumsq");
        bf_cpu_grad_clip(NULL, g, &ss, n, (bf_clip_mode)mode, 0.5f);
        snprintf(what, sizeof what, "grad_clip mode %d", mode);
        if (ok_status(G->grad_clip(G, g_g, ss_g, n, (bf_clip_mode)mode, 0.5f), what)) dclose(what, g_g, g, n, 1e-5f, 1e-7f);
        free(g);
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
        void *cws = malloc(bf_cpu_conv2d_workspace_bytes(NULL, g, 1) + bf_cpu_conv2d_workspace_bytes(NULL, g, 0) + 64);
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

/* the ops of one Conv1D / Conv2DTranspose geometry against the CPU's, on
 * random tensors; forward and backward (accumulating into dw / db), then a
 * smaller batch with dinp, dw, db NULL in the planned workspace */
/* Conv1D (g1 set) or Conv2DTranspose (gt set): forward / backward on the CPU (cpu = 1) or the GPU */
static bf_status convx_fwd(int cpu, const bf_conv1d_geom *g1, const bf_conv_geom *gt, float *y, void *ws,
                           const float *x, const float *w, const float *b) {
    if (g1) return cpu ? bf_cpu_conv1d_forward(NULL, y, ws, x, w, b, g1) : G->conv1d_forward(G, y, ws, x, w, b, g1);
    return cpu ? bf_cpu_conv2d_transpose_forward(NULL, y, ws, x, w, b, gt)
               : G->conv2d_transpose_forward(G, y, ws, x, w, b, gt);
}
static bf_status convx_bwd(int cpu, const bf_conv1d_geom *g1, const bf_conv_geom *gt, float *dx, float *dw,
                           float *db, void *ws, const float *dy, const float *x, const float *w) {
    if (g1)
        return cpu ? bf_cpu_conv1d_backward(NULL, dx, dw, db, ws, dy, x, w, g1)
                   : G->conv1d_backward(G, dx, dw, db, ws, dy, x, w, g1);
    return cpu ? bf_cpu_conv2d_transpose_backward(NULL, dx, dw, db, ws, dy, x, w, gt)
               : G->conv2d_transpose_backward(G, dx, dw, db, ws, dy, x, w, gt);
}
static void convx_case(const char *what, const bf_conv1d_geom *g1, const bf_conv_geom *gt, size_t nx, size_t ny,
                       size_t nw, int nb) {
    bf_conv1d_geom h1 = g1 ? *g1 : (bf_conv1d_geom){0};
    bf_conv_geom ht = gt ? *gt : (bf_conv_geom){0};
    h1.B = ht.B = 1;
    const size_t fws = g1 ? G->conv1d_workspace_bytes(G, g1, 0) : G->conv2d_transpose_workspace_bytes(G, gt, 0);
    const size_t bws = g1 ? G->conv1d_workspace_bytes(G, g1, 1) : G->conv2d_transpose_workspace_bytes(G, gt, 1);
    const size_t cwb = g1 ? bf_cpu_conv1d_workspace_bytes(NULL, g1, 0) + bf_cpu_conv1d_workspace_bytes(NULL, g1, 1)
                          : bf_cpu_conv2d_transpose_workspace_bytes(NULL, gt, 1);
    float *x = hrand(nx, -1, 1), *w = hrand(nw, -1, 1), *b = hrand(nb, -1, 1), *y = hzero(ny);
    float *dy = hrand(ny, -1, 1), *dx = hzero(nx), *dw = hrand(nw, -1, 1), *db = hrand(nb, -1, 1);
    float *x_g = up(x, nx), *w_g = up(w, nw), *b_g = up(b, nb), *y_g = up(y, ny), *dy_g = up(dy, ny);
    float *dx_g = up(dx, nx), *dw_g = up(dw, nw), *db_g = up(db, nb);
    void *fws_g = dalloc(fws), *bws_g = dalloc(bws), *cws = malloc(cwb + 64);
    char w2[240];
    printf("     %s: workspace forward %zu, backward %zu bytes\n", what, fws, bws);
    ok_status(convx_fwd(1, g1, gt, y, cws, x, w, b), "cpu forward");
    if (ok_status(convx_fwd(0, g1, gt, y_g, fws_g, x_g, w_g, b_g), what)) dclose(what, y_g, y, ny, 1e-4f, 1e-5f);
    ok_status(convx_bwd(1, g1, gt, dx, dw, db, cws, dy, x, w), "cpu backward");
    if (ok_status(convx_bwd(0, g1, gt, dx_g, dw_g, db_g, bws_g, dy_g, x_g, w_g), what)) {
        snprintf(w2, sizeof w2, "%s dinp", what);
        dclose(w2, dx_g, dx, nx, 1e-4f, 1e-5f);
        snprintf(w2, sizeof w2, "%s dw (accumulated)", what);
        dclose(w2, dw_g, dw, nw, 1e-4f, 1e-5f);
        snprintf(w2, sizeof w2, "%s db (accumulated)", what);
        dclose(w2, db_g, db, nb, 1e-4f, 1e-5f);
    }
    snprintf(w2, sizeof w2, "%s: a smaller batch, dinp / dw / db NULL in turn", what);
    const bf_conv1d_geom *s1 = g1 ? &h1 : NULL;
    const bf_conv_geom *st = gt ? &ht : NULL;
    expect(convx_bwd(0, s1, st, NULL, dw_g, NULL, bws_g, dy_g, x_g, w_g) == BF_OK &&
           convx_bwd(0, s1, st, dx_g, NULL, db_g, bws_g, dy_g, x_g, w_g) == BF_OK && G->sync(G) == BF_OK, w2);
    free(x), free(w), free(b), free(y), free(dy), free(dx), free(dw), free(db), free(cws);
}

static void test_convx(void) {
    /* B, T, C, OT, K, KW, S, D, PL */
    const bf_conv1d_geom g1[] = {
        {3, 17, 3, 17, 4, 3, 1, 2, 4},  /* causal, dilation 2 */
        {2, 16, 5, 8, 6, 4, 2, 1, 1},   /* same, stride 2 (Conv2D kernels on the CPU) */
        {2, 20, 2, 14, 3, 3, 1, 3, 0},  /* valid, dilation 3 */
        {4, 15, 3, 5, 2, 3, 3, 1, 2},   /* causal, stride 3 */
    };
    char what[160];
    for (size_t t = 0; t < sizeof g1 / sizeof g1[0]; t++) {
        const bf_conv1d_geom *g = &g1[t];
        snprintf(what, sizeof what, "conv1d B%d %dx%d -> %dx%d k%d s%d d%d pad %d", g->B, g->T, g->C, g->OT, g->K,
                 g->KW, g->S, g->D, g->PL);
        convx_case(what, g, NULL, (size_t)g->B * g->T * g->C, (size_t)g->B * g->OT * g->K,
                   (size_t)g->KW * g->C * g->K, g->K);
    }
    /* the Conv2D each Conv2DTranspose is the adjoint of: input = the transposed conv's output */
    const bf_conv_geom gt[] = {
        geom(3, 10, 8, 4, 3, 3, 3, 2, 2, 1), /* same, stride 2 */
        geom(2, 6, 6, 3, 2, 4, 4, 2, 2, 1),  /* same, even kernel */
        geom(2, 12, 5, 2, 3, 2, 3, 3, 1, 0), /* valid, stride above the kernel (rows no window reaches) */
        geom(2, 7, 6, 3, 4, 3, 3, 1, 1, 0),  /* valid, stride 1 */
    };
    for (size_t t = 0; t < sizeof gt / sizeof gt[0]; t++) {
        const bf_conv_geom *g = &gt[t];
        snprintf(what, sizeof what, "conv2d_transpose B%d %dx%dx%d -> %dx%dx%d k%dx%d s%dx%d pad %d,%d", g->B, g->OH,
                 g->OW, g->K, g->H, g->W, g->C, g->KH, g->KW, g->SH, g->SW, g->PT, g->PL);
        convx_case(what, NULL, g, (size_t)g->B * g->OH * g->OW * g->K, (size_t)g->B * g->H * g->W * g->C,
                   (size_t)g->KH * g->KW * g->C * g->K, g->C);
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
        /* a frozen (inference-mode) layer: dinp = dout * gamma * invstd, in place, gamma NULL once */
        bf_cpu_batchnorm_forward(NULL, y, st, st + C, mm, mv, x, gm, bt, N, C, 0.99f, 1e-3f, 0);
        float *st3_g = up(st, 2 * (size_t)C);
        for (int use_gamma = 1; use_gamma >= 0; use_gamma--) {
            float *dy = hrand(n, -1, 1), *dx = hzero(n), *dy_g = up(dy, n);
            bf_cpu_batchnorm_backward_frozen(NULL, dx, dy, st + C, use_gamma ? gm : NULL, N, C);
            snprintf(what, sizeof what, "batchnorm_backward_frozen N=%ld C=%d%s, in place", N, C,
                     use_gamma ? "" : " gamma NULL");
            if (ok_status(G->batchnorm_backward_frozen(G, dy_g, dy_g, st3_g + C, use_gamma ? gm_g : NULL, N, C), what))
                dclose(what, dy_g, dx, n, 1e-6f, 1e-7f);
            free(dy), free(dx);
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
    test_more_ops();
    test_prelu();
    test_losses();
    test_metrics();
    test_reductions();
    test_reduce_axes();
    test_optimizers();
    test_conv();
    test_pool();
    test_convx();
    test_batchnorm();
    test_dropout();
    test_budget();
    test_poison(); /* last: the backend is unusable afterwards */
    G->release(G, dev_base);
    close(G);
    printf("%d of %d checks failed\n", failures, checks);
    return failures;
}
