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

#include <math.h>

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
