/* rms_norm_tmpl.h: RMS norm's forward and backward, written once for an
 * element type T with suffix SFX (included by rms_norm.c for float and
 * double). Loops are split over threads by independent rows or channels,
 * never across a sum, so results do not depend on the thread count. */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(CAT(name, _), SFX)

#include "cpu/row_tmpl.h"

typedef struct {
    const T *x, *g;
    T *y;
    int64_t n;
    double eps;
} FN(rms_ctx);

GAD_CLONES static void FN(rms_fwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(rms_ctx) *c = vc;
    for (int64_t r = lo; r < hi; r++) {
        const T *x = c->x + r * c->n;
        T *y = c->y + r * c->n;
        T inv = (T)FN(rms_inv)(x, c->n, c->eps);
        for (int64_t j = 0; j < c->n; j++) y[j] = x[j] * inv;
    }
}

void FN(gad__rms_fwd)(const T *x, T *y, int64_t rows, int64_t n, double eps) {
    FN(rms_ctx) c = {.x = x, .y = y, .n = n, .eps = eps};
    gad__parallel_for(rows, 4096 / (n + 1) + 1, FN(rms_fwd_range), &c);
}

GAD_CLONES static void FN(rms_bwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(rms_ctx) *c = vc;
    for (int64_t r = lo; r < hi; r++) {
        const T *x = c->x + r * c->n, *g = c->g + r * c->n;
        T *dx = c->y + r * c->n;
        double inv = FN(rms_inv)(x, c->n, c->eps), dot = FN(dot)(x, g, NULL, c->n);
        T a = (T)inv, b = (T)(inv * inv * inv * dot / (double)c->n);
        for (int64_t j = 0; j < c->n; j++) dx[j] = g[j] * a - x[j] * b;
    }
}

void FN(gad__rms_bwd)(const T *x, const T *g, T *dx, int64_t rows, int64_t n, double eps) {
    FN(rms_ctx) c = {.x = x, .g = g, .y = dx, .n = n, .eps = eps};
    gad__parallel_for(rows, 4096 / (n + 1) + 1, FN(rms_bwd_range), &c);
}

#undef FN
#undef CAT
#undef CAT_
