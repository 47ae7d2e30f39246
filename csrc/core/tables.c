/* tables.c - a model's and a run's per-node, per-tensor and per-edge tables, sized by the model's own counts (not
 * by BF_MAX_LAYERS, a stated bound): one host reservation each (bf_host_reserve, zeroed), carved in order. A
 * model's tables are its own bytes beside its weights; a run's are counted in its plan (bf_run_tables_bytes). */
#include <string.h>

#include "arena.h"
#include "step.h"

/* a cursor over one reservation: each table rounded up to 16 bytes; p NULL: only counts */
typedef struct { char *p; size_t at; } carve;

static void *take(carve *c, size_t bytes) {
    void *out = c->p ? c->p + c->at : NULL;
    c->at += (bytes + 15) & ~(size_t)15;
    return out;
}

static void model_tables(bf_model *m, carve *c, int nl, int nt, int ne) {
    m->layers = take(c, sizeof(bf_layer) * (size_t)nl);
    m->t_rank = take(c, sizeof(int) * (size_t)nt);
    m->t_shape = take(c, sizeof(int[BF_MAX_RANK]) * (size_t)nt);
    m->t_size = take(c, sizeof(long) * (size_t)nt);
    m->t_uses = take(c, sizeof(int) * (size_t)nt);
    m->t_mask = take(c, sizeof(int) * (size_t)nt);
    m->in_pool = take(c, sizeof(int) * (size_t)ne);
    m->work = take(c, sizeof(int) * 2 * (size_t)nt);
}

size_t bf_model_tables_bytes(int nlayers, int n_tensors, int n_edges) {
    bf_model m;
    carve c = {NULL, 0};
    model_tables(&m, &c, nlayers, n_tensors, n_edges);
    return c.at;
}

bf_status bf_model_tables_reserve(bf_model *m, int nlayers, int n_tensors, int n_edges) {
    if (nlayers < 0 || nlayers > BF_MAX_LAYERS)
        return BF_FAIL(BF_ERR_ARG, "%d layer calls, at most %d are supported (boundfit._core.MAX_LAYERS)", nlayers,
                       BF_MAX_LAYERS);
    if (n_tensors < 1 || n_tensors > BF_MAX_TENSORS || n_edges < 0 || n_edges > BF_MAX_EDGES)
        return BF_FAIL(BF_ERR_ARG, "%d tensors and %d layer inputs, at most %d and %d (boundfit._core.MAX_LAYERS, "
                       "MAX_NODE_INPUTS_TOTAL)", n_tensors, n_edges, BF_MAX_TENSORS, BF_MAX_EDGES);
    bf_host_release(m->tables);
    m->tables = NULL;
    carve c = {NULL, 0};
    model_tables(m, &c, nlayers, n_tensors, n_edges);
    BF_TRY(bf_host_reserve(&m->tables, c.at));
    c = (carve){m->tables, 0};
    model_tables(m, &c, nlayers, n_tensors, n_edges);
    m->cap_layers = nlayers;
    m->cap_tensors = n_tensors;
    m->cap_edges = n_edges;
    return BF_OK;
}

void bf_model_tables_free(bf_model *m) {
    bf_host_release(m->tables);
    m->tables = NULL;
    m->cap_layers = m->cap_tensors = m->cap_edges = 0;
}

static void run_tables(bf_run *r, carve *c, int nl, int nt, int ne, int nb) {
    const size_t L = (size_t)nl, T = (size_t)nt;
    r->t_buf = take(c, sizeof(int) * T);
    r->t_grad = take(c, sizeof(int) * T);
    r->need_grad = take(c, sizeof(int) * T);
    r->t16 = take(c, T);
    r->cv_t = take(c, sizeof(float *) * T);
    r->work = take(c, sizeof(int) * T);
    r->node_fused = take(c, sizeof(int) * L);
    r->node_view = take(c, sizeof(int) * L);
    r->node_bw = take(c, sizeof(int) * L);
    r->fws_id = take(c, sizeof(int) * L);
    r->bws_id = take(c, sizeof(int) * L);
    r->aux_id = take(c, sizeof(int) * L);
    r->node_off = take(c, sizeof(int) * L);
    r->cv_rows = take(c, sizeof(int) * L);
    r->cv_fw = take(c, sizeof(int) * L);
    r->cv_bw = take(c, sizeof(int) * L);
    r->work_n = take(c, sizeof(int) * L);
    r->gbound = take(c, sizeof(double) * L);
    r->bcount = take(c, sizeof(double) * L);
    r->bounded = take(c, L);
    r->cv = take(c, L);
    r->aug_base = take(c, sizeof(uint64_t) * L);
    r->aug_seed = take(c, sizeof(uint64_t) * L);
    r->attn_seed = take(c, sizeof(uint64_t) * L);
    r->rnn_seed = take(c, sizeof(uint64_t) * L);
    r->hstats = take(c, bf_step_stats_bytes(nl));
    r->gtmp = take(c, sizeof(int) * (size_t)ne);
    r->bufs = take(c, sizeof(bf_plan_buf) * (size_t)nb);
    r->buf_names = take(c, sizeof r->buf_names[0] * (size_t)nb);
    r->buf_kind = take(c, (size_t)nb);
    r->work_b = take(c, (size_t)nb);
    r->plan_work = take(c, bf_plan_work_bytes(nb));
}

size_t bf_run_tables_bytes(const bf_model *m) {
    bf_run r;
    carve c = {NULL, 0};
    run_tables(&r, &c, m->nlayers, m->n_inputs + m->nlayers, m->n_edges, bf_run_buf_cap(m));
    return c.at;
}

bf_status bf_run_tables_reserve(bf_run *r) {
    const bf_model *m = r->m;
    bf_run_tables_free(r);
    BF_TRY(bf_host_reserve(&r->tables, bf_run_tables_bytes(m)));
    carve c = {r->tables, 0};
    r->cap_buf = bf_run_buf_cap(m);
    run_tables(r, &c, m->nlayers, m->n_inputs + m->nlayers, m->n_edges, r->cap_buf);
    return BF_OK;
}

void bf_run_tables_free(bf_run *r) {
    bf_host_release(r->tables);
    r->tables = NULL;
    r->cap_buf = 0;
}
