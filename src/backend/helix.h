/* helix.h: the HELIX block family of the seam (backend.h): the block's
 * tensors in one array, and its fused forward and backward (docs/helix.md).
 * The CPU's: src/cpu/helix.c. */
#ifndef GAD_BE_HELIX_H
#define GAD_BE_HELIX_H

#include "backend/backend.h"

/* A HELIX block's tensors, in one array: the ten inputs (x, wa, wb, wo,
 * wf1, wf2, g1..g4), then the buffers the forward fills and the backward
 * reads (a, h, out1, f1, f2), then the forward's scratch (s2, xn2). */
enum {
    GAD_HX_X, GAD_HX_WA, GAD_HX_WB, GAD_HX_WO, GAD_HX_WF1, GAD_HX_WF2,
    GAD_HX_G1, GAD_HX_G2, GAD_HX_G3, GAD_HX_G4, GAD_HX_NIN,
    GAD_HX_A = GAD_HX_NIN, GAD_HX_H, GAD_HX_OUT1, GAD_HX_F1, GAD_HX_F2, GAD_HX_NSAVE,
    GAD_HX_S2 = GAD_HX_NSAVE, GAD_HX_XN2, GAD_HX_NALL
};

typedef struct gad_be_helix {
    /* t holds GAD_HX_NALL tensors (the forward) or GAD_HX_NSAVE (the
     * backward: s2 and xn2 are recomputed); grads the ten inputs' gradients
     * (NULL entries skipped). -1: scratch memory (recorded). */
    int (*fwd)(const char *op, gad_tensor *const *t, gad_tensor *y, double eps);
    int (*bwd)(const char *op, gad_tensor *const *t, const gad_tensor *gy,
               gad_tensor *const *grads, double eps);
    int half; /* the entries take f16/bf16 too (backend.h) */
} gad_be_helix;

#endif
