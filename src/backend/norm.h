/* norm.h: the normalization family of the seam (backend.h): batch norm's
 * per-channel statistics, its affine normalization and its backward, on x
 * seen as [N, C, S] (S the product of the dims after the channel axis, 1
 * for a rank-2 x), and group norm's (instance norm's: groups = C) forward
 * and backward, fused (src/ops/norm.c). The CPU's: src/cpu/norm.c. Every
 * tensor is packed; per-channel tensors are [C] of x's dtype. */
#ifndef GAD_BE_NORM_H
#define GAD_BE_NORM_H

#include "backend/backend.h"

typedef struct gad_be_norm {
    /* mean[c] and invstd[c] = 1 / sqrt(var[c] + eps) over N and S, var
     * biased; rm, rv (both or neither) updated in place with momentum m:
     * rm = (1 - m) rm + m mean, rv = (1 - m) rv + m var * M / (M - 1), M =
     * N S (M = 1: var itself). */
    void (*stats)(const gad_tensor *x, gad_tensor *mean, gad_tensor *invstd, gad_tensor *rm,
                  gad_tensor *rv, double momentum, double eps);
    /* y = (x - mean[c]) invstd[c] w[c] + b[c]; w, b NULL: 1, 0 */
    void (*fwd)(const gad_tensor *x, const gad_tensor *mean, const gad_tensor *invstd,
                const gad_tensor *w, const gad_tensor *b, gad_tensor *y);
    /* From g = dL/dy: dx (NULL: not wanted), dw = sum g xhat and db = sum
     * g per channel (always given: dx's pass reads them). batch: mean and invstd were the
     * batch's (their gradients flow into dx), else constants. */
    void (*bwd)(const gad_tensor *x, const gad_tensor *g, const gad_tensor *mean,
                const gad_tensor *invstd, const gad_tensor *w, int batch, gad_tensor *dx,
                gad_tensor *dw, gad_tensor *db);

    /* ---- group norm (instance norm: groups = C). x [N, C, S], C = G Cg:
     * mean and invstd ([N G], x's dtype) over each (n, g)'s Cg S values,
     * var biased, then y = (x - mean) invstd w[c] + b[c] (w, b NULL: 1, 0).
     * rm, rv ([N G], or both NULL) updated in place as stats's, with M = Cg
     * S. M = 0: mean and invstd NaN, rm and rv as they were. */
    void (*group_fwd)(const gad_tensor *x, int64_t groups, const gad_tensor *w,
                      const gad_tensor *b, gad_tensor *y, gad_tensor *mean, gad_tensor *invstd,
                      gad_tensor *rm, gad_tensor *rv, double momentum, double eps);
    /* From g = dL/dy and group_fwd's mean and invstd: dx, dw = sum g xhat
     * and db = sum g per channel (each NULL: not wanted). Returns 0, or -1
     * with the error recorded under op (no memory for its scratch). */
    int (*group_bwd)(const char *op, const gad_tensor *x, const gad_tensor *g,
                     const gad_tensor *mean, const gad_tensor *invstd, const gad_tensor *w,
                     int64_t groups, gad_tensor *dx, gad_tensor *dw, gad_tensor *db);
    int half; /* the entries take f16/bf16 too (backend.h) */
} gad_be_norm;

#endif
