/* conv.c: the CPU's convolution family (backend/conv.h): its kernels,
 * stamped for f32 and f64 from conv_tmpl.h on gad's GEMM (gemm.h), the
 * wrappers from the seam's tensors to raw arrays, and its sub-table, which
 * the CPU's table points to. */
#include "backend/conv.h"
#include "cpu/conv_kern.h"
#include "cpu/cpu.h"
#include "cpu/fused.h"
#include "cpu/gemm.h"
#include "cpu/gemm_int.h"

#include <stdatomic.h>
#include <string.h>

/* The stamped kernels (conv_tmpl.h), raw packed arrays. */
#define CONV_DECLS(T, sfx)                                                     \
    int gad__conv_fwd_##sfx(const char *op, const T *x, const T *w, const T *bias, T *y, \
                            const gad_conv_geom *g);                           \
    int gad__conv_bwd_data_##sfx(const char *op, const T *gy, const T *w, const T *bias, \
                                 T *dx, const gad_conv_geom *g);               \
    int gad__conv_bwd_weight_##sfx(const char *op, const T *x, const T *gy, T *dw, \
                                   const gad_conv_geom *g);
CONV_DECLS(float, f32)
CONV_DECLS(double, f64)

/* For tests only (declared where used, tests/test_conv.c): 0 lets each
 * product pick its path (depthwise loops included), 1 forces the patch
 * matrix, 2 the shifted GEMMs wherever the stride is 1. */
atomic_int gad__conv_test_path;
void gad__conv_test_force(int path);
void gad__conv_test_force(int path) { atomic_store(&gad__conv_test_path, path); }

#define GAD_STAMP "conv_tmpl.h"
#include "cpu/stamp.h"

#define F32(t) ((t)->dtype == GAD_F32)
#define P(t) gad__ptr(t)

#define PB(t) ((t) ? gad__ptr(t) : NULL)

static int cpu_conv_fwd(const char *op, const gad_tensor *x, const gad_tensor *w,
                        const gad_tensor *bias, gad_tensor *y, const gad_conv_geom *g) {
    return F32(x) ? gad__conv_fwd_f32(op, P(x), P(w), PB(bias), P(y), g)
                  : gad__conv_fwd_f64(op, P(x), P(w), PB(bias), P(y), g);
}

static int cpu_conv_bwd_data(const char *op, const gad_tensor *gy, const gad_tensor *w,
                             const gad_tensor *bias, gad_tensor *dx, const gad_conv_geom *g) {
    return F32(gy) ? gad__conv_bwd_data_f32(op, P(gy), P(w), PB(bias), P(dx), g)
                   : gad__conv_bwd_data_f64(op, P(gy), P(w), PB(bias), P(dx), g);
}

static int cpu_conv_bwd_weight(const char *op, const gad_tensor *x, const gad_tensor *gy,
                               gad_tensor *dw, const gad_conv_geom *g) {
    return F32(x) ? gad__conv_bwd_weight_f32(op, P(x), P(gy), P(dw), g)
                  : gad__conv_bwd_weight_f64(op, P(x), P(gy), P(dw), g);
}

const gad_be_conv gad__cpu_conv = {
    .fwd = cpu_conv_fwd, .bwd_data = cpu_conv_bwd_data, .bwd_weight = cpu_conv_bwd_weight};
