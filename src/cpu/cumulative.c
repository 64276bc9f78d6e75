/* cumulative.c: the CPU's cumulative family (backend/cumulative.h): cumsum,
 * cumprod and cumprod's gradient along an axis, stamped for f32 and f64
 * (stamp.h) and, without the gradient, for i64 and bool (stamp_int.h) from
 * cumulative_tmpl.h, and the sub-table the CPU's table points to. */
#include "backend/cumulative.h"
#include "cpu/cpu.h"
#include "cpu/fused.h"

#define GAD_STAMP "cumulative_tmpl.h"
#include "cpu/stamp.h"
#define GAD_STAMP "cumulative_tmpl.h"
#include "cpu/stamp_int.h"

#define P(t) gad__ptr(t)

/* x seen as [outer, n, inner] around axis */
static void dims(const gad_tensor *x, int axis, int64_t *outer, int64_t *n, int64_t *inner) {
    *outer = *inner = 1;
    for (int d = 0; d < axis; d++) *outer *= x->shape[d];
    for (int d = axis + 1; d < x->rank; d++) *inner *= x->shape[d];
    *n = x->shape[axis];
}

static void cpu_cumsum(const gad_tensor *x, int axis, int reverse, gad_tensor *y) {
    int64_t o, n, in;
    dims(x, axis, &o, &n, &in);
    switch (x->dtype) {
    case GAD_F32: cumsum_rows_f32(P(x), P(y), o, n, in, reverse); break;
    case GAD_F64: cumsum_rows_f64(P(x), P(y), o, n, in, reverse); break;
    case GAD_I64: cumsum_rows_i64(P(x), P(y), o, n, in, reverse); break;
    default: cumsum_rows_u8(P(x), P(y), o, n, in, reverse); break;
    }
}

static void cpu_cumprod(const gad_tensor *x, int axis, gad_tensor *y) {
    int64_t o, n, in;
    dims(x, axis, &o, &n, &in);
    switch (x->dtype) {
    case GAD_F32: cumprod_rows_f32(P(x), P(y), o, n, in); break;
    case GAD_F64: cumprod_rows_f64(P(x), P(y), o, n, in); break;
    case GAD_I64: cumprod_rows_i64(P(x), P(y), o, n, in); break;
    default: cumprod_rows_u8(P(x), P(y), o, n, in); break;
    }
}

static void cpu_cumprod_bwd(const gad_tensor *x, const gad_tensor *gy, int axis, gad_tensor *gx) {
    int64_t o, n, in;
    dims(x, axis, &o, &n, &in);
    if (x->dtype == GAD_F32) cumprod_bwd_rows_f32(P(x), P(gy), P(gx), o, n, in);
    else cumprod_bwd_rows_f64(P(x), P(gy), P(gx), o, n, in);
}

const gad_be_cumulative gad__cpu_cumulative = {
    .cumsum = cpu_cumsum, .cumprod = cpu_cumprod, .cumprod_bwd = cpu_cumprod_bwd};
