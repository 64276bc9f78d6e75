/* reduce.c: sum (and mean) over any set of axes, amax/argmax along an axis,
 * softmax and log_softmax along an axis. Float inputs; f32 is accumulated
 * in double. Every result is computed in an order that depends only on the
 * shapes, never on the thread count. f16 and bf16 inputs are widened a
 * tile at a time (cpu/half_tile.c) and take the f32 path, in the f32
 * path's order, the result rounded once to the half dtype: the bits of
 * the f32 op on the widened input, rounded. */
#include "backend/layout.h"
#include "cpu.h"
#include "cpu/vmath.h"

#include <math.h>
#include <stdlib.h>

/* A set of axes of a contiguous tensor: sizes and element strides. */
typedef gad_axis_group gspace;

static int64_t gs_seek(const gspace *g, int64_t k, int64_t *idx) {
    int64_t off = 0;
    for (int i = g->n - 1; i >= 0; i--) {
        idx[i] = k % g->size[i];
        k /= g->size[i];
        off += idx[i] * g->stride[i];
    }
    return off;
}

/* Odometer over the first `upto` axes of g; returns the new offset. */
static int64_t gs_next(const gspace *g, int upto, int64_t *idx, int64_t off) {
    for (int i = upto - 1; i >= 0; i--) {
        if (++idx[i] < g->size[i]) return off + g->stride[i];
        idx[i] = 0;
        off -= (g->size[i] - 1) * g->stride[i];
    }
    return off;
}

/* Sum of n contiguous elements in double, 16 independent accumulators (so
 * the loop vectorizes) combined in a fixed order. */
#define DEF_RUN_SUM(T, sfx)                                                    \
    static inline double run_sum_##sfx(const T *x, int64_t n) {                      \
        double s[16] = {0};                                                    \
        int64_t i = 0;                                                         \
        for (; i + 16 <= n; i += 16)                                           \
            for (int j = 0; j < 16; j++) s[j] += (double)x[i + j];             \
        double t = 0;                                                          \
        for (; i < n; i++) t += (double)x[i];                                  \
        for (int w = 8; w >= 1; w /= 2)                                        \
            for (int j = 0; j < w; j++) s[j] += s[j + w];                      \
        return s[0] + t;                                                       \
    }
DEF_RUN_SUM(float, f32)
DEF_RUN_SUM(double, f64)

/* run_sum_f32 of n half elements widened, in its order: tiles of a
 * multiple of 16 feed the same 16 accumulators. */
#define HALF_TILE 512
static double run_sum_half(int dt, const uint16_t *x, int64_t n) {
    _Alignas(64) float b[HALF_TILE];
    double s[16] = {0}, t = 0;
    for (int64_t i0 = 0; i0 < n; i0 += HALF_TILE) {
        int64_t k = n - i0 < HALF_TILE ? n - i0 : HALF_TILE, i = 0;
        gad__half_widen(dt, k, x + i0, 1, b);
        for (; i + 16 <= k; i += 16)
            for (int j = 0; j < 16; j++) s[j] += (double)b[i + j];
        for (; i < k; i++) t += (double)b[i];
    }
    for (int w = 8; w >= 1; w /= 2)
        for (int j = 0; j < w; j++) s[j] += s[j + w];
    return s[0] + t;
}

/* dt: the dtype's kernels (GAD_F32 or GAD_F64), or GAD_F16/GAD_BF16. */
static inline double run_sum(const void *x, int64_t n, int dt) {
    if (dt == GAD_F64) return run_sum_f64(x, n);
    if (dt == GAD_F32) return run_sum_f32(x, n);
    return run_sum_half(dt, x, n);
}

/* A half result is rounded to f32 first, as the f32 op's is, then to the
 * half dtype. */
static void store(void *y, int64_t i, double v, int dt) {
    if (dt == GAD_F64) ((double *)y)[i] = v;
    else if (dt == GAD_F32) ((float *)y)[i] = (float)v;
    else gad__half_put(dt, (char *)y + 2 * i, (float)v);
}

/* Element i of x (dtype dt) as double. */
static inline double load(const void *x, int64_t i, int dt) {
    if (dt == GAD_F64) return ((const double *)x)[i];
    if (dt == GAD_F32) return ((const float *)x)[i];
    return gad__half_get(dt, (const char *)x + 2 * i);
}

typedef struct sum_ctx {
    gspace kept, red;
    const char *x;
    char *y;
    size_t es;
    int dt;
    double scale;
    double *partial; /* full reductions: one per chunk */
    int64_t chunk;
} sum_ctx;

/* Full reduction: partial sums of fixed-size chunks. */
GAD_CLONES static void sum_chunks(void *vc, int64_t lo, int64_t hi) {
    sum_ctx *c = vc;
    int64_t n = c->red.total;
    for (int64_t k = lo; k < hi; k++) {
        int64_t a = k * c->chunk, b = a + c->chunk < n ? a + c->chunk : n;
        c->partial[k] = run_sum(c->x + (size_t)a * c->es, b - a, c->dt);
    }
}

/* The innermost axis is reduced: each output sums its reduced subspace,
 * whose last axis is contiguous. */
GAD_CLONES static void sum_inner(void *vc, int64_t lo, int64_t hi) {
    sum_ctx *c = vc;
    const gspace *r = &c->red;
    int64_t rin = r->size[r->n - 1], router = r->total / rin;
    int64_t kidx[GAD_MAX_RANK], ridx[GAD_MAX_RANK];
    for (int64_t k = lo; k < hi; k++) {
        int64_t base = gs_seek(&c->kept, k, kidx);
        int64_t roff = gs_seek(r, 0, ridx);
        double acc = 0;
        for (int64_t o = 0; o < router; o++) {
            acc += run_sum(c->x + (size_t)(base + roff) * c->es, rin, c->dt);
            roff = gs_next(r, r->n - 1, ridx, roff);
        }
        store(c->y, k, acc * c->scale, c->dt);
    }
}

/* The innermost axis is kept: runs of outputs along it accumulate rows,
 * TILE outputs at a time. */
#define TILE 512
GAD_CLONES static void sum_outer(void *vc, int64_t lo, int64_t hi) {
    sum_ctx *c = vc;
    const gspace *kp = &c->kept, *r = &c->red;
    int64_t kin = kp->size[kp->n - 1];
    int64_t kidx[GAD_MAX_RANK], ridx[GAD_MAX_RANK];
    double acc[TILE];
    _Alignas(64) float wide[TILE]; /* a row of half input, widened */
    for (int64_t k = lo; k < hi;) {
        int64_t base = gs_seek(kp, k, kidx);
        int64_t j0 = kidx[kp->n - 1];
        int64_t len = kin - j0;
        if (len > hi - k) len = hi - k;
        if (len > TILE) len = TILE;
        for (int64_t j = 0; j < len; j++) acc[j] = 0;
        int64_t roff = gs_seek(r, 0, ridx);
        for (int64_t o = 0; o < r->total; o++) {
            const char *row = c->x + (size_t)(base + roff) * c->es;
            if (c->dt == GAD_F64) {
                const double *p = (const double *)row;
                for (int64_t j = 0; j < len; j++) acc[j] += p[j];
            } else if (c->dt != GAD_F32) {
                gad__half_widen(c->dt, len, (const uint16_t *)row, 1, wide);
                for (int64_t j = 0; j < len; j++) acc[j] += (double)wide[j];
            } else {
                const float *p = (const float *)row;
                for (int64_t j = 0; j < len; j++) acc[j] += (double)p[j];
            }
            roff = gs_next(r, r->n, ridx, roff);
        }
        for (int64_t j = 0; j < len; j++)
            store(c->y, k + j, acc[j] * c->scale, c->dt);
        k += len;
    }
}

#define SUM_GRAIN 32768
#define MAX_CHUNKS 4096

void gad__k_sum(const gad_tensor *x, unsigned mask, double scale, gad_tensor *y) {
    sum_ctx c = {.x = gad__ptr(x), .y = gad__ptr(y), .es = gad__dsize(x->dtype),
                 .dt = x->dtype, .scale = scale};
    if (y->numel == 0) return;
    if (x->numel == 0) {
        for (int64_t i = 0; i < y->numel; i++) store(c.y, i, 0.0 * scale, c.dt);
        return;
    }
    /* adjacent axes of the same kind grouped (size-1 axes do not matter) */
    gad__reduce_groups(x, mask, &c.kept, &c.red);
    int nk = c.kept.n, nr = c.red.n;

    if (nr == 0) { /* nothing reduced: a scaled copy */
        for (int64_t i = 0; i < x->numel; i++) {
            store(c.y, i, load(c.x, i, c.dt) * scale, c.dt);
        }
        return;
    }
    if (nk == 0) {
        int64_t n = c.red.total;
        int64_t chunk = SUM_GRAIN;
        if ((n + chunk - 1) / chunk > MAX_CHUNKS) chunk = (n + MAX_CHUNKS - 1) / MAX_CHUNKS;
        int64_t nchunks = (n + chunk - 1) / chunk;
        double partial[MAX_CHUNKS];
        c.partial = partial;
        c.chunk = chunk;
        gad__parallel_for(nchunks, 2, sum_chunks, &c);
        double s = 0;
        for (int64_t k = 0; k < nchunks; k++) s += partial[k];
        store(c.y, 0, s * scale, c.dt);
        return;
    }
    /* Which kind is innermost decides the loop order. */
    int64_t work_per_out = c.red.total;
    int64_t grain = SUM_GRAIN / work_per_out + 1;
    bool inner_reduced = false;
    for (int d = x->rank - 1; d >= 0; d--)
        if (x->shape[d] != 1) {
            inner_reduced = (mask >> d) & 1;
            break;
        }
    gad__parallel_for(c.kept.total, grain, inner_reduced ? sum_inner : sum_outer, &c);
}

/* ------------------------------------------------------- amax and argmax */

typedef struct axis_ctx {
    const char *x;
    char *y;
    int64_t outer, n, inner;
    int dt;
    int log; /* softmax: 1 for log_softmax */
} axis_ctx;

static void axis_dims(const gad_tensor *x, int axis, axis_ctx *c) {
    c->outer = c->inner = 1;
    for (int d = 0; d < axis; d++) c->outer *= x->shape[d];
    for (int d = axis + 1; d < x->rank; d++) c->inner *= x->shape[d];
    c->n = x->shape[axis];
    c->x = gad__ptr(x);
    c->dt = x->dtype;
}

/* Element i of slice p (p = o * inner + j) as double. */
static inline double at(const axis_ctx *c, int64_t p, int64_t i) {
    int64_t o = p / c->inner, j = p % c->inner;
    int64_t k = (o * c->n + i) * c->inner + j;
    return load(c->x, k, c->dt);
}

GAD_CLONES static void amax_range(void *vc, int64_t lo, int64_t hi) {
    axis_ctx *c = vc;
    for (int64_t p = lo; p < hi; p++) {
        double m = -INFINITY;
        for (int64_t i = 0; i < c->n; i++) {
            double v = at(c, p, i);
            if (v > m) m = v; /* NaN never compares greater: skipped */
        }
        store(c->y, p, m, c->dt);
    }
}

GAD_CLONES static void argmax_range(void *vc, int64_t lo, int64_t hi) {
    axis_ctx *c = vc;
    for (int64_t p = lo; p < hi; p++) {
        double m = 0;
        int64_t best = -1;
        for (int64_t i = 0; i < c->n; i++) {
            double v = at(c, p, i);
            if (isnan(v)) continue;
            if (best < 0 || v > m) {
                m = v;
                best = i;
            }
        }
        ((int64_t *)c->y)[p] = best < 0 ? 0 : best;
    }
}

GAD_CLONES static void amax_mask_range(void *vc, int64_t lo, int64_t hi) {
    axis_ctx *c = vc;
    for (int64_t p = lo; p < hi; p++) {
        double m = -INFINITY;
        int64_t best = -1;
        for (int64_t i = 0; i < c->n; i++) {
            double v = at(c, p, i);
            if (v > m || (best < 0 && v == m)) { /* first max; NaN never */
                m = v;
                best = i;
            }
        }
        int64_t o = p / c->inner, j = p % c->inner;
        for (int64_t i = 0; i < c->n; i++) {
            int64_t k = (o * c->n + i) * c->inner + j;
            store(c->y, k, i == best ? 1.0 : 0.0, c->dt);
        }
    }
}

void gad__k_amax_mask(const gad_tensor *x, int axis, gad_tensor *y) {
    axis_ctx c;
    axis_dims(x, axis, &c);
    c.y = gad__ptr(y);
    gad__parallel_for(c.outer * c.inner, SUM_GRAIN / (c.n + 1) + 1, amax_mask_range, &c);
}

void gad__k_amax(const gad_tensor *x, int axis, gad_tensor *y) {
    axis_ctx c;
    axis_dims(x, axis, &c);
    c.y = gad__ptr(y);
    gad__parallel_for(c.outer * c.inner, SUM_GRAIN / (c.n + 1) + 1, amax_range, &c);
}

void gad__k_argmax(const gad_tensor *x, int axis, gad_tensor *y) {
    axis_ctx c;
    axis_dims(x, axis, &c);
    c.y = gad__ptr(y);
    gad__parallel_for(c.outer * c.inner, SUM_GRAIN / (c.n + 1) + 1, argmax_range, &c);
}

/* -------------------------------------------------------------- softmax */

/* e^v: vmath.h's f32 version (vectorizable), libm's for f64 */
#define EXP_f32(v) gad__expf(v)
#define EXP_f64(v) exp(v)

#define DEF_SOFTMAX_ROW(T, sfx)                                                \
    /* one slice: n elements at stride s */                                    \
    GAD_CLONES static void softmax_row_##sfx(const T *x, T *y, int64_t n,     \
                                             int64_t s,                        \
                                  int log_) {                                  \
        T m = -INFINITY;                                                       \
        for (int64_t i = 0; i < n; i++)                                        \
            if (x[i * s] > m) m = x[i * s];                                    \
        if (m == -INFINITY) m = 0; /* all -inf (or NaN): no shift */           \
        double sum = 0;                                                        \
        if (log_) {                                                            \
            for (int64_t i = 0; i < n; i++) sum += EXP_##sfx(x[i * s] - m);     \
            T ls = (T)log(sum);                                                \
            for (int64_t i = 0; i < n; i++) y[i * s] = x[i * s] - m - ls;      \
        } else {                                                               \
            for (int64_t i = 0; i < n; i++) {                                  \
                T e = EXP_##sfx(x[i * s] - m);                                 \
                y[i * s] = e;                                                  \
                sum += e;                                                      \
            }                                                                  \
            T inv = (T)(1.0 / sum);                                            \
            for (int64_t i = 0; i < n; i++) y[i * s] *= inv;                   \
        }                                                                      \
    }
DEF_SOFTMAX_ROW(float, f32)
DEF_SOFTMAX_ROW(double, f64)

/* A half row is widened into f32, takes the f32 path and is rounded back
 * (w: 2 n floats). */
static void softmax_row_half(const axis_ctx *c, int64_t k, float *w) {
    gad__half_widen(c->dt, c->n, (const uint16_t *)c->x + k, c->inner, w);
    softmax_row_f32(w, w + c->n, c->n, 1, c->log);
    gad__half_narrow(c->dt, c->n, w + c->n, (uint16_t *)c->y + k, c->inner);
}

#define SOFTMAX_STACK 2048
static void softmax_half_range(void *vc, int64_t lo, int64_t hi) {
    axis_ctx *c = vc;
    _Alignas(64) float stack[2 * SOFTMAX_STACK];
    float *w = c->n <= SOFTMAX_STACK ? stack : malloc((size_t)c->n * 2 * sizeof(float));
    if (!w) return; /* the op checked the size: only a failed malloc */
    for (int64_t p = lo; p < hi; p++) {
        int64_t o = p / c->inner, j = p % c->inner;
        softmax_row_half(c, o * c->n * c->inner + j, w);
    }
    if (w != stack) free(w);
}

GAD_CLONES static void softmax_range(void *vc, int64_t lo, int64_t hi) {
    axis_ctx *c = vc;
    for (int64_t p = lo; p < hi; p++) {
        int64_t o = p / c->inner, j = p % c->inner;
        int64_t k = o * c->n * c->inner + j;
        if (c->dt == GAD_F64)
            softmax_row_f64((const double *)c->x + k, (double *)c->y + k, c->n,
                            c->inner, c->log);
        else
            softmax_row_f32((const float *)c->x + k, (float *)c->y + k, c->n,
                            c->inner, c->log);
    }
}

void gad__k_softmax(const gad_tensor *x, int axis, int log, gad_tensor *y) {
    axis_ctx c;
    axis_dims(x, axis, &c);
    c.y = gad__ptr(y);
    c.log = log;
    gad__parallel_for(c.outer * c.inner, SUM_GRAIN / (c.n + 1) + 1,
                      gad__is_half(c.dt) ? softmax_half_range : softmax_range, &c);
}
