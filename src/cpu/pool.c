/* pool.c: the CPU's pooling family: max and average pooling, forward and
 * backward, stamped for f32 and f64 from pool_tmpl.h, the wrappers from the
 * seam's tensors to raw arrays, and the sub-table (backend/pool.h) the
 * CPU's table points to. */
#include "backend/pool.h"
#include "cpu/cpu.h"
#include "cpu/fused.h"

#include <math.h>
#include <string.h>

/* The blocks o in [lo, hi) (of L) whose column o * s + t lies in [0, n). */
static inline void fold_span(int64_t t, int64_t s, int64_t n, int64_t L, int64_t *lo,
                             int64_t *hi) {
    int64_t a = t >= 0 ? 0 : (-t + s - 1) / s, b = n - 1 - t < 0 ? 0 : (n - 1 - t) / s + 1;
    *lo = a < L ? a : L;
    *hi = b < L ? b : L;
}

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
    if (!gy->numel) { /* an adaptive output of size 0: nothing reaches x */
        memset(P(gx), 0, (size_t)gx->numel * gad_dtype_size(gx->dtype));
        return;
    }
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
    if (!gy->numel) { /* as in cpu_max_bwd (the windows were not built) */
        memset(P(gx), 0, (size_t)gx->numel * gad_dtype_size(gx->dtype));
        return;
    }
    if (F32(gx)) pool_avg_bwd_f32(P(gy), P(gx), n, g);
    else pool_avg_bwd_f64(P(gy), P(gx), n, g);
}

/* pad: rows of y from rows of x through the maps, the centre of each row
 * one memcpy and the edges element by element; threads own planes. */
typedef struct {
    const char *x;
    char *y;
    const int64_t *const *map;
    const int64_t *in, *out;
    int64_t lo;
    size_t es;
} pad_ctx;

static void pad_range(void *vc, int64_t p0, int64_t p1) {
    const pad_ctx *c = vc;
    size_t es = c->es;
    int64_t D = c->in[0], H = c->in[1], W = c->in[2];
    int64_t Do = c->out[0], Ho = c->out[1], Wo = c->out[2], lo = c->lo;
    const int64_t *mw = c->map[2];
    for (int64_t p = p0; p < p1; p++)
        for (int64_t od = 0; od < Do; od++)
            for (int64_t oh = 0; oh < Ho; oh++) {
                int64_t row = (p * D + c->map[0][od]) * H + c->map[1][oh];
                const char *src = c->x + (size_t)(row * W) * es;
                char *dst = c->y + (size_t)(((p * Do + od) * Ho + oh) * Wo) * es;
                memcpy(dst + (size_t)lo * es, src, (size_t)W * es);
                if (es == 4) {
                    for (int64_t o = 0; o < lo; o++)
                        ((uint32_t *)dst)[o] = ((const uint32_t *)src)[mw[o]];
                    for (int64_t o = lo + W; o < Wo; o++)
                        ((uint32_t *)dst)[o] = ((const uint32_t *)src)[mw[o]];
                } else if (es == 2) { /* f16, bf16 */
                    for (int64_t o = 0; o < lo; o++)
                        ((uint16_t *)dst)[o] = ((const uint16_t *)src)[mw[o]];
                    for (int64_t o = lo + W; o < Wo; o++)
                        ((uint16_t *)dst)[o] = ((const uint16_t *)src)[mw[o]];
                } else if (es == 1) { /* bool */
                    for (int64_t o = 0; o < lo; o++) dst[o] = src[mw[o]];
                    for (int64_t o = lo + W; o < Wo; o++) dst[o] = src[mw[o]];
                } else {
                    for (int64_t o = 0; o < lo; o++)
                        ((uint64_t *)dst)[o] = ((const uint64_t *)src)[mw[o]];
                    for (int64_t o = lo + W; o < Wo; o++)
                        ((uint64_t *)dst)[o] = ((const uint64_t *)src)[mw[o]];
                }
            }
}

static void cpu_pad(const gad_tensor *x, gad_tensor *y, const int64_t *const map[3],
                    const int64_t in[3], const int64_t out[3], int64_t lo) {
    if (!y->numel) return;
    pad_ctx c = {.x = P(x), .y = P(y), .map = map, .in = in, .out = out, .lo = lo,
                 .es = gad__dsize(x->dtype)};
    int64_t plane = out[0] * out[1] * out[2];
    gad__parallel_for(x->numel / (in[0] * in[1] * in[2]), 32768 / (plane + 1) + 1, pad_range, &c);
}

static void cpu_im2col(const gad_tensor *x, gad_tensor *cols, const gad_fold_geom *g) {
    if (!cols->numel) return;
    int64_t n = planes(x, g->H * g->W);
    if (F32(x)) pool_im2col_f32(P(x), P(cols), n, g);
    else pool_im2col_f64(P(x), P(cols), n, g);
}

static void cpu_col2im(const gad_tensor *cols, gad_tensor *x, const gad_fold_geom *g) {
    if (!x->numel) return;
    int64_t n = planes(x, g->H * g->W);
    if (F32(x)) pool_col2im_f32(P(cols), P(x), n, g);
    else pool_col2im_f64(P(cols), P(x), n, g);
}

static void cpu_interp_fwd(const gad_tensor *x, gad_tensor *y, const gad_interp_geom *g) {
    if (!y->numel) return;
    int64_t n = planes(x, g->h.n_in * g->w.n_in);
    if (F32(x)) pool_interp_f32(P(x), P(y), n, g, 0);
    else pool_interp_f64(P(x), P(y), n, g, 0);
}

static void cpu_interp_bwd(const gad_tensor *gy, gad_tensor *gx, const gad_interp_geom *g) {
    if (!gx->numel) return;
    int64_t n = planes(gx, g->h.n_in * g->w.n_in);
    if (F32(gx)) pool_interp_f32(P(gy), P(gx), n, g, 1);
    else pool_interp_f64(P(gy), P(gx), n, g, 1);
}

const gad_be_pool gad__cpu_pool = {.interp_fwd = cpu_interp_fwd,
                                   .interp_bwd = cpu_interp_bwd,
                                   .im2col = cpu_im2col,
                                   .col2im = cpu_col2im,
                                   .max_fwd = cpu_max_fwd,
                                   .max_bwd = cpu_max_bwd,
                                   .avg_fwd = cpu_avg_fwd,
                                   .avg_bwd = cpu_avg_bwd,
                                   .pad = cpu_pad};
