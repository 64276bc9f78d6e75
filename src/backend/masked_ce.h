/* masked_ce.h: the masked cross-entropy family of the seam (backend.h),
 * over logits [N, V]. The CPU's: src/cpu/masked_ce.c. */
#ifndef GAD_BE_MASKED_CE_H
#define GAD_BE_MASKED_CE_H

#include "backend/backend.h"

typedef struct gad_be_masked_ce {
    /* Check the targets of the rows whose weight is not 0 against V (an
     * index error "target T of row R out of bounds for V classes", at once,
     * or deferred as backend.h's index_check says: the bad targets are then
     * written as 0), write them to safe (i64 [N], unweighted rows' targets
     * 0), the total |weight| to count (f64, rank 0) and -1/count (0 when
     * count is 0) to nscale (the logits' dtype, rank 0). */
    int (*prep)(const char *op, const gad_tensor *targets, const gad_tensor *mask, int64_t V,
                gad_tensor *safe, gad_tensor *count, gad_tensor *nscale);
    /* The softmax rows to probs and the loss to loss (rank 0). */
    int (*fwd)(const char *op, const gad_tensor *logits, const gad_tensor *safe,
               const gad_tensor *mask, gad_tensor *probs, gad_tensor *loss);
    /* dlogits = (probs - onehot) * mask * gy / count; -1: scratch memory
     * (recorded). */
    int (*bwd)(const gad_tensor *probs, const gad_tensor *safe, const gad_tensor *mask,
               const gad_tensor *count, const gad_tensor *gy, gad_tensor *dlogits);
    int half; /* the entries take f16/bf16 too (backend.h) */
} gad_be_masked_ce;

#endif
