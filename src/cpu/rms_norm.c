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

/* ---- half precision (issue 29): f16/bf16 rows
 * Blocks of rows are widened into f32 buffers, run through the f32 kernel
 * (threaded over the block's rows) and rounded once into the output: the
 * f32 op's bits on the widened input, with 2-byte memory traffic and
 * buffers of about HALF_BLOCK floats (a row longer than that: one row a
 * block). */
#define HALF_BLOCK ((int64_t)1 << 16)

static int half_rms(const gad_tensor *x, const gad_tensor *g, gad_tensor *out, double eps) {
    int64_t rows, n;
    rows_of(x, &rows, &n);
    if (rows == 0 || n == 0) return 0;
    int64_t per = HALF_BLOCK / n > 0 ? HALF_BLOCK / n : 1, cap = per * n;
    size_t bytes = (size_t)cap * sizeof(float) * (g ? 3 : 2);
    float *bx = gad__alloc(bytes);
    if (!bx) return gad__err(GAD_ERR_MEMORY, "rms_norm", "no memory for the f32 rows"), -1;
    float *bg = bx + cap, *by = g ? bg + cap : bg;
    int dt = x->dtype;
    for (int64_t r = 0; r < rows; r += per) {
        int64_t k = rows - r < per ? rows - r : per;
        size_t off = (size_t)(r * n);
        gad__half_widen(dt, k * n, (const uint16_t *)P(x) + off, 1, bx);
        if (g) {
            gad__half_widen(dt, k * n, (const uint16_t *)P(g) + off, 1, bg);
            gad__rms_bwd_f32(bx, bg, by, k, n, eps);
        } else {
            gad__rms_fwd_f32(bx, by, k, n, eps);
        }
        gad__half_narrow(dt, k * n, by, (uint16_t *)P(out) + off, 1);
    }
    gad__free(bx, bytes);
    return 0;
}

static void cpu_rms_fwd(const gad_tensor *x, gad_tensor *y, double eps) {
    int64_t rows, n;
    rows_of(x, &rows, &n);
    if (gad__is_half(x->dtype)) {
        half_rms(x, NULL, y, eps);
        return;
    }
    if (F32(x)) gad__rms_fwd_f32(P(x), P(y), rows, n, eps);
    else gad__rms_fwd_f64(P(x), P(y), rows, n, eps);
}

static void cpu_rms_bwd(const gad_tensor *x, const gad_tensor *g, gad_tensor *dx, double eps) {
    int64_t rows, n;
    rows_of(x, &rows, &n);
    if (gad__is_half(x->dtype)) {
        half_rms(x, g, dx, eps);
        return;
    }
    if (F32(x)) gad__rms_bwd_f32(P(x), P(g), P(dx), rows, n, eps);
    else gad__rms_bwd_f64(P(x), P(g), P(dx), rows, n, eps);
}

const gad_be_rms_norm gad__cpu_rms_norm = {.fwd = cpu_rms_fwd, .bwd = cpu_rms_bwd, .half = 1};
