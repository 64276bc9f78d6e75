/* rms_norm.c: the CPU's RMS norm family: its kernels, stamped for f32 and
 * f64 from rms_norm_tmpl.h, the wrappers from the seam's tensors to their
 * raw arrays, and its sub-table (backend/rms_norm.h), which the CPU's table
 * points to. */
#include "backend/rms_norm.h"
#include "cpu/cpu.h"
#include "cpu/fused.h"

#include <tgmath.h>

#define GAD_STAMP "rms_norm_tmpl.h"
#include "cpu/stamp.h"

#define F32(t) ((t)->dtype == GAD_F32)
#define P(t) gad__ptr(t)

/* rows of the last axis */
static void rows_of(const gad_tensor *x, int64_t *rows, int64_t *n) {
    *n = x->shape[x->rank - 1];
    *rows = *n ? x->numel / *n : 0;
}

static void cpu_rms_fwd(const gad_tensor *x, gad_tensor *y, double eps) {
    int64_t rows, n;
    rows_of(x, &rows, &n);
    if (F32(x)) gad__rms_fwd_f32(P(x), P(y), rows, n, eps);
    else gad__rms_fwd_f64(P(x), P(y), rows, n, eps);
}

static void cpu_rms_bwd(const gad_tensor *x, const gad_tensor *g, gad_tensor *dx, double eps) {
    int64_t rows, n;
    rows_of(x, &rows, &n);
    if (F32(x)) gad__rms_bwd_f32(P(x), P(g), P(dx), rows, n, eps);
    else gad__rms_bwd_f64(P(x), P(g), P(dx), rows, n, eps);
}

const gad_be_rms_norm gad__cpu_rms_norm = {.fwd = cpu_rms_fwd, .bwd = cpu_rms_bwd};
