/* conv.h: the convolution family of the seam (backend.h): a grouped,
 * strided, dilated, zero-padded convolution over 1 to 3 spatial dims
 * (NC[D][H]W, packed), and the two products its gradients are made of.
 * The CPU's: src/cpu/conv.c. */
#ifndef GAD_BE_CONV_H
#define GAD_BE_CONV_H

#include "backend/backend.h"

/* The geometry of one convolution, seen as 3-D: a 1-D or 2-D one has size-1
 * leading spatial dims (stride and dilation 1, padding 0), which is the
 * same memory layout. Input position of output o and tap j on dim d:
 * o * stride[d] - pad[d] + j * dil[d]; positions outside [0, in[d]) read
 * zero. Sizes need not match the usual output formula (asymmetric "same"
 * padding, output_padding): every output reads what the formula says. */
typedef struct gad_conv_geom {
    int64_t n, groups, cin, cout; /* batch, groups, channels in and out (totals) */
    int64_t in[3], out[3], k[3];  /* spatial sizes of input, output and kernel */
    int64_t stride[3], pad[3], dil[3];
} gad_conv_geom;

/* Entries return 0, or -1 with a memory error recorded under op (scratch). */
typedef struct gad_be_conv {
    /* y [n, cout, out] = sum over ci in the group, taps j of
     * w [cout, cin/groups, k] * x [n, cin, in], + bias [cout] when not NULL */
    int (*fwd)(const char *op, const gad_tensor *x, const gad_tensor *w, const gad_tensor *bias,
               gad_tensor *y, const gad_conv_geom *g);
    /* dx [n, cin, in] = the transpose of fwd applied to gy [n, cout, out]
     * (every output's contribution added back to the inputs it read), +
     * bias [cin] when not NULL (conv_transpose's) */
    int (*bwd_data)(const char *op, const gad_tensor *gy, const gad_tensor *w,
                    const gad_tensor *bias, gad_tensor *dx, const gad_conv_geom *g);
    /* dw [cout, cin/groups, k] = sum over n and outputs of gy * the input
     * each tap read */
    int (*bwd_weight)(const char *op, const gad_tensor *x, const gad_tensor *gy, gad_tensor *dw,
                      const gad_conv_geom *g);
    int half; /* the entries take f16/bf16 too (backend.h) */
} gad_be_conv;

#endif
