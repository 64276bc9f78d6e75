/* linear.h: the fused linear family of the seam (backend.h): the pass
 * after a linear layer's product, y = act(x @ w + b), and the pass before
 * its backward's products (gad_linear_act, src/ops/linear.c). The products
 * themselves are the matmul entry's. The CPU's: src/cpu/linear.c.
 *
 * act is gad.h's gad_act. y and z are [N, F], b is [F] or NULL, all packed
 * and of one float dtype. */
#ifndef GAD_BE_LINEAR_H
#define GAD_BE_LINEAR_H

#include "backend/backend.h"

typedef struct gad_be_linear {
    /* z = z + b in place (z holds the product), then y = act(z); y == z for
     * GAD_ACT_NONE and GAD_ACT_RELU, which work in place (relu's backward
     * reads its output), and a separate tensor for the others, whose
     * backward reads z. */
    void (*fwd)(gad_tensor *z, const gad_tensor *b, int act, gad_tensor *y);
    /* gz = gy * act'(v), v being what fwd left for the backward (y for
     * GAD_ACT_RELU, z for the others; NULL for GAD_ACT_NONE, whose gz is
     * not written: the caller passes gy itself), and db (when not NULL) =
     * gz summed over the rows, in an order fixed by the shape alone;
     * -1: scratch memory (recorded). */
    int (*bwd)(const gad_tensor *gy, const gad_tensor *v, int act, gad_tensor *gz,
               gad_tensor *db);
    int half; /* the entries take f16/bf16 too (backend.h) */
} gad_be_linear;

#endif
