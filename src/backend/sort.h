/* sort.h: the sort family of the seam (backend.h): sort, top-k and argmin
 * along one axis of a packed tensor, PyTorch's order: values ascending
 * with NaN after +inf (descending: NaN first), -0 equal to +0, integers
 * exactly, equal values in their original order (stable). Every dtype (f32,
 * f64, i64, bool; the ops refuse bool where PyTorch does: topk, argmin).
 * The CPU's: src/cpu/sort.c. */
#ifndef GAD_BE_SORT_H
#define GAD_BE_SORT_H

#include "backend/backend.h"

typedef struct gad_be_sort {
    /* values (x's dtype, may be NULL: argsort) and indices (i64), x's
     * shape, sorted along axis; -1: scratch memory (recorded under op). */
    int (*sort)(const char *op, const gad_tensor *x, int axis, int descending,
                gad_tensor *values, gad_tensor *indices);
    /* The k (1 <= k <= axis size) largest (or smallest) along axis, in
     * sorted order, ties to the lower index, NaN largest; values and
     * indices of x's shape with k on axis. -1: scratch memory. */
    int (*topk)(const char *op, const gad_tensor *x, int axis, int64_t k, int largest,
                gad_tensor *values, gad_tensor *indices);
    /* y (i64, x's shape without axis) = the index of the first minimum
     * (largest: maximum) along axis, or of the first NaN when there is
     * one (PyTorch). */
    void (*argmin)(const gad_tensor *x, int axis, int largest, gad_tensor *y);
    int half; /* the entries take f16/bf16 too (backend.h) */
} gad_be_sort;

#endif
