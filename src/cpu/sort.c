/* sort.c: the CPU's sort family (backend/sort.h): sort, top-k and argmin
 * along an axis, stamped for f32 and f64 from sort_tmpl.h, the wrappers
 * from the seam's tensors to their raw arrays, and the sub-table the CPU's
 * table points to. */
#include "backend/sort.h"
#include "cpu/cpu.h"
#include "cpu/fused.h"

#include <string.h>

#define GAD_STAMP "sort_tmpl.h"
#include "cpu/stamp.h"

#define P(t) gad__ptr(t)

/* x seen as [outer, n, inner] around axis */
static void dims(const gad_tensor *x, int axis, int64_t *outer, int64_t *n, int64_t *inner) {
    *outer = *inner = 1;
    for (int d = 0; d < axis; d++) *outer *= x->shape[d];
    for (int d = axis + 1; d < x->rank; d++) *inner *= x->shape[d];
    *n = x->shape[axis];
}

static int cpu_sort(const char *op, const gad_tensor *x, int axis, int descending,
                    gad_tensor *values, gad_tensor *indices) {
    int64_t o, n, in;
    dims(x, axis, &o, &n, &in);
    void *v = values ? P(values) : NULL;
    int r = x->dtype == GAD_F32 ? sort_rows_f32(P(x), v, P(indices), o, n, in, descending)
                                : sort_rows_f64(P(x), v, P(indices), o, n, in, descending);
    if (r) gad__err(GAD_ERR_MEMORY, op, "no scratch memory for rows of %lld", (long long)n);
    return r;
}

static int cpu_topk(const char *op, const gad_tensor *x, int axis, int64_t k, int largest,
                    gad_tensor *values, gad_tensor *indices) {
    int64_t o, n, in;
    dims(x, axis, &o, &n, &in);
    int r = x->dtype == GAD_F32
                ? topk_rows_f32(P(x), P(values), P(indices), o, n, in, k, largest)
                : topk_rows_f64(P(x), P(values), P(indices), o, n, in, k, largest);
    if (r) gad__err(GAD_ERR_MEMORY, op, "no scratch memory for rows of %lld", (long long)n);
    return r;
}

static void cpu_argmin(const gad_tensor *x, int axis, gad_tensor *y) {
    int64_t o, n, in;
    dims(x, axis, &o, &n, &in);
    if (x->dtype == GAD_F32) argmin_rows_f32(P(x), P(y), o, n, in);
    else argmin_rows_f64(P(x), P(y), o, n, in);
}

const gad_be_sort gad__cpu_sort = {.sort = cpu_sort, .topk = cpu_topk, .argmin = cpu_argmin};
