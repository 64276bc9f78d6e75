/* optim.h: the optimizers' update kernels for the CPU (SPEC section 5):
 * AdamW, SGD (momentum, Nesterov, weight decay), the sum of squares behind
 * the global gradient norm and the scaling that clips it. Plain loops over
 * raw contiguous arrays of one float type; the _f32 and _f64 versions are
 * stamped from one template (src/cpu/optim_tmpl.h). src/optim/optim.c
 * validates, keeps the state and computes the coefficients; these only run
 * the arithmetic.
 *
 * Contract of every function here:
 * - Arrays: n contiguous elements each (n >= 0; n == 0 touches nothing;
 *   the updates' spans [lo, hi) of them), allocated and owned by the caller
 *   and already writable (the caller did any copy-on-write). An array that
 *   is written overlaps no other array of the same call, except that an
 *   update's old values may be p itself.
 * - No validation, no error recorded, no failure, no gradients; the
 *   multi-tensor update alone takes tensors (packed; the seam's items).
 * - Coefficients arrive in double and are each rounded once to T (float or
 *   double) on entry; every operation after that is in T, in the order the
 *   comments give, each one rounded: src/cpu/optim.c is compiled with
 *   -ffp-contract=off (CMakeLists.txt), so that no a * b + c becomes one
 *   fused multiply-add. The results are therefore the same bits with any
 *   compiler flags (-march=native included) on any target where float and
 *   double are IEEE binary32 and binary64 evaluated in their own precision
 *   (FLT_EVAL_METHOD 0: x86-64, AArch64).
 * - Threads: the update's spans run on the calling thread; the multi-tensor
 *   update and the other calls split GAD_OPTIM_PAR_MIN elements or more
 *   between gad's worker threads by gad__parallel_for (chunks of at least
 *   GAD_OPTIM_PAR_MIN / 2 elements; one thread when called from inside a
 *   pool region). Each element, and each block of the sum of squares, is
 *   computed the same way whatever the split: results do not depend on the
 *   thread count. The calls return when all the work is done. */
#ifndef GAD_CPU_OPTIM_H
#define GAD_CPU_OPTIM_H

#include "backend/backend.h"

/* From this many elements on, the kernels use more than one thread. */
#define GAD_OPTIM_PAR_MIN 65536
/* gad__sumsq_* sums squares in fixed blocks of this many elements. */
#define GAD_OPTIM_SUMSQ_BLK 4096

/* The coefficient structs gad_adamw_coef and gad_sgd_coef are the seam's
 * (src/backend/backend.h). */

#define GAD_OPTIM_DECLS(T, sfx)                                                \
    /* One AdamW step of elements [lo, hi) of p (parameters, written), with  \
     * p's old values read from old (p itself for an update in place, else   \
     * an array that overlaps no other), m and v (first and second moments,  \
     * updated in place) and the gradient g; per element, in T:              \
     *   m = b1 m + omb1 g;  v = b2 v + omb2 (g g);                           \
     *   p = old decay - lr ((m / bc1) / (sqrt(v / bc2) + eps)).              \
     * On the calling thread. */                                              \
    void gad__adamw_##sfx(T *p, const T *old, T *m, T *v, const T *g,        \
                          int64_t lo, int64_t hi, const gad_adamw_coef *c);   \
    /* One SGD step of elements [lo, hi) of p (old as above); b is the       \
     * momentum buffer (updated in place), or NULL for plain SGD. Per        \
     * element, in T, with wd the weight decay and mu the momentum:          \
     *   plain:    p = old - lr (g + wd old), or old - lr g when wd is 0;     \
     *   momentum: g' = g + wd old (g when wd is 0); b = g' on the first      \
     *             step, else b = mu b + g'; d = g' + mu b with Nesterov,     \
     *             else b; p = old - lr d.                                    \
     * On the calling thread. */                                              \
    void gad__sgd_##sfx(T *p, const T *old, T *b, const T *g, int64_t lo,     \
                        int64_t hi, const gad_sgd_coef *c);                   \
    /* The sum of g[i]^2 in double, in an order that depends on n only:      \
     * blocks of GAD_OPTIM_SUMSQ_BLK elements, each summed in four lanes (i  \
     * mod 4) combined as (s0 + s1) + (s2 + s3), the block sums added in     \
     * order. Threaded for n > GAD_OPTIM_PAR_MIN with a scratch array of one \
     * double per block that it allocates (gad__alloc) and frees itself; if  \
     * that allocation fails it sums on the calling thread, to the same      \
     * bits. */                                                               \
    double gad__sumsq_##sfx(const T *g, int64_t n);                           \
    /* x = x * (T)c, per element. */                                           \
    void gad__scale_##sfx(T *x, int64_t n, double c);

GAD_OPTIM_DECLS(float, f32)
GAD_OPTIM_DECLS(double, f64)

/* The multi-tensor update (the back end's adamw_step and sgd_step; each
 * item's arrays f32 or f64): the elements of items[0..n), taken one after
 * another as one range, split between threads as above when the total
 * reaches GAD_OPTIM_PAR_MIN, so that a step of many small parameters uses
 * every thread with one fork and join. adamw: AdamW's spans, else SGD's. */
void gad__optim_update(const gad_optim_item *items, int n, int adamw);

/* The same two for f16 or bf16 (dt) arrays, computed on their values
 * widened to f32: gad__sumsq_half gives the bits gad__sumsq_f32 gives on
 * the widened array (the same blocks and order), and gad__scale_half sets
 * x = x * (float)c rounded once to dt, as gad_cast rounds. */
double gad__sumsq_half(int dt, const uint16_t *g, int64_t n);
void gad__scale_half(int dt, uint16_t *x, int64_t n, double c);

#endif
