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

/* f16/bf16 blocks (issue 29): the f32 kernels on f32 copies of every
 * tensor (cpu.h's half set); y, the saved buffers a, h, out1, f1, f2 and
 * the gradients rounded once. The node keeps the half buffers (half the
 * activation memory of an f32 block), and the backward reads them
 * widened: their rounding is the one difference from the f32 block's
 * gradients on the same inputs. The scratch s2 and xn2 stay f32. */
static void half_ptrs(float *const *p, gad_helix_w_f32 *w, gad_helix_saved_f32 *sv) {
    *w = (gad_helix_w_f32){p[GAD_HX_WA], p[GAD_HX_WB], p[GAD_HX_WO], p[GAD_HX_WF1],
                           p[GAD_HX_WF2], p[GAD_HX_G1], p[GAD_HX_G2], p[GAD_HX_G3],
                           p[GAD_HX_G4]};
    *sv = (gad_helix_saved_f32){.a = p[GAD_HX_A], .h = p[GAD_HX_H], .s2 = p[GAD_HX_S2],
                                .out1 = p[GAD_HX_OUT1], .xn2 = p[GAD_HX_XN2],
                                .f1 = p[GAD_HX_F1], .f2 = p[GAD_HX_F2]};
}

static int half_helix_fwd(const char *op, gad_tensor *const *t, gad_tensor *y, double eps) {
    const gad_tensor *x = t[GAD_HX_X];
    int64_t B = x->shape[0], T = x->shape[1], D = x->shape[2];
    /* slots: the block's tensors in GAD_HX order, then y */
    const gad_tensor *ts[GAD_HX_NALL + 1];
    bool in[GAD_HX_NALL + 1];
    for (int i = 0; i < GAD_HX_NALL; i++) {
        ts[i] = t[i];
        in[i] = i < GAD_HX_NIN;
    }
    ts[GAD_HX_NALL] = y;
    in[GAD_HX_NALL] = 0;
    gad_half_set s;
    if (gad__half_set_new(op, &s, GAD_HX_NALL + 1, ts, in)) return -1;
    gad_helix_w_f32 w;
    gad_helix_saved_f32 sv;
    half_ptrs(s.p, &w, &sv);
    int rc = gad__helix_fwd_f32(s.p[GAD_HX_X], &w, &sv, s.p[GAD_HX_NALL], B, T, D, eps);
    if (rc == 0) {
        gad__half_set_out(&s, GAD_HX_NALL, y);
        for (int i = GAD_HX_A; i < GAD_HX_NSAVE; i++) gad__half_set_out(&s, i, t[i]);
    }
    gad__half_set_free(&s);
    return rc ? (gad__err(GAD_ERR_MEMORY, op, "cannot allocate GEMM scratch"), -1) : 0;
}

static int half_helix_bwd(const char *op, gad_tensor *const *t, const gad_tensor *gy,
                          gad_tensor *const *grads, double eps) {
    const gad_tensor *x = t[GAD_HX_X];
    int64_t B = x->shape[0], T = x->shape[1], D = x->shape[2];
    /* slots: the inputs and saved buffers, gy, then the gradients */
    enum { GY = GAD_HX_NSAVE, G0 = GAD_HX_NSAVE + 1, N = G0 + GAD_HX_NIN };
    _Static_assert(N <= GAD_HALF_SET_MAX, "the half set holds a block's backward");
    const gad_tensor *ts[N];
    bool in[N];
    for (int i = 0; i < N; i++) {
        ts[i] = i < GY ? t[i] : i == GY ? gy : grads[i - G0];
        in[i] = i <= GY;
    }
    gad_half_set s;
    if (gad__half_set_new(op, &s, N, ts, in)) return -1;
    gad_helix_w_f32 w;
    gad_helix_saved_f32 sv;
    float *p[GAD_HX_NALL];
    for (int i = 0; i < GAD_HX_NALL; i++) p[i] = i < GAD_HX_NSAVE ? s.p[i] : NULL;
    half_ptrs(p, &w, &sv);
    void *gp[GAD_HX_NIN];
    for (int i = 0; i < GAD_HX_NIN; i++) gp[i] = s.p[G0 + i];
    int rc = gad__helix_bwd_f32(s.p[GAD_HX_X], &w, &sv, s.p[GY], gp, B, T, D, eps);
    for (int i = 0; rc == 0 && i < GAD_HX_NIN; i++)
        if (grads[i]) gad__half_set_out(&s, G0 + i, grads[i]);
    gad__half_set_free(&s);
    return rc ? (gad__err(GAD_ERR_MEMORY, op, "cannot allocate GEMM scratch"), -1) : 0;
}

static int cpu_helix_fwd(const char *op, gad_tensor *const *t, gad_tensor *y, double eps) {
    const gad_tensor *x = t[GAD_HX_X];
    if (gad__is_half(x->dtype)) return half_helix_fwd(op, t, y, eps);
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
    if (gad__is_half(x->dtype)) return half_helix_bwd(op, t, gy, grads, eps);
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

const gad_be_helix gad__cpu_helix = {.fwd = cpu_helix_fwd, .bwd = cpu_helix_bwd, .half = 1};
