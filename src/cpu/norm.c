/* norm.c: the CPU's normalization family (batch norm's statistics, its
 * affine normalization and its backward; group norm's fused forward and
 * backward; backend/norm.h): the kernels,
 * stamped for f32 and f64 from norm_tmpl.h, the wrappers from the seam's
 * tensors to raw arrays, and the sub-table that the CPU's table points to. */
#include "backend/norm.h"
#include "cpu/cpu.h"
#include "cpu/fused.h"

#include <string.h>
#include <tgmath.h>

#define GAD_STAMP "norm_tmpl.h"
#include "cpu/stamp.h"

#define F32(t) ((t)->dtype == GAD_F32)
#define P(t) ((t) ? gad__ptr(t) : NULL)

/* x as [N, C, S] */
static void dims_of(const gad_tensor *x, int64_t *N, int64_t *C, int64_t *S) {
    *N = x->shape[0];
    *C = x->rank > 1 ? x->shape[1] : 1;
    *S = 1;
    for (int d = 2; d < x->rank; d++) *S *= x->shape[d];
}

static void cpu_norm_stats(const gad_tensor *x, gad_tensor *mean, gad_tensor *invstd,
                           gad_tensor *rm, gad_tensor *rv, double momentum, double eps) {
    int64_t N, C, S;
    dims_of(x, &N, &C, &S);
    if (F32(x)) gad__norm_stats_f32(P(x), P(mean), P(invstd), P(rm), P(rv), N, C, S, momentum, eps);
    else gad__norm_stats_f64(P(x), P(mean), P(invstd), P(rm), P(rv), N, C, S, momentum, eps);
}

static void cpu_norm_fwd(const gad_tensor *x, const gad_tensor *mean, const gad_tensor *invstd,
                         const gad_tensor *w, const gad_tensor *b, gad_tensor *y) {
    int64_t N, C, S;
    dims_of(x, &N, &C, &S);
    if (F32(x)) gad__norm_fwd_f32(P(x), P(mean), P(invstd), P(w), P(b), P(y), N, C, S);
    else gad__norm_fwd_f64(P(x), P(mean), P(invstd), P(w), P(b), P(y), N, C, S);
}

static void cpu_norm_bwd(const gad_tensor *x, const gad_tensor *g, const gad_tensor *mean,
                         const gad_tensor *invstd, const gad_tensor *w, int batch,
                         gad_tensor *dx, gad_tensor *dw, gad_tensor *db) {
    int64_t N, C, S;
    dims_of(x, &N, &C, &S);
    if (F32(x))
        gad__norm_bwd_f32(P(x), P(g), P(mean), P(invstd), P(w), batch, P(dx), P(dw), P(db), N, C,
                          S);
    else
        gad__norm_bwd_f64(P(x), P(g), P(mean), P(invstd), P(w), batch, P(dx), P(dw), P(db), N, C,
                          S);
}

static void cpu_group_fwd(const gad_tensor *x, int64_t G, const gad_tensor *w,
                          const gad_tensor *b, gad_tensor *y, gad_tensor *mean,
                          gad_tensor *invstd, gad_tensor *rm, gad_tensor *rv, double momentum,
                          double eps) {
    int64_t N, C, S;
    dims_of(x, &N, &C, &S);
    if (F32(x))
        gad__gn_fwd_f32(P(x), P(w), P(b), P(y), P(mean), P(invstd), P(rm), P(rv), N, C, G, S,
                        momentum, eps);
    else
        gad__gn_fwd_f64(P(x), P(w), P(b), P(y), P(mean), P(invstd), P(rm), P(rv), N, C, G, S,
                        momentum, eps);
}

static int cpu_group_bwd(const char *op, const gad_tensor *x, const gad_tensor *g,
                         const gad_tensor *mean, const gad_tensor *invstd, const gad_tensor *w,
                         int64_t G, gad_tensor *dx, gad_tensor *dw, gad_tensor *db) {
    int64_t N, C, S;
    dims_of(x, &N, &C, &S);
    int rc = F32(x) ? gad__gn_bwd_f32(P(x), P(g), P(mean), P(invstd), P(w), P(dx), P(dw), P(db),
                                      N, C, G, S)
                    : gad__gn_bwd_f64(P(x), P(g), P(mean), P(invstd), P(w), P(dx), P(dw), P(db),
                                      N, C, G, S);
    if (rc) return (gad__err(GAD_ERR_MEMORY, op, "cannot allocate"), -1);
    return 0;
}

const gad_be_norm gad__cpu_norm = {.stats = cpu_norm_stats, .fwd = cpu_norm_fwd,
                                   .bwd = cpu_norm_bwd, .group_fwd = cpu_group_fwd,
                                   .group_bwd = cpu_group_bwd};
