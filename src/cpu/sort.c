/* sort.c: the CPU's sort family (backend/sort.h): sort, top-k and argmin
 * along an axis, stamped for f32 and f64 (stamp.h) and for i64 and bool
 * (stamp_int.h) from sort_tmpl.h, the wrappers from the seam's tensors to
 * their raw arrays, and the sub-table the CPU's table points to. */
#include "backend/sort.h"
#include "cpu/cpu.h"
#include "cpu/fused.h"

#include <string.h>

#define GAD_STAMP "sort_tmpl.h"
#include "cpu/stamp.h"
#define GAD_STAMP "sort_tmpl.h"
#include "cpu/stamp_int.h"

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
    int64_t *ix = P(indices);
    int r;
    switch (x->dtype) {
    case GAD_F32: r = sort_rows_f32(P(x), v, ix, o, n, in, descending); break;
    case GAD_F64: r = sort_rows_f64(P(x), v, ix, o, n, in, descending); break;
    case GAD_I64: r = sort_rows_i64(P(x), v, ix, o, n, in, descending); break;
    default: r = sort_rows_u8(P(x), v, ix, o, n, in, descending); break;
    }
    if (r) gad__err(GAD_ERR_MEMORY, op, "no scratch memory for rows of %lld", (long long)n);
    return r;
}

static int cpu_topk(const char *op, const gad_tensor *x, int axis, int64_t k, int largest,
                    gad_tensor *values, gad_tensor *indices) {
    int64_t o, n, in;
    dims(x, axis, &o, &n, &in);
    void *v = P(values);
    int64_t *ix = P(indices);
    int r;
    switch (x->dtype) {
    case GAD_F32: r = topk_rows_f32(P(x), v, ix, o, n, in, k, largest); break;
    case GAD_F64: r = topk_rows_f64(P(x), v, ix, o, n, in, k, largest); break;
    case GAD_I64: r = topk_rows_i64(P(x), v, ix, o, n, in, k, largest); break;
    default: r = topk_rows_u8(P(x), v, ix, o, n, in, k, largest); break;
    }
    if (r) gad__err(GAD_ERR_MEMORY, op, "no scratch memory for rows of %lld", (long long)n);
    return r;
}

static void cpu_argmin(const gad_tensor *x, int axis, int largest, gad_tensor *y) {
    int64_t o, n, in;
    dims(x, axis, &o, &n, &in);
    switch (x->dtype) {
    case GAD_F32: argmin_rows_f32(P(x), P(y), o, n, in, largest); break;
    case GAD_F64: argmin_rows_f64(P(x), P(y), o, n, in, largest); break;
    case GAD_I64: argmin_rows_i64(P(x), P(y), o, n, in, largest); break;
    default: argmin_rows_u8(P(x), P(y), o, n, in, largest); break;
    }
}

const gad_be_sort gad__cpu_sort = {.sort = cpu_sort, .topk = cpu_topk, .argmin = cpu_argmin};
