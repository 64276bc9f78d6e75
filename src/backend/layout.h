/* layout.h: what every back end decides alike about a tensor's layout,
 * written once (src/cpu and src/cuda use them): whether a matrix goes to a
 * GEMM as it lies in memory, and how a reduction groups its axes. Static
 * inline: they run on every matmul and every sum. */
#ifndef GAD_BE_LAYOUT_H
#define GAD_BE_LAYOUT_H

#include "gad_int.h"

/* Whether the last two axes of a rows x cols matrix (strides sr, sc) can go
 * to a GEMM as they are, and how: trans 0, element (i, j) at i * ld + j;
 * trans 1, at j * ld + i. */
static inline bool gad__gemm_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc,
                                    int *trans, int64_t *ld) {
    int64_t mc = cols > 1 ? cols : 1, mr = rows > 1 ? rows : 1;
    if ((sc == 1 || cols <= 1) && (rows <= 1 || sr >= mc)) {
        *trans = 0;
        *ld = rows <= 1 ? mc : sr;
        return true;
    }
    if ((sr == 1 || rows <= 1) && (cols <= 1 || sc >= mr)) {
        *trans = 1;
        *ld = cols <= 1 ? mr : sc;
        return true;
    }
    return false;
}

/* A set of axes of a packed tensor: sizes and element strides. */
typedef struct gad_axis_group {
    int n;
    int64_t size[GAD_MAX_RANK], stride[GAD_MAX_RANK];
    int64_t total; /* the product of the sizes */
} gad_axis_group;

/* The axes of a packed x that a reduction over mask keeps and reduces, each
 * side with adjacent axes of one kind merged and size-1 axes dropped. */
static inline void gad__reduce_groups(const gad_tensor *x, unsigned mask, gad_axis_group *kept,
                                      gad_axis_group *red) {
    int nk = 0, nr = 0, last = -1;
    for (int d = 0; d < x->rank; d++) {
        if (x->shape[d] == 1) continue;
        int r = (mask >> d) & 1;
        gad_axis_group *g = r ? red : kept;
        int *n = r ? &nr : &nk;
        if (r == last) g->size[*n - 1] *= x->shape[d];
        else g->size[(*n)++] = x->shape[d];
        last = r;
    }
    kept->n = nk;
    red->n = nr;
    /* x is packed: walk the axes from the innermost */
    int64_t st = 1;
    int ik = nk, ir = nr;
    for (int d = x->rank - 1; d >= 0;) {
        if (x->shape[d] == 1) {
            d--;
            continue;
        }
        int r = (mask >> d) & 1;
        int64_t size = 1;
        while (d >= 0 && (x->shape[d] == 1 || (int)((mask >> d) & 1) == r)) {
            size *= x->shape[d];
            d--;
        }
        if (r) red->stride[--ir] = st;
        else kept->stride[--ik] = st;
        st *= size;
    }
    kept->total = red->total = 1;
    for (int i = 0; i < nk; i++) kept->total *= kept->size[i];
    for (int i = 0; i < nr; i++) red->total *= red->size[i];
}

#endif
