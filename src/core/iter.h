/* iter.h: strided iteration over up to GAD_ITER_MAXOPS operands that share
 * one logical shape (broadcast operands carry zero strides).
 *
 * gad__iter_init drops size-1 axes and merges adjacent axes that are
 * contiguous for every operand, so a contiguous or simply-broadcast operand
 * becomes one long inner run. The caller then walks "outer" positions (all
 * axes but the last) and processes one inner run of it.shape[it.nd - 1]
 * elements per position:
 *
 *     gad_iter it; gad__iter_init(&it, shape, rank, 2, strides);
 *     int64_t idx[GAD_MAX_RANK], off[GAD_ITER_MAXOPS];
 *     gad__iter_seek(&it, first, idx, off);
 *     for (int64_t o = first; o < last; o++) {
 *         run(it.shape[it.nd-1], base0 + off[0], it.strides[0][it.nd-1], ...);
 *         gad__iter_next(&it, idx, off);
 *     }
 */
#ifndef GAD_ITER_H
#define GAD_ITER_H

#include "gad_int.h"

#define GAD_ITER_MAXOPS 4

typedef struct gad_iter {
    int nd;   /* axes after merging; >= 1 */
    int nops;
    int64_t shape[GAD_MAX_RANK];
    int64_t strides[GAD_ITER_MAXOPS][GAD_MAX_RANK]; /* in elements */
    int64_t outer; /* product of shape[0 .. nd-2] */
    int64_t inner; /* shape[nd-1] */
} gad_iter;

static inline void gad__iter_init(gad_iter *it, const int64_t *shape, int rank,
                                  int nops, const int64_t *const *strides) {
    int nd = 0;
    it->nops = nops;
    for (int i = 0; i < rank; i++) {
        if (shape[i] == 1) continue;
        if (nd > 0) {
            /* merge axis i into the previous kept axis when every operand
             * steps through both as one */
            bool merge = true;
            for (int k = 0; k < nops; k++)
                if (it->strides[k][nd - 1] != strides[k][i] * shape[i]) {
                    merge = false;
                    break;
                }
            if (merge) {
                it->shape[nd - 1] *= shape[i];
                for (int k = 0; k < nops; k++)
                    it->strides[k][nd - 1] = strides[k][i];
                continue;
            }
        }
        it->shape[nd] = shape[i];
        for (int k = 0; k < nops; k++) it->strides[k][nd] = strides[k][i];
        nd++;
    }
    if (nd == 0) {
        it->shape[0] = 1;
        for (int k = 0; k < nops; k++) it->strides[k][0] = 0;
        nd = 1;
    }
    it->nd = nd;
    it->inner = it->shape[nd - 1];
    int64_t o = 1;
    for (int i = 0; i < nd - 1; i++) o *= it->shape[i];
    it->outer = o;
}

/* Position idx/off at outer position o (0 <= o < outer). */
static inline void gad__iter_seek(const gad_iter *it, int64_t o, int64_t *idx,
                                  int64_t *off) {
    for (int k = 0; k < it->nops; k++) off[k] = 0;
    for (int i = it->nd - 2; i >= 0; i--) {
        int64_t d = it->shape[i];
        idx[i] = o % d;
        o /= d;
        for (int k = 0; k < it->nops; k++) off[k] += idx[i] * it->strides[k][i];
    }
}

/* Advance idx/off to the next outer position (odometer). */
static inline void gad__iter_next(const gad_iter *it, int64_t *idx,
                                  int64_t *off) {
    for (int i = it->nd - 2; i >= 0; i--) {
        if (++idx[i] < it->shape[i]) {
            for (int k = 0; k < it->nops; k++) off[k] += it->strides[k][i];
            return;
        }
        idx[i] = 0;
        for (int k = 0; k < it->nops; k++)
            off[k] -= (it->shape[i] - 1) * it->strides[k][i];
    }
}

#endif
