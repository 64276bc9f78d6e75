/* helix.c: the CPU's HELIX block (docs/helix.md) family: its kernels,
 * stamped for f32 and f64 from helix_tmpl.h, the wrappers from the seam's
 * tensors to their raw arrays, and its sub-table (backend/helix.h), which
 * the CPU's table points to. */
#include "backend/helix.h"
#include "cpu/cpu.h"
#include "cpu/fused.h"
#include "cpu/gemm.h"
#include "cpu/vmath.h"

#include <tgmath.h>

#define GAD_STAMP "helix_tmpl.h"
#include "cpu/stamp.h"

#define F32(t) ((t)->dtype == GAD_F32)
#define P(t) gad__ptr(t)

/* The kernels' pointer structs, filled from the tensors in GAD_HX order
 * (n is GAD_HX_NALL, or GAD_HX_NSAVE: s2 and xn2 are then NULL). */
typedef union {
    gad_helix_w_f32 f;
    gad_helix_w_f64 d;
} helix_w;
typedef union {
    gad_helix_saved_f32 f;
    gad_helix_saved_f64 d;
} helix_saved;

#define HELIX_FILL(fld)                                                        \
    do {                                                                       \
        w->fld.wa = P(t[GAD_HX_WA]);                                           \
        w->fld.wb = P(t[GAD_HX_WB]);                                           \
        w->fld.wo = P(t[GAD_HX_WO]);                                           \
        w->fld.wf1 = P(t[GAD_HX_WF1]);                                         \
        w->fld.wf2 = P(t[GAD_HX_WF2]);                                         \
        w->fld.g1 = P(t[GAD_HX_G1]);                                           \
        w->fld.g2 = P(t[GAD_HX_G2]);                                           \
        w->fld.g3 = P(t[GAD_HX_G3]);                                           \
        w->fld.g4 = P(t[GAD_HX_G4]);                                           \
        sv->fld.a = P(t[GAD_HX_A]);                                            \
        sv->fld.h = P(t[GAD_HX_H]);                                            \
        sv->fld.s2 = n > GAD_HX_S2 ? P(t[GAD_HX_S2]) : NULL;                   \
        sv->fld.out1 = P(t[GAD_HX_OUT1]);                                      \
        sv->fld.xn2 = n > GAD_HX_XN2 ? P(t[GAD_HX_XN2]) : NULL;                \
        sv->fld.f1 = P(t[GAD_HX_F1]);                                          \
        sv->fld.f2 = P(t[GAD_HX_F2]);                                          \
    } while (0)

static void helix_ptrs(gad_tensor *const *t, int n, helix_w *w, helix_saved *sv) {
    if (F32(t[GAD_HX_X])) HELIX_FILL(f);
    else HELIX_FILL(d);
}

static int cpu_helix_fwd(const char *op, gad_tensor *const *t, gad_tensor *y, double eps) {
    const gad_tensor *x = t[GAD_HX_X];
    int64_t B = x->shape[0], T = x->shape[1], D = x->shape[2];
    helix_w w;
    helix_saved sv;
    helix_ptrs(t, GAD_HX_NALL, &w, &sv);
    int rc = F32(x) ? gad__helix_fwd_f32(P(x), &w, &sv, P(y), B, T, D, eps)
                    : gad__helix_fwd_f64(P(x), &w, &sv, P(y), B, T, D, eps);
    return rc ? (gad__err(GAD_ERR_MEMORY, op, "cannot allocate GEMM scratch"), -1) : 0;
}

static int cpu_helix_bwd(const char *op, gad_tensor *const *t, const gad_tensor *gy,
                         gad_tensor *const *grads, double eps) {
    const gad_tensor *x = t[GAD_HX_X];
    int64_t B = x->shape[0], T = x->shape[1], D = x->shape[2];
    helix_w w;
    helix_saved sv;
    helix_ptrs(t, GAD_HX_NSAVE, &w, &sv);
    void *gp[GAD_HX_NIN]; /* the grads structs are ten pointers in the inputs' order */
    for (int i = 0; i < GAD_HX_NIN; i++) gp[i] = grads[i] ? P(grads[i]) : NULL;
    int rc = F32(x) ? gad__helix_bwd_f32(P(x), &w, &sv, P(gy), gp, B, T, D, eps)
                    : gad__helix_bwd_f64(P(x), &w, &sv, P(gy), gp, B, T, D, eps);
    return rc ? (gad__err(GAD_ERR_MEMORY, op, "cannot allocate GEMM scratch"), -1) : 0;
}

const gad_be_helix gad__cpu_helix = {.fwd = cpu_helix_fwd, .bwd = cpu_helix_bwd};
