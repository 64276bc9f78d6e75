/* select.h: the comparison and selection family of the seam (backend.h):
 * elementwise comparisons and tests that write bool masks, the choice
 * c ? a : b, any/all over rows of a mask, the triangles of matrices and
 * clamp by tensors.
 * Every dtype (f32, f64, i64, bool) unless an entry says otherwise; the
 * outputs are fresh contiguous tensors the caller allocated. The CPU's:
 * src/cpu/select.c. */
#ifndef GAD_BE_SELECT_H
#define GAD_BE_SELECT_H

#include "backend/backend.h"

/* What compare computes. The logical ones take bool operands only (the ops
 * convert others with GAD_TEST_NONZERO first). */
typedef enum gad_cmp_op {
    GAD_CMP_EQ, GAD_CMP_NE, GAD_CMP_LT, GAD_CMP_LE, GAD_CMP_GT, GAD_CMP_GE,
    GAD_CMP_AND, GAD_CMP_OR, GAD_CMP_XOR,
    GAD_CMP_COUNT_
} gad_cmp_op;

/* What test computes of each element (i64 and bool are never NaN nor
 * infinite). */
typedef enum gad_test_op {
    GAD_TEST_NONZERO, /* x != 0 (NaN is nonzero) */
    GAD_TEST_ZERO,    /* x == 0: logical_not */
    GAD_TEST_ISNAN, GAD_TEST_ISINF, GAD_TEST_ISFINITE,
    GAD_TEST_COUNT_
} gad_test_op;

/* A scalar operand, read as a's dtype reads it: .f for f32 (rounded to
 * float first) and f64, .i for i64 and bool (exact integers). */
typedef union gad_sel_scalar {
    double f;
    int64_t i;
} gad_sel_scalar;

typedef struct gad_be_select {
    /* y (bool, the broadcast shape) = a op b; a and b of one dtype, any
     * strides, broadcast to y; b NULL: the scalar s in its place. */
    void (*compare)(gad_cmp_op op, const gad_tensor *a, const gad_tensor *b,
                    const gad_sel_scalar *s, gad_tensor *y);
    /* y (bool, x's shape) = op(x), x any strides. */
    void (*test)(gad_test_op op, const gad_tensor *x, gad_tensor *y);
    /* y = c ? a : b elementwise; c bool; a, b and y one dtype; c, a, b any
     * strides, broadcast to y. a or b NULL: the element at s (one element
     * of y's dtype, in host memory) in its place. */
    void (*where)(const gad_tensor *c, const gad_tensor *a, const gad_tensor *b,
                  const void *s, gad_tensor *y);
    /* x packed bool seen as [y.numel, x.numel / y.numel] (y.numel > 0):
     * y[i] = any (all: every) element of row i; an empty row gives false
     * (all: true). */
    void (*any)(const gad_tensor *x, int all, gad_tensor *y);
    /* y = x (any strides, rank >= 2) with the elements of each matrix (the
     * last two dims, row i, column j) outside the band zeroed: kept are
     * j - i <= diag (tril), j - i >= diag (upper: triu). */
    void (*tri)(const gad_tensor *x, int64_t diag, int upper, gad_tensor *y);
    /* y = min(max(x, lo), hi) elementwise, f32, f64 or i64 (one dtype), NaN
     * in any operand giving NaN (PyTorch's clamp); x, lo and hi any strides,
     * broadcast to y; lo or hi NULL: no bound on that side. */
    void (*clamp)(const gad_tensor *x, const gad_tensor *lo, const gad_tensor *hi,
                  gad_tensor *y);
    int half; /* the entries take f16/bf16 too (backend.h) */
} gad_be_select;

#endif
