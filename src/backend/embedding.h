/* embedding.h: the embedding family of the seam (backend.h). The CPU's:
 * src/cpu/embedding.c. */
#ifndef GAD_BE_EMBEDDING_H
#define GAD_BE_EMBEDDING_H

#include "backend/backend.h"

typedef struct gad_be_embedding {
    /* y [R, D] = rows idx (values checked by the caller, at once or
     * deferred) of table [V, D]. */
    void (*fwd)(const gad_tensor *table, const gad_tensor *idx, gad_tensor *y);
    /* gt (zeroed by the caller) += the rows of gy scattered back. */
    void (*bwd)(const gad_tensor *idx, const gad_tensor *gy, gad_tensor *gt);
    int half; /* the entries take f16/bf16 too (backend.h) */
} gad_be_embedding;

#endif
