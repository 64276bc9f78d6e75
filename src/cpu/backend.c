/* backend.c: the CPU's table of the seam (src/backend/backend.h): the
 * kernels of src/cpu behind the entries, and thin wrappers where an entry
 * takes tensors and a kernel raw arrays (the fused kernels, the
 * optimizers). Registers the CPU's hooks into core (GEMM's scratch trim and
 * BLAS thread count) before main. */
#include "backend/backend.h"
#include "backend/embedding.h"
#include "backend/helix.h"
#include "backend/masked_ce.h"
#include "backend/rms_norm.h"
#include "backend/scan.h"
#include "cpu/cpu.h"
#include "cpu/fused.h"
#include "cpu/gemm.h"
#include "cpu/optim.h"

#include <math.h>

#define F32(t) ((t)->dtype == GAD_F32)
#define P(t) gad__ptr(t)

/* ------------------------------------------------------- conversions */

static void cpu_convert(const gad_tensor *x, gad_tensor *y) {
    gad__host_convert(x, P(y), y->dtype);
}

#define ALL_FINITE(T)                                                          \
    do {                                                                       \
        const T *p = P(c);                                                     \
        for (int64_t i = 0; i < c->numel; i++)                                 \
            if (!isfinite(p[i])) finite = false;                               \
    } while (0)

static bool cpu_all_finite(const gad_tensor *x) {
    gad_tensor *c = gad__contig("all_finite", x);
    if (!c) return true; /* out of memory: no verdict, no false alarm */
    bool finite = true;
    if (c->dtype == GAD_F32) ALL_FINITE(float);
    else if (c->dtype == GAD_F64) ALL_FINITE(double);
    gad_release(c);
    return finite;
}

/* ------------------------------------------------------ fused kernels */

static void cpu_scan_fwd(const gad_tensor *a, const gad_tensor *b, gad_tensor *h) {
    int64_t B = a->shape[0], T = a->shape[1], D = a->shape[2];
    if (F32(a)) gad__scan_fwd_f32(P(a), P(b), P(h), B, T, D);
    else gad__scan_fwd_f64(P(a), P(b), P(h), B, T, D);
}

static void cpu_scan_bwd(const gad_tensor *a, const gad_tensor *h, const gad_tensor *gh,
                         gad_tensor *ga, gad_tensor *gb) {
    int64_t B = a->shape[0], T = a->shape[1], D = a->shape[2];
    void *pa = ga ? P(ga) : NULL, *pb = gb ? P(gb) : NULL;
    if (F32(a)) gad__scan_bwd_f32(P(a), P(h), P(gh), pa, pb, B, T, D);
    else gad__scan_bwd_f64(P(a), P(h), P(gh), pa, pb, B, T, D);
}

/* rows of the last axis */
static void rows_of(const gad_tensor *x, int64_t *rows, int64_t *n) {
    *n = x->shape[x->rank - 1];
    *rows = *n ? x->numel / *n : 0;
}

static void cpu_rms_fwd(const gad_tensor *x, gad_tensor *y, double eps) {
    int64_t rows, n;
    rows_of(x, &rows, &n);
    if (F32(x)) gad__rms_fwd_f32(P(x), P(y), rows, n, eps);
    else gad__rms_fwd_f64(P(x), P(y), rows, n, eps);
}

static void cpu_rms_bwd(const gad_tensor *x, const gad_tensor *g, gad_tensor *dx, double eps) {
    int64_t rows, n;
    rows_of(x, &rows, &n);
    if (F32(x)) gad__rms_bwd_f32(P(x), P(g), P(dx), rows, n, eps);
    else gad__rms_bwd_f64(P(x), P(g), P(dx), rows, n, eps);
}

/* Weight i of a packed float mask, as a double. */
static double weight_at(const gad_tensor *m, int64_t i) {
    return F32(m) ? ((const float *)P(m))[i] : ((const double *)P(m))[i];
}

static int cpu_mce_prep(const char *op, const gad_tensor *targets, const gad_tensor *mask,
                        int64_t V, gad_tensor *safe, gad_tensor *count, gad_tensor *nscale) {
    gad_tensor *mp = gad__contig(op, mask);
    if (!mp) return -1;
    gad__pack(targets, P(safe));
    int64_t *t = P(safe), N = safe->numel;
    double cnt = 0;
    int rc = 0;
    for (int64_t i = 0; i < N; i++) {
        double m = weight_at(mp, i);
        cnt += fabs(m);
        if (m == 0) {
            t[i] = 0;
        } else if (!rc && (t[i] < 0 || t[i] >= V)) {
            gad__err(GAD_ERR_INDEX, op, "target %lld of row %lld out of bounds for %lld classes",
                     (long long)t[i], (long long)i, (long long)V);
            rc = -1;
        }
    }
    gad_release(mp);
    *(double *)P(count) = cnt;
    double ns = cnt == 0 ? 0 : -1.0 / cnt;
    if (F32(nscale)) *(float *)P(nscale) = (float)ns;
    else *(double *)P(nscale) = ns;
    return rc;
}

static int cpu_mce_fwd(const char *op, const gad_tensor *logits, const gad_tensor *safe,
                       const gad_tensor *mask, gad_tensor *probs, gad_tensor *loss) {
    int64_t N = logits->shape[0], V = logits->shape[1];
    double l;
    int rc = F32(logits) ? gad__mce_fwd_f32(P(logits), P(safe), P(mask), P(probs), N, V, &l)
                         : gad__mce_fwd_f64(P(logits), P(safe), P(mask), P(probs), N, V, &l);
    if (rc) return (gad__err(GAD_ERR_MEMORY, op, "cannot allocate"), -1);
    if (F32(loss)) *(float *)P(loss) = (float)l;
    else *(double *)P(loss) = l;
    return 0;
}

static void cpu_mce_bwd(const gad_tensor *probs, const gad_tensor *safe, const gad_tensor *mask,
                        const gad_tensor *count, const gad_tensor *gy, gad_tensor *d) {
    int64_t N = probs->shape[0], V = probs->shape[1];
    double cnt = *(const double *)P(count);
    double g = F32(gy) ? *(const float *)P(gy) : *(const double *)P(gy);
    double scale = cnt == 0 ? 0 : g / cnt;
    if (F32(d)) gad__mce_bwd_f32(P(probs), P(safe), P(mask), scale, P(d), N, V);
    else gad__mce_bwd_f64(P(probs), P(safe), P(mask), scale, P(d), N, V);
}

static void cpu_emb_fwd(const gad_tensor *table, const gad_tensor *idx, gad_tensor *y) {
    int64_t D = table->shape[1];
    if (F32(y)) gad__emb_fwd_f32(P(table), P(idx), P(y), idx->numel, D);
    else gad__emb_fwd_f64(P(table), P(idx), P(y), idx->numel, D);
}

static void cpu_emb_bwd(const gad_tensor *idx, const gad_tensor *gy, gad_tensor *gt) {
    int64_t D = gt->shape[1];
    if (F32(gt)) gad__emb_bwd_f32(P(idx), P(gy), P(gt), idx->numel, D);
    else gad__emb_bwd_f64(P(idx), P(gy), P(gt), idx->numel, D);
}

/* The kernels' pointer structs, filled from the tensors in GAD_HX order
 * (n is GAD_HX_NALL, or GAD_HX_NSAVE: s2 and xn2 are then NULL). */
typedef union {
    gad_helix_w_f32 f;
    gad_helix_w_f64 d;
} helix_w;
typedef union {
    gad_helix_saved_f32 f;
    gad_helix_saved_f64 d;
} helix_saved;

#define HELIX_FILL(fld)                                                        \
    do {                                                                       \
        w->fld.wa = P(t[GAD_HX_WA]);                                           \
        w->fld.wb = P(t[GAD_HX_WB]);                                           \
        w->fld.wo = P(t[GAD_HX_WO]);                                           \
        w->fld.wf1 = P(t[GAD_HX_WF1]);                                         \
        w->fld.wf2 = P(t[GAD_HX_WF2]);                                         \
        w->fld.g1 = P(t[GAD_HX_G1]);                                           \
        w->fld.g2 = P(t[GAD_HX_G2]);                                           \
        w->fld.g3 = P(t[GAD_HX_G3]);                                           \
        w->fld.g4 = P(t[GAD_HX_G4]);                                           \
        sv->fld.a = P(t[GAD_HX_A]);                                            \
        sv->fld.h = P(t[GAD_HX_H]);                                            \
        sv->fld.s2 = n > GAD_HX_S2 ? P(t[GAD_HX_S2]) : NULL;                   \
        sv->fld.out1 = P(t[GAD_HX_OUT1]);                                      \
        sv->fld.xn2 = n > GAD_HX_XN2 ? P(t[GAD_HX_XN2]) : NULL;                \
        sv->fld.f1 = P(t[GAD_HX_F1]);                                          \
        sv->fld.f2 = P(t[GAD_HX_F2]);                                          \
    } while (0)

static void helix_ptrs(gad_tensor *const *t, int n, helix_w *w, helix_saved *sv) {
    if (F32(t[GAD_HX_X])) HELIX_FILL(f);
    else HELIX_FILL(d);
}

static int cpu_helix_fwd(const char *op, gad_tensor *const *t, gad_tensor *y, double eps) {
    const gad_tensor *x = t[GAD_HX_X];
    int64_t B = x->shape[0], T = x->shape[1], D = x->shape[2];
    helix_w w;
    helix_saved sv;
    helix_ptrs(t, GAD_HX_NALL, &w, &sv);
    int rc = F32(x) ? gad__helix_fwd_f32(P(x), &w, &sv, P(y), B, T, D, eps)
                    : gad__helix_fwd_f64(P(x), &w, &sv, P(y), B, T, D, eps);
    return rc ? (gad__err(GAD_ERR_MEMORY, op, "cannot allocate GEMM scratch"), -1) : 0;
}

static int cpu_helix_bwd(const char *op, gad_tensor *const *t, const gad_tensor *gy,
                         gad_tensor *const *grads, double eps) {
    const gad_tensor *x = t[GAD_HX_X];
    int64_t B = x->shape[0], T = x->shape[1], D = x->shape[2];
    helix_w w;
    helix_saved sv;
    helix_ptrs(t, GAD_HX_NSAVE, &w, &sv);
    void *gp[GAD_HX_NIN]; /* the grads structs are ten pointers in the inputs' order */
    for (int i = 0; i < GAD_HX_NIN; i++) gp[i] = grads[i] ? P(grads[i]) : NULL;
    int rc = F32(x) ? gad__helix_bwd_f32(P(x), &w, &sv, P(gy), gp, B, T, D, eps)
                    : gad__helix_bwd_f64(P(x), &w, &sv, P(gy), gp, B, T, D, eps);
    return rc ? (gad__err(GAD_ERR_MEMORY, op, "cannot allocate GEMM scratch"), -1) : 0;
}

/* --------------------------------------------------------- optimizers */

static void cpu_adamw(gad_tensor *p, gad_tensor *m, gad_tensor *v, const gad_tensor *g,
                      const gad_adamw_coef *c) {
    if (F32(p)) gad__adamw_f32(P(p), P(m), P(v), P(g), p->numel, c);
    else gad__adamw_f64(P(p), P(m), P(v), P(g), p->numel, c);
}

static void cpu_sgd(gad_tensor *p, gad_tensor *b, const gad_tensor *g, const gad_sgd_coef *c) {
    void *pb = b ? P(b) : NULL;
    if (F32(p)) gad__sgd_f32(P(p), pb, P(g), p->numel, c);
    else gad__sgd_f64(P(p), pb, P(g), p->numel, c);
}

static double cpu_sumsq(const gad_tensor *g) {
    return F32(g) ? gad__sumsq_f32(P(g), g->numel) : gad__sumsq_f64(P(g), g->numel);
}

static void cpu_scale(gad_tensor *g, double s) {
    if (F32(g)) gad__scale_f32(P(g), g->numel, s);
    else gad__scale_f64(P(g), g->numel, s);
}

/* ---------------------------------------------------------------- table */

static const gad_be_scan cpu_scan = {.fwd = cpu_scan_fwd, .bwd = cpu_scan_bwd};
static const gad_be_rms_norm cpu_rms_norm = {.fwd = cpu_rms_fwd, .bwd = cpu_rms_bwd};
static const gad_be_masked_ce cpu_masked_ce = {
    .prep = cpu_mce_prep, .fwd = cpu_mce_fwd, .bwd = cpu_mce_bwd};
static const gad_be_embedding cpu_embedding = {.fwd = cpu_emb_fwd, .bwd = cpu_emb_bwd};
static const gad_be_helix cpu_helix = {.fwd = cpu_helix_fwd, .bwd = cpu_helix_bwd};

const gad_backend gad__cpu_backend = {
    .name = "cpu",
    .mem = &gad__host_mem, /* core's own */
    .unary = gad__k_unary,
    .binary = gad__k_binary,
    .grad = gad__k_grad,
    .convert = cpu_convert,
    .sum = gad__k_sum,
    .amax = gad__k_amax,
    .amax_mask = gad__k_amax_mask,
    .argmax = gad__k_argmax,
    .softmax = gad__k_softmax,
    .all_finite = cpu_all_finite,
    .index_check = gad__k_index_check,
    .gather = gad__k_gather,
    .scatter_add = gad__k_scatter_add,
    .take = gad__k_take,
    .cat_into = gad__k_cat_into,
    .matmul = gad__k_matmul,
    .adamw_step = cpu_adamw,
    .sgd_step = cpu_sgd,
    .sumsq = cpu_sumsq,
    .scale = cpu_scale,
    .scan = &cpu_scan,
    .rms_norm = &cpu_rms_norm,
    .masked_ce = &cpu_masked_ce,
    .embedding = &cpu_embedding,
    .helix = &cpu_helix,
};

/* GEMM keeps packing buffers per thread and may drive a BLAS with threads
 * of its own: core trims the one and tells the other of thread counts. */
GAD_CONSTRUCTOR(cpu_hooks) {
    gad__on_cache_trim(gad__gemm_release_scratch);
    gad__on_threads_set(gad__gemm_set_blas_threads);
}
