/* optim.c: the optimizers' update kernels (optim.h), stamped for f32 and f64
 * from optim_tmpl.h.
 *
 * CMakeLists.txt compiles this file with -ffp-contract=off, after the
 * library's -ffp-contract=fast: GCC and clang then keep every a * b + c
 * below as a multiply and an add, each rounded, even where the target has
 * fused multiply-adds (-march=native, AArch64). That is what makes the
 * updates the same bits on every build, as tests/test_optim.c checks
 * against a scalar reference. (clang's "#pragma STDC FP_CONTRACT OFF" would
 * not do: under -ffp-contract=fast clang ignores it, and GCC ignores it
 * always.) */
#include "cpu.h"
#include "cpu/optim.h"
#include "half_vec.h"

#include <math.h>

/* The sum of squares in optim.h's order: blocks of GAD_OPTIM_SUMSQ_BLK
 * elements, block(g, dt, lo, hi) summing one, the block sums added in order;
 * threaded through a table of one double a block, or on this thread when
 * that cannot be allocated (the same bits). dt: for block's use. */
typedef double (*sumsq_block_fn)(const void *g, int dt, int64_t lo, int64_t hi);

typedef struct {
    sumsq_block_fn block;
    const void *g;
    int dt;
    double *part;
    int64_t n;
} sumsq_ctx;

static void sumsq_range(void *arg, int64_t lo, int64_t hi) {
    const sumsq_ctx *a = arg;
    for (int64_t b = lo; b < hi; b++) {
        int64_t e = (b + 1) * GAD_OPTIM_SUMSQ_BLK;
        a->part[b] = a->block(a->g, a->dt, b * GAD_OPTIM_SUMSQ_BLK, e < a->n ? e : a->n);
    }
}

static double sumsq_blocks(sumsq_block_fn block, const void *g, int dt, int64_t n) {
    if (n <= 0) return 0;
    int64_t nb = (n + GAD_OPTIM_SUMSQ_BLK - 1) / GAD_OPTIM_SUMSQ_BLK;
    size_t bytes = (size_t)nb * sizeof(double);
    double total = 0;
    double *part = n > GAD_OPTIM_PAR_MIN ? gad__alloc(bytes) : NULL;
    if (!part) {
        for (int64_t b = 0; b < nb; b++) {
            int64_t e = (b + 1) * GAD_OPTIM_SUMSQ_BLK;
            total += block(g, dt, b * GAD_OPTIM_SUMSQ_BLK, e < n ? e : n);
        }
        return total;
    }
    sumsq_ctx a = {block, g, dt, part, n};
    gad__parallel_for(nb, GAD_OPTIM_PAR_MIN / 2 / GAD_OPTIM_SUMSQ_BLK, sumsq_range, &a);
    for (int64_t b = 0; b < nb; b++) total += part[b];
    gad__free(part, bytes);
    return total;
}

#define T float
#define SFX f32
#define SQRT sqrtf
#include "optim_tmpl.h"
#undef T
#undef SFX
#undef SQRT

#define T double
#define SFX f64
#define SQRT sqrt
#include "optim_tmpl.h"
#undef T
#undef SFX
#undef SQRT

/* ------------------------------------------- half gradients (clipping) */

/* Blocks of GAD_OPTIM_SUMSQ_BLK values are widened into a buffer on the
 * stack and summed as f32 blocks are; scaling goes through the same buffer
 * in chunks and rounds back with the vector conversions of gad_cast. */
static void half_widen(int dt, const uint16_t *x, float *y, int64_t n) {
    if (dt == GAD_BF16)
        gad__bf16_to_f32_n(x, y, n);
    else
        gad__f16_to_f32_n(x, y, n);
}

static double half_block_sumsq(const void *g, int dt, int64_t lo, int64_t hi) {
    float w[GAD_OPTIM_SUMSQ_BLK];
    half_widen(dt, (const uint16_t *)g + lo, w, hi - lo);
    return block_sumsq_f32(w, 0, hi - lo);
}

double gad__sumsq_half(int dt, const uint16_t *g, int64_t n) {
    return sumsq_blocks(half_block_sumsq, g, dt, n);
}

typedef struct {
    int dt;
    uint16_t *x;
    float c;
} half_ctx;

static void half_scale_range(void *arg, int64_t lo, int64_t hi) {
    const half_ctx *a = arg;
    float w[1024];
    for (int64_t i = lo; i < hi; i += 1024) {
        int64_t m = hi - i < 1024 ? hi - i : 1024;
        half_widen(a->dt, a->x + i, w, m);
        for (int64_t j = 0; j < m; j++) w[j] = w[j] * a->c;
        if (a->dt == GAD_BF16)
            gad__f32_to_bf16_n(w, a->x + i, m);
        else
            gad__f32_to_f16_n(w, a->x + i, m);
    }
}

void gad__scale_half(int dt, uint16_t *x, int64_t n, double c) {
    half_ctx a = {dt, x, (float)c};
    gad__parallel_for(n, GAD_OPTIM_PAR_MIN / 2, half_scale_range, &a);
}

/* ------------------------------------------------- the multi-tensor update */

/* The items' elements as one range: ends[k] is where item k's elements end
 * in it. */
typedef struct {
    const gad_optim_item *items;
    const int64_t *ends;
    int n, adamw;
} update_ctx;

static void update_item(const gad_optim_item *it, int adamw, int64_t lo, int64_t hi) {
    void *p = gad__ptr(it->p), *s1 = it->s1 ? gad__ptr(it->s1) : NULL;
    const void *g = gad__ptr(it->g);
    if (adamw) {
        void *s2 = gad__ptr(it->s2);
        if (it->p->dtype == GAD_F32) gad__adamw_f32(p, it->old, s1, s2, g, lo, hi, &it->c.adamw);
        else gad__adamw_f64(p, it->old, s1, s2, g, lo, hi, &it->c.adamw);
    } else {
        if (it->p->dtype == GAD_F32) gad__sgd_f32(p, it->old, s1, g, lo, hi, &it->c.sgd);
        else gad__sgd_f64(p, it->old, s1, g, lo, hi, &it->c.sgd);
    }
}

static void update_range(void *arg, int64_t lo, int64_t hi) {
    const update_ctx *a = arg;
    int k = 0, top = a->n; /* the first item that ends after lo */
    while (k < top) {
        int mid = k + (top - k) / 2;
        if (a->ends[mid] <= lo) k = mid + 1;
        else top = mid;
    }
    for (; k < a->n && lo < hi; k++) {
        int64_t start = a->ends[k] - a->items[k].p->numel;
        int64_t end = a->ends[k] < hi ? a->ends[k] : hi;
        if (end > lo) update_item(&a->items[k], a->adamw, lo - start, end - start);
        lo = end; /* ends[] rises, so end >= lo */
    }
}

void gad__optim_update(const gad_optim_item *items, int n, int adamw) {
    int64_t stack[64], *ends = stack, total = 0;
    size_t bytes = (size_t)n * sizeof *ends;
    if (n > 64 && !(ends = gad__alloc(bytes))) {
        /* no room for the table: one parameter at a time, each split */
        for (int k = 0; k < n; k++) gad__optim_update(&items[k], 1, adamw);
        return;
    }
    for (int k = 0; k < n; k++) ends[k] = total += items[k].p->numel;
    update_ctx a = {.items = items, .ends = ends, .n = n, .adamw = adamw};
    gad__parallel_for(total, GAD_OPTIM_PAR_MIN / 2, update_range, &a);
    if (ends != stack) gad__free(ends, bytes);
}
