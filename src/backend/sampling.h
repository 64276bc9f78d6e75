/* sampling.h: the sampling family of the seam (backend.h): draws from the
 * rows of a weight matrix and the top-k / top-p filter of logits. Draws
 * come from a 64-bit key (taken from the caller's gad_rng) and the row
 * number alone, so a seed gives the same draws for any thread count. The
 * CPU's: src/cpu/sampling.c. */
#ifndef GAD_BE_SAMPLING_H
#define GAD_BE_SAMPLING_H

#include "backend/backend.h"

typedef struct gad_be_sampling {
    /* out [R, n] (i64): n draws of a category from each row of w [R, K]
     * (packed f32/f64, weights not normalised), with or without
     * replacement. The weights are checked here: a negative, NaN or
     * infinite weight, a or a row summing to 0 is a domain error under op naming the row
     * and the value; -1 then (or on scratch memory). Without replacement n <=
     * K (the caller checked); zero weights are drawn last, in order. */
    int (*multinomial)(const char *op, const gad_tensor *w, int64_t n, int replacement,
                       uint64_t key, gad_tensor *out);
    /* y [R, V] = x [R, V] / temperature (> 0), then -inf outside the top_k
     * largest (0: no limit; every value equal to the k-th is kept), then
     * -inf outside the smallest set of the largest whose softmax reaches
     * top_p (>= 1: no limit; every value equal to the last one kept is
     * kept). -1: scratch memory. */
    int (*logits_filter)(const char *op, const gad_tensor *x, double temperature, int64_t top_k,
                         double top_p, gad_tensor *y);
    int half; /* the entries take f16/bf16 too (backend.h) */
} gad_be_sampling;

#endif
