/* embedding.c: the CPU's embedding family: its kernels, stamped for f32 and
 * f64 from embedding_tmpl.h, the wrappers from the seam's tensors to their
 * raw arrays, and its sub-table (backend/embedding.h), which the CPU's table
 * points to. */
#include "backend/embedding.h"
#include "cpu/cpu.h"
#include "cpu/fused.h"

#include <string.h>
#include <tgmath.h>

#define GAD_STAMP "embedding_tmpl.h"
#include "cpu/stamp.h"

#define F32(t) ((t)->dtype == GAD_F32)
#define P(t) gad__ptr(t)

/* ---- half precision (issue 29): f16/bf16 tables
 * The forward copies rows (exact). The backward sums in f32: gy widened
 * and an f32 gradient table, the f32 kernel, then the table rounded once
 * into gt (zeros on entry), as the f32 op on widened inputs. The f32
 * copies are temporaries of the table's and gy's sizes. */
typedef struct emb_half_ctx {
    const char *table;
    const int64_t *idx;
    char *out;
    size_t row; /* bytes */
} emb_half_ctx;

static void emb_half_fwd_range(void *vc, int64_t lo, int64_t hi) {
    emb_half_ctx *c = vc;
    for (int64_t r = lo; r < hi; r++)
        memcpy(c->out + (size_t)r * c->row, c->table + (size_t)c->idx[r] * c->row, c->row);
}

static void emb_half_bwd(const gad_tensor *idx, const gad_tensor *gy, gad_tensor *gt) {
    int64_t D = gt->shape[1], R = idx->numel, V = gt->shape[0];
    size_t ng = (size_t)(R * D) * sizeof(float), nt = (size_t)(V * D) * sizeof(float);
    float *g = gad__alloc(ng ? ng : 1), *t = gad__alloc(nt ? nt : 1);
    if (g && t) {
        memset(t, 0, nt);
        gad__half_widen(gt->dtype, R * D, P(gy), 1, g);
        gad__emb_bwd_f32(P(idx), g, t, R, D);
        gad__half_narrow(gt->dtype, V * D, t, P(gt), 1);
    }
    /* (out of memory: gt keeps its zeros; gad__alloc recorded nothing, so
     * say it) */
    if (!g || !t) gad__err(GAD_ERR_MEMORY, "embedding_fused", "no memory for the f32 gradient");
    if (g) gad__free(g, ng ? ng : 1);
    if (t) gad__free(t, nt ? nt : 1);
}

static void cpu_emb_fwd(const gad_tensor *table, const gad_tensor *idx, gad_tensor *y) {
    int64_t D = table->shape[1];
    if (gad__is_half(y->dtype)) {
        emb_half_ctx c = {.table = P(table), .idx = P(idx), .out = P(y), .row = (size_t)D * 2};
        gad__parallel_for(idx->numel, 4096 / (D + 1) + 1, emb_half_fwd_range, &c);
        return;
    }
    if (F32(y)) gad__emb_fwd_f32(P(table), P(idx), P(y), idx->numel, D);
    else gad__emb_fwd_f64(P(table), P(idx), P(y), idx->numel, D);
}

static void cpu_emb_bwd(const gad_tensor *idx, const gad_tensor *gy, gad_tensor *gt) {
    int64_t D = gt->shape[1];
    if (gad__is_half(gt->dtype)) {
        emb_half_bwd(idx, gy, gt);
        return;
    }
    if (F32(gt)) gad__emb_bwd_f32(P(idx), P(gy), P(gt), idx->numel, D);
    else gad__emb_bwd_f64(P(idx), P(gy), P(gt), idx->numel, D);
}

const gad_be_embedding gad__cpu_embedding = {.fwd = cpu_emb_fwd, .bwd = cpu_emb_bwd, .half = 1};
