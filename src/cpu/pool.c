/* pool.c: the CPU's pooling family: max and average pooling, forward and
 * backward, stamped for f32 and f64 from pool_tmpl.h, the wrappers from the
 * seam's tensors to raw arrays, and the sub-table (backend/pool.h) the
 * CPU's table points to. */
#include "backend/pool.h"
#include "cpu/cpu.h"
#include "cpu/fused.h"

#include <math.h>
#include <string.h>

#define GAD_STAMP "pool_tmpl.h"
#include "cpu/stamp.h"

#define F32(t) ((t)->dtype == GAD_F32)
#define P(t) gad__ptr(t)

/* The planes of a tensor pooled over its last two axes (H = 1 for 1-d). */
static int64_t planes(const gad_tensor *t, int64_t plane) {
    return plane ? t->numel / plane : 0;
}

static void cpu_max_fwd(const gad_tensor *x, gad_tensor *y, gad_tensor *idx,
                        const gad_pool_geom *g) {
    int64_t n = planes(x, g->h.n_in * g->w.n_in);
    if (!y->numel) return;
    int64_t *ip = idx ? P(idx) : NULL;
    if (F32(x)) pool_max_fwd_f32(P(x), P(y), ip, n, g);
    else pool_max_fwd_f64(P(x), P(y), ip, n, g);
}

static void cpu_max_bwd(const gad_tensor *gy, const gad_tensor *idx, gad_tensor *gx,
                        int64_t hw) {
    int64_t n = planes(gx, hw);
    if (!gx->numel) return;
    int64_t L = gy->numel / n;
    if (F32(gx)) pool_max_bwd_f32(P(gy), P(idx), P(gx), n, L, hw);
    else pool_max_bwd_f64(P(gy), P(idx), P(gx), n, L, hw);
}

static void cpu_avg_fwd(const gad_tensor *x, gad_tensor *y, const gad_pool_geom *g) {
    int64_t n = planes(x, g->h.n_in * g->w.n_in);
    if (!y->numel) return;
    if (F32(x)) pool_avg_fwd_f32(P(x), P(y), n, g);
    else pool_avg_fwd_f64(P(x), P(y), n, g);
}

static void cpu_avg_bwd(const gad_tensor *gy, gad_tensor *gx, const gad_pool_geom *g) {
    int64_t n = planes(gx, g->h.n_in * g->w.n_in);
    if (!gx->numel) return;
    if (F32(gx)) pool_avg_bwd_f32(P(gy), P(gx), n, g);
    else pool_avg_bwd_f64(P(gy), P(gx), n, g);
}

const gad_be_pool gad__cpu_pool = {.max_fwd = cpu_max_fwd,
                                   .max_bwd = cpu_max_bwd,
                                   .avg_fwd = cpu_avg_fwd,
                                   .avg_bwd = cpu_avg_bwd};
