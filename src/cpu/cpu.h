/* cpu.h: CPU kernels, the entries of the CPU's table (src/cpu/backend.c).
 * Plain loops over validated tensors: the ops check shapes, dtypes and
 * devices first; kernels never know about gradients. Outputs are fresh
 * contiguous tensors the caller allocated. */
#ifndef GAD_CPU_H
#define GAD_CPU_H

#include "gad_int.h"
#include "backend/kernels.h"

/* Compile a kernel for AVX-512 and AVX2 besides the baseline and pick one
 * when the program loads (GCC and clang on x86-64); elsewhere one version.
 * The library is built without -march=native by default, so this is what
 * makes its loops use wide vectors. */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) && \
    !defined(GAD_NO_CLONES) && defined(__linux__)
#define GAD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define GAD_CLONES
#endif

/* Copy n bytes to dst with non-temporal stores, which bypass the cache
 * (stream.c); dst and src need no alignment. The stores are weakly ordered:
 * call gad__stream_fence on the same thread before the data is handed to
 * another thread or read back. */
void gad__stream_store(void *dst, const void *src, size_t n);
void gad__stream_fence(void);

/* y = a op b over n contiguous f32 elements, with streaming stores (the
 * caller fences as above); the bits are the portable kernel's. The kernel
 * of binary row k where stream.c has one for this CPU (add, sub, mul, div
 * on AVX-512), else NULL. */
typedef void (*gad_sbkernel)(int64_t n, const float *a, const float *b, float *y);
gad_sbkernel gad__stream_binary_f32(gad_bkernel k);

/* A kernel written by hand for one CPU feature: y = f(x) over n contiguous
 * f32 elements, with streaming stores when `stream` is set. */
typedef void (*gad_vkernel)(int64_t n, const float *x, float *y, bool stream);

/* gelu's AVX-512 kernel (gelu_avx512.c); NULL where the CPU lacks AVX-512. */
gad_vkernel gad__vk_gelu_f32(void);

/* ---- half precision (issue 29): tile conversions (half_tile.c)
 * dt is GAD_F16 or GAD_BF16. widen: y[i] = x[i * sx] in f32 (exact);
 * narrow: y[i * sy] = x[i] rounded to nearest even (half.h's bits);
 * get/put: one element. */
void gad__half_widen(int dt, int64_t n, const uint16_t *x, int64_t sx, float *y);
void gad__half_narrow(int dt, int64_t n, const float *x, uint16_t *y, int64_t sy);
/* rows x cols floats (row stride ld) narrowed into y as packed rows, over
 * gad's threads in runs of 32K elements (the bits do not depend on the
 * split). */
void gad__half_narrow_rows(int dt, int64_t rows, int64_t cols, const float *x, int64_t ld,
                           uint16_t *y);
float gad__half_get(int dt, const void *p);
void gad__half_put(int dt, void *p, float v);

/* f32 copies of a fused kernel's half tensors, so that its f32 kernel runs
 * on them (the scan, masked_ce and HELIX families): slot i holds t[i]'s
 * numel floats (t[i] NULL: an empty slot), t[i]'s values when in[i] is
 * set (widened, exactly), else nothing yet (an output). One allocation;
 * -1 after a memory error under op. gad__half_set_out rounds slot i into
 * t (t's numel floats); gad__half_set_free gives the memory back. */
#define GAD_HALF_SET_MAX 32
typedef struct gad_half_set {
    float *p[GAD_HALF_SET_MAX];
    float *base;
    size_t bytes;
} gad_half_set;
int gad__half_set_new(const char *op, gad_half_set *s, int n, const gad_tensor *const *t,
                      const bool *in);
void gad__half_set_out(const gad_half_set *s, int i, gad_tensor *t);
void gad__half_set_free(gad_half_set *s);

/* ---------------------------------------------------------- elementwise */

/* The kernel ids and their parameters are the seam's (backend/kernels.h). */

/* y (contiguous, x's shape and float dtype) = f(x), x any strides. */
void gad__k_unary(gad_ukernel k, const gad_tensor *x, gad_tensor *y,
                  const gad_uparams *p);

/* y (contiguous, the broadcast shape) = a op b; a and b have y's float
 * dtype and broadcast to y's shape. */
void gad__k_binary(gad_bkernel k, const gad_tensor *a, const gad_tensor *b,
                   gad_tensor *y);

/* out (contiguous) = gy * f'(v) (kernels.h's gad_gkernel); gy and v
 * broadcast to out's shape. */
void gad__k_grad(gad_gkernel k, const gad_tensor *gy, const gad_tensor *v,
                 gad_tensor *out, const gad_uparams *p);

/* One thread's share of gad__k_unary and gad__k_grad over n contiguous
 * f32 (or f64) elements, with the kernels, and so the bits, those use; the
 * output must not overlap an input (the fused linear family runs them on
 * blocks of rows). */
void gad__ew_unary_span(gad_ukernel k, bool f64, int64_t n, const void *x, void *y,
                        const gad_uparams *p);
void gad__ew_grad_span(gad_gkernel k, bool f64, int64_t n, const void *gy, const void *v,
                       void *out, const gad_uparams *p);

/* ----------------------------------------------------------- reductions */

/* y = sum of x over the axes in mask, y contiguous with the kept axes
 * (keepdims or not: same element order). Float dtypes. An empty reduction
 * gives 0. With `scale` != 1 every result is multiplied by it (mean). */
void gad__k_sum(const gad_tensor *x, unsigned mask, double scale, gad_tensor *y);

/* Along one axis of x, viewed as [outer, n, inner] (n >= 1):
 * amax (NaN skipped; all-NaN gives -inf) into y of x's dtype, or argmax
 * (first maximum; NaN never wins) into y of i64. y has outer*inner
 * elements. */
void gad__k_amax(const gad_tensor *x, int axis, gad_tensor *y);
/* y (x's shape and dtype) = 1 at the first maximum of each slice along axis
 * (NaN never is one), else 0: the VJP of amax. */
void gad__k_amax_mask(const gad_tensor *x, int axis, gad_tensor *y);
void gad__k_argmax(const gad_tensor *x, int axis, gad_tensor *y);

/* softmax / log_softmax of x along axis into y (contiguous, x's shape),
 * computed with the max subtracted (NaN-skipping max). */
void gad__k_softmax(const gad_tensor *x, int axis, int log, gad_tensor *y);

/* ------------------------------------------------------------- indexing */

/* The first position of index (row-major) whose value is outside [lo, hi),
 * with the value in *bad; -1 when there is none (backend.h's index_check,
 * answered at once: op is the caller's to word the error with). */
int64_t gad__k_index_check(const char *op, const gad_tensor *index, int64_t lo, int64_t hi,
                           int64_t *bad);

/* Validated by the caller: index values are already known in range after
 * wrapping negatives (the kernels wrap too). */
void gad__k_gather(const gad_tensor *x, int axis, const gad_tensor *index,
                   gad_tensor *y);
/* y (contiguous) already holds a copy of dst; adds src (contiguous, index's
 * shape) at index along axis, in order, so duplicates add. */
void gad__k_scatter_add(gad_tensor *y, int axis, const gad_tensor *index,
                        const gad_tensor *src);
void gad__k_take(const gad_tensor *x, int axis, const gad_tensor *index,
                 gad_tensor *y);
/* Copy x into the block of y that starts at `start` along axis. */
void gad__k_cat_into(const gad_tensor *x, int axis, int64_t start,
                     gad_tensor *y);

/* ---------------------------------------------------------- matrices */

/* The back end's matmul entry (src/backend/backend.h), src/cpu/matmul.c. */
int gad__k_matmul(const char *op, const gad_tensor *a, const gad_tensor *b, gad_tensor *y,
                  int a1, int b1);

/* The comparison and selection family (backend/select.h), src/cpu/select.c. */
extern const struct gad_be_select gad__cpu_select;

#endif
