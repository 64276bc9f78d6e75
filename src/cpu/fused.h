/* fused.h: the CPU's fused families (docs/helix.md), one file each: scan.c,
 * rms_norm.c, masked_ce.c, embedding.c, helix.c. Their raw kernels work on
 * contiguous buffers of one float type (the _f32 and _f64 versions are
 * stamped from the family's template, <family>_tmpl.h); callers validate
 * shapes and allocate outputs. No gradients here: the backward kernels are
 * plain functions the ops layer calls from its VJPs. Each family file also
 * defines its sub-table of the seam (gad__cpu_<family>). */
#ifndef GAD_FUSED_H
#define GAD_FUSED_H

#include <stdint.h>

/* Weights of a HELIX block as raw pointers (see gad_helix_weights). */
#define GAD_HELIX_PTRS(T)                                                      \
    struct {                                                                   \
        const T *wa, *wb, *wo, *wf1, *wf2, *g1, *g2, *g3, *g4;                \
    }

/* The block's forward writes all of these, [M, D] each (M = B*T) but f1,
 * [M, 2D]; its backward reads a, h, out1, f1 and f2 only (not s2 and xn2:
 * the backward recomputes them, one cheap pass each, so that a
 * training step holds two fewer [M, D] buffers per block). */
#define GAD_HELIX_SAVED(T)                                                     \
    struct {                                                                   \
        T *a, *h, *s2, *out1, *xn2, *f1, *f2;                                  \
    }

/* Gradients of a HELIX block, in gad_helix_weights' order after x. */
#define GAD_HELIX_GRADS(T)                                                     \
    struct {                                                                   \
        T *x, *wa, *wb, *wo, *wf1, *wf2, *g1, *g2, *g3, *g4;                   \
    }

#define GAD_FUSED_DECLS(T, sfx)                                                \
    /* h_t = a_t h_{t-1} + b_t over t, for each of B sequences of T steps of  \
     * D channels ([B,T,D] row-major). */                                      \
    void gad__scan_fwd_##sfx(const T *a, const T *b, T *h, int64_t B,         \
                             int64_t T_, int64_t D);                           \
    /* G_t = gh_t + a_{t+1} G_{t+1}; gb = G; ga_t = G_t h_{t-1}, ga_0 = 0.    \
     * ga or gb may be NULL when not wanted. */                                \
    void gad__scan_bwd_##sfx(const T *a, const T *h, const T *gh, T *ga,      \
                             T *gb, int64_t B, int64_t T_, int64_t D);         \
    /* y = x / sqrt(mean(x^2) + eps) per row of n. */                          \
    void gad__rms_fwd_##sfx(const T *x, T *y, int64_t rows, int64_t n,        \
                            double eps);                                       \
    /* dx = g r - x r^3 (sum x g) / n, r = 1 / sqrt(mean(x^2) + eps). */       \
    void gad__rms_bwd_##sfx(const T *x, const T *g, T *dx, int64_t rows,      \
                            int64_t n, double eps);                            \
    /* probs = softmax rows of logits [N,V]; *loss = the masked loss          \
     * (targets of weighted rows already checked to be in range). 0, or -1   \
     * when scratch memory could not be allocated. */                         \
    int gad__mce_fwd_##sfx(const T *logits, const int64_t *targets,           \
                           const T *mask, T *probs, int64_t N, int64_t V,      \
                           double *loss);                                      \
    /* dlogits = (p - onehot(t)) m scale per weighted row, 0 elsewhere. */    \
    void gad__mce_bwd_##sfx(const T *probs, const int64_t *targets,           \
                            const T *mask, double scale, T *dlogits,           \
                            int64_t N, int64_t V);                             \
    /* y[r] = table[idx[r]] (rows of D); gt += scatter of gy rows (gt holds   \
     * V rows, zeroed by the caller). */                                       \
    void gad__emb_fwd_##sfx(const T *table, const int64_t *idx, T *y,         \
                            int64_t R, int64_t D);                             \
    void gad__emb_bwd_##sfx(const int64_t *idx, const T *gy, T *gt,           \
                            int64_t R, int64_t D);                             \
    /* The block's forward over x [M, D]; fills y [M, D] and the saved       \
     * buffers (all allocated by the caller). 0, or -1 when GEMM scratch or   \
     * a temporary could not be allocated. */                                  \
    int gad__helix_fwd_##sfx(const T *x, const void *w, const void *saved,    \
                             T *y, int64_t B, int64_t T_, int64_t D,           \
                             double eps);                                      \
    /* The block's backward: every gradient of `grads` (NULL entries are      \
     * skipped) from gy and the saved buffers. 0 or -1 (memory). */            \
    int gad__helix_bwd_##sfx(const T *x, const void *w, const void *saved,    \
                             const T *gy, const void *grads, int64_t B,        \
                             int64_t T_, int64_t D, double eps);

GAD_FUSED_DECLS(float, f32)
GAD_FUSED_DECLS(double, f64)

typedef GAD_HELIX_PTRS(float) gad_helix_w_f32;
typedef GAD_HELIX_PTRS(double) gad_helix_w_f64;
typedef GAD_HELIX_SAVED(float) gad_helix_saved_f32;
typedef GAD_HELIX_SAVED(double) gad_helix_saved_f64;
typedef GAD_HELIX_GRADS(float) gad_helix_grads_f32;
typedef GAD_HELIX_GRADS(double) gad_helix_grads_f64;

/* The families' sub-tables, which the CPU's table points to. */
extern const struct gad_be_scan gad__cpu_scan;
extern const struct gad_be_rms_norm gad__cpu_rms_norm;
extern const struct gad_be_masked_ce gad__cpu_masked_ce;
extern const struct gad_be_embedding gad__cpu_embedding;
extern const struct gad_be_helix gad__cpu_helix;
/* sort, cumulative, sampling */
extern const struct gad_be_sort gad__cpu_sort;
extern const struct gad_be_cumulative gad__cpu_cumulative;
extern const struct gad_be_sampling gad__cpu_sampling;
/* pooling (issue 28): src/cpu/pool.c */
extern const struct gad_be_pool gad__cpu_pool;
/* conv.c (not a fused family of docs/helix.md, but one of the seam's) */
extern const struct gad_be_conv gad__cpu_conv;
/* linear.c: bias and activation around linear layers' products */
extern const struct gad_be_linear gad__cpu_linear;
extern const struct gad_be_attention gad__cpu_attention;
/* normalization (issue 28): src/cpu/norm.c */
extern const struct gad_be_norm gad__cpu_norm;

#endif
