/* backend.c: the CPU's table of the seam (src/backend/backend.h): the
 * kernels of src/cpu behind the core entries, thin wrappers where an entry
 * takes tensors and a kernel raw arrays (the optimizers), and the fused
 * families' sub-tables, each defined in its family's file (scan.c,
 * rms_norm.c, masked_ce.c, embedding.c, helix.c, linear.c, ...). Registers the CPU's hooks into core (GEMM's scratch trim and
 * BLAS thread count) before main. */
#include "backend/backend.h"
#include "cpu/cpu.h"
#include "cpu/fused.h"
#include "cpu/gemm.h"
#include "cpu/optim.h"

#include <math.h>

#define F32(t) ((t)->dtype == GAD_F32)
#define P(t) gad__ptr(t)

/* ------------------------------------------------------- conversions */

static void cpu_convert(const gad_tensor *x, gad_tensor *y) {
    gad__host_convert(x, P(y), y->dtype);
}

#define ALL_FINITE(T)                                                          \
    do {                                                                       \
        const T *p = P(c);                                                     \
        for (int64_t i = 0; i < c->numel; i++)                                 \
            if (!isfinite(p[i])) finite = false;                               \
    } while (0)

/* A half value is Inf or NaN when its exponent bits are all ones. */
#define ALL_FINITE_HALF(EXP)                                                   \
    do {                                                                       \
        const uint16_t *p = P(c);                                              \
        for (int64_t i = 0; i < c->numel; i++)                                 \
            if ((p[i] & (EXP)) == (EXP)) finite = false;                       \
    } while (0)

static bool cpu_all_finite(const gad_tensor *x) {
    gad_tensor *c = gad__contig("all_finite", x);
    if (!c) return true; /* out of memory: no verdict, no false alarm */
    bool finite = true;
    if (c->dtype == GAD_F32) ALL_FINITE(float);
    else if (c->dtype == GAD_F64) ALL_FINITE(double);
    else if (c->dtype == GAD_BF16) ALL_FINITE_HALF(0x7f80u);
    else if (c->dtype == GAD_F16) ALL_FINITE_HALF(0x7c00u);
    gad_release(c);
    return finite;
}

/* --------------------------------------------------------- optimizers */

static void cpu_adamw(const gad_optim_item *items, int n) { gad__optim_update(items, n, 1); }

static void cpu_sgd(const gad_optim_item *items, int n) { gad__optim_update(items, n, 0); }

static double cpu_sumsq(const gad_tensor *g) {
    if (g->dtype == GAD_F16 || g->dtype == GAD_BF16)
        return gad__sumsq_half(g->dtype, P(g), g->numel);
    return F32(g) ? gad__sumsq_f32(P(g), g->numel) : gad__sumsq_f64(P(g), g->numel);
}

static void cpu_scale(gad_tensor *g, double s) {
    if (g->dtype == GAD_F16 || g->dtype == GAD_BF16) gad__scale_half(g->dtype, P(g), g->numel, s);
    else if (F32(g)) gad__scale_f32(P(g), g->numel, s);
    else gad__scale_f64(P(g), g->numel, s);
}

/* ---------------------------------------------------------------- table */

const gad_backend gad__cpu_backend = {
    .name = "cpu",
    .mem = &gad__host_mem, /* core's own */
    .unary = gad__k_unary,
    .binary = gad__k_binary,
    .grad = gad__k_grad,
    .convert = cpu_convert,
    .sum = gad__k_sum,
    .amax = gad__k_amax,
    .amax_mask = gad__k_amax_mask,
    .argmax = gad__k_argmax,
    .softmax = gad__k_softmax,
    .all_finite = cpu_all_finite,
    .index_check = gad__k_index_check,
    .gather = gad__k_gather,
    .scatter_add = gad__k_scatter_add,
    .take = gad__k_take,
    .cat_into = gad__k_cat_into,
    .matmul = gad__k_matmul,
    .adamw_step = cpu_adamw,
    .sgd_step = cpu_sgd,
    .sumsq = cpu_sumsq,
    .scale = cpu_scale,
    .scan = &gad__cpu_scan,
    .rms_norm = &gad__cpu_rms_norm,
    .masked_ce = &gad__cpu_masked_ce,
    .embedding = &gad__cpu_embedding,
    .helix = &gad__cpu_helix,
    .select = &gad__cpu_select,
    /* sort, cumulative, sampling */
    .sort = &gad__cpu_sort,
    .cumulative = &gad__cpu_cumulative,
    .sampling = &gad__cpu_sampling,
    /* pooling (issue 28) */
    .pool = &gad__cpu_pool,
    .conv = &gad__cpu_conv,
    .attention = &gad__cpu_attention,
    .norm = &gad__cpu_norm,
    .linear = &gad__cpu_linear,
};

/* GEMM keeps packing buffers per thread and may drive a BLAS with threads
 * of its own: core trims the one and tells the other of thread counts. */
GAD_CONSTRUCTOR(cpu_hooks) {
    gad__on_cache_trim(gad__gemm_release_scratch);
    gad__on_threads_set(gad__gemm_set_blas_threads);
}
