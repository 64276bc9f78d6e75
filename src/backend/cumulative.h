/* cumulative.h: the cumulative family of the seam (backend.h): running
 * sums and products along one axis of a packed tensor, and the product's
 * gradient (f32/f64). f32 accumulates in double (as PyTorch's CPU
 * kernels); i64 and bool x give an i64 y, whose sums and products wrap
 * around as PyTorch's int64 arithmetic does. The CPU's:
 * src/cpu/cumulative.c. */
#ifndef GAD_BE_CUMULATIVE_H
#define GAD_BE_CUMULATIVE_H

#include "backend/backend.h"

typedef struct gad_be_cumulative {
    /* y_i = x_0 + ... + x_i along axis; reverse: y_i = x_i + ... + x_{n-1};
     * y of x's dtype for floats, i64 for i64 and bool x */
    void (*cumsum)(const gad_tensor *x, int axis, int reverse, gad_tensor *y);
    /* y_i = x_0 * ... * x_i along axis; y's dtype as cumsum's */
    void (*cumprod)(const gad_tensor *x, int axis, gad_tensor *y);
    /* gx_k = sum_{i >= k} gy_i prod_{j <= i, j != k} x_j, without dividing
     * by x (exact with any zeros): gx_k = E_k S_k with E_k = x_0...x_{k-1}
     * and S_k = gy_k + x_{k+1} S_{k+1}. f32 or f64. */
    void (*cumprod_bwd)(const gad_tensor *x, const gad_tensor *gy, int axis, gad_tensor *gx);
    int half; /* the entries take f16/bf16 too (backend.h) */
} gad_be_cumulative;

#endif
