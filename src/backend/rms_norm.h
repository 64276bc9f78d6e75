/* rms_norm.h: the RMS norm family of the seam (backend.h): y = x /
 * sqrt(mean(x^2) + eps) over the last axis, forward and backward. The
 * CPU's: src/cpu/rms_norm.c. */
#ifndef GAD_BE_RMS_NORM_H
#define GAD_BE_RMS_NORM_H

#include "backend/backend.h"

typedef struct gad_be_rms_norm {
    void (*fwd)(const gad_tensor *x, gad_tensor *y, double eps);
    void (*bwd)(const gad_tensor *x, const gad_tensor *g, gad_tensor *dx, double eps);
    int half; /* the entries take f16/bf16 too (backend.h) */
} gad_be_rms_norm;

#endif
