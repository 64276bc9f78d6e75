/* pool.h: the pooling family of the seam (backend.h): max and average
 * pooling over the last two axes of packed tensors, seen as P planes of
 * [H, W] (1-d pooling is H = 1). The CPU's: src/cpu/pool.c. */
#ifndef GAD_BE_POOL_H
#define GAD_BE_POOL_H

#include "backend/backend.h"

/* One axis of a pooling: output o reads the len[o] input positions
 * beg[o], beg[o] + dil, ... (all inside [0, n_in), padding already cut
 * off); cnt[o] is its factor of the average's divisor (the window's size
 * with or without padding, as the op decided). len[o] may be 0 (an average
 * of nothing is 0). */
typedef struct gad_pool_axis {
    int64_t n_in, n_out, dil;
    const int64_t *beg, *len, *cnt;
} gad_pool_axis;

/* The windows of a pooling: rows (h) then columns (w); divisor: the
 * average's divisor for every output when > 0 (divisor_override), else
 * cnt_h[oh] * cnt_w[ow]. */
typedef struct gad_pool_geom {
    gad_pool_axis h, w;
    int64_t divisor;
} gad_pool_geom;

/* The sliding blocks of unfold/fold (im2col/col2im) over a plane of
 * [H, W]: kernel k, stride s, padding p, dilation d per axis ([0] H, [1]
 * W), all already normalised (s, d >= 1), and the blocks L per axis. */
typedef struct gad_fold_geom {
    int64_t H, W, k[2], s[2], p[2], d[2], L[2];
} gad_fold_geom;

/* One axis of an interpolation: output o reads positions i0[o] and i1[o]
 * with the weights w0[o], w1[o] (nearest: i0 alone, weight 1). */
typedef struct gad_interp_axis {
    int64_t n_in, n_out;
    const int64_t *i0, *i1;
    const double *w0, *w1;
} gad_interp_axis;

/* An interpolation of planes [H, W] (1-d: H a unit axis, h's weight 1). */
typedef struct gad_interp_geom {
    gad_interp_axis h, w;
    int nearest;
} gad_interp_geom;

typedef struct gad_be_pool {
    /* y [P, Ho, Wo] = the max of each window of x [P, H, W]; idx (i64, of
     * y's shape, or NULL) = its flat position in the plane (h * W + w).
     * The first maximum wins; a NaN wins over numbers (the last NaN), as
     * PyTorch's CPU kernels do. */
    void (*max_fwd)(const gad_tensor *x, gad_tensor *y, gad_tensor *idx,
                    const gad_pool_geom *g);
    /* gx [P, H, W] = 0, then gy's values added at idx (the scatter of max
     * pooling's backward); hw: H * W. gy may be empty (an adaptive
     * output of size 0): gx is then all zeros. */
    void (*max_bwd)(const gad_tensor *gy, const gad_tensor *idx, gad_tensor *gx, int64_t hw);
    /* y = the sum of each window of x over its divisor. */
    void (*avg_fwd)(const gad_tensor *x, gad_tensor *y, const gad_pool_geom *g);
    /* gx = avg_fwd's transpose applied to gy (written whole; zeros when gy
     * is empty, and then g's window arrays are NULL). */
    void (*avg_bwd)(const gad_tensor *gy, gad_tensor *gx, const gad_pool_geom *g);
    /* pad in modes reflect, replicate and circular (of the last one to
     * three axes): y [P, Do, Ho, Wo] = x [P, D, H, W] read through the maps
     * map[0] [Do], map[1] [Ho] and map[2] [Wo] of input positions (unpadded
     * axes: n = 1, map {0}); columns [lo, lo + W) of each row are x's row
     * whole. Elements moved as bits: any dtype. */
    void (*pad)(const gad_tensor *x, gad_tensor *y, const int64_t *const map[3],
                const int64_t in[3], const int64_t out[3], int64_t lo);
    /* im2col (unfold): cols [P, kh kw, Lh Lw] = the taps of the blocks of
     * x [P, H, W], zeros where a tap reads padding. f32 or f64. */
    void (*im2col)(const gad_tensor *x, gad_tensor *cols, const gad_fold_geom *g);
    /* col2im (fold), im2col's transpose: x [P, H, W] = the sum of what
     * cols [P, kh kw, Lh Lw] holds for each position (written whole). */
    void (*col2im)(const gad_tensor *cols, gad_tensor *x, const gad_fold_geom *g);
    /* interpolate: y [P, Ho, Wo] = PyTorch's upsample of x [P, H, W]:
     * w0_h (w0_w x[h0, w0] + w1_w x[h0, w1]) + w1_h (...row h1); nearest
     * x[h0, w0]. f32 or f64. */
    void (*interp_fwd)(const gad_tensor *x, gad_tensor *y, const gad_interp_geom *g);
    /* its transpose: gx [P, H, W] (written whole) = gy's values scattered
     * with the same weights. */
    void (*interp_bwd)(const gad_tensor *gy, gad_tensor *gx, const gad_interp_geom *g);
    int half; /* the entries take f16/bf16 too (backend.h) */
} gad_be_pool;

#endif
