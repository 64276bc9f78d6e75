/* ops_int.h: helpers shared by the op families in src/ops, and the op
 * registry generated from ops.def. */
#ifndef GAD_OPS_INT_H
#define GAD_OPS_INT_H

#include "gad_int.h"
#include "ad/ad_int.h"
#include "backend/backend.h"

/* Return NULL (keeping or recording the error) when an argument is NULL
 * or a released tensor. */
#define GAD_NEED(op, t)                                                        \
    do {                                                                       \
        if (gad__bad_tensor(t)) return gad__bad_arg(op, t);                    \
    } while (0)

/* ---- half precision (issue 29): the generic f32 fallback
 * For the ops whose kernels compute in f32/f64 only: when a float input
 * among in[0..n) is f16 or bf16, GAD_HALF_VIA_F32 casts each such input to
 * f32 (in place in the array, by the differentiable gad_cast), returns
 * `call` (the op again, on in[]) with an f32 result rounded back to the
 * half dtype, all in a scope of its own; gradients flow back through the
 * casts, so a half input's gradient is half. The f32 copies cost a full
 * pass over memory each way: a native half kernel (widening a tile at a
 * time, as the elementwise ones) is faster. Float inputs must all have
 * the one half dtype (else the mixed-dtype error); NULL or released
 * entries and integer inputs pass unchanged (the op's own checks then
 * report a bad one). */
int gad__half_begin(const char *op, gad_tensor **in, int n);
gad_tensor *gad__half_end(gad_tensor *r, int dtype, gad_tensor **extra);
static inline bool gad__any_half(gad_tensor *const *in, int n) {
    for (int i = 0; i < n; i++)
        if (!gad__bad_tensor(in[i]) && gad__is_half(in[i]->dtype)) return true;
    return false;
}
/* The fallback itself, once a half input is known to be there (extra: as
 * in GAD_HALF_VIA_F32_OUT below, or NULL). */
#define GAD_HALF_RUN_F32_(op, in, n, extra, call)                              \
    do {                                                                       \
        int half_dt_ = gad__half_begin(op, in, n);                             \
        return gad__half_end(half_dt_ > 0 ? (call) : NULL, half_dt_, extra);   \
    } while (0)
#define GAD_HALF_VIA_F32(op, in, n, call)                                      \
    do {                                                                       \
        if (GAD_UNLIKELY(gad__any_half(in, n))) GAD_HALF_RUN_F32_(op, in, n, NULL, call); \
    } while (0)
/* Whether t's back end runs family fam on half tensors itself (the
 * family's `half`: its kernels widen, compute in f32 and round once, and
 * the node keeps half tensors). */
#define GAD_HALF_NATIVE(t, fam) (GAD_BE(t)->fam != NULL && GAD_BE(t)->fam->half)
/* The rule of an op whose kernels are family fam's: half inputs go to the
 * family when t's back end has its half kernels, else through
 * GAD_HALF_VIA_F32 (the dtype test first: f32 calls pay one branch). */
#define GAD_HALF_VIA_F32_UNLESS(fam, t, op, in, n, call)                       \
    do {                                                                       \
        if (GAD_UNLIKELY(gad__any_half(in, n)) && !GAD_HALF_NATIVE(t, fam))    \
            GAD_HALF_RUN_F32_(op, in, n, NULL, call);                          \
    } while (0)
/* The same for an op with a second result through a pointer (indices),
 * which is kept too: extra is that gad_tensor ** (may be NULL). */
#define GAD_HALF_VIA_F32_OUT(op, in, n, extra, call)                           \
    do {                                                                       \
        if (GAD_UNLIKELY(gad__any_half(in, n))) GAD_HALF_RUN_F32_(op, in, n, extra, call); \
    } while (0)

/* ------------------------------------------------------------- registry */

typedef enum gad_op_id {
    GAD_OP_LEAF = 0, /* leaves: no VJP */
#define X(ID, name, family, pwords) GAD_OP_##ID,
#include "ops.def"
#define NOGRAD(ID, name, family) GAD_OP_##ID,
#include "ops.def"
#define COMPOSITE(ID, name, family) GAD_OP_##ID,
#include "ops.def"
    GAD_OP_COUNT_
} gad_op_id;

/* The first op without a gradient (1 + the number of X rows) and the first
 * composite (after the NOGRAD rows): the ops 1 .. GAD_OP_NOGRAD_ - 1 record
 * nodes, GAD_OP_NOGRAD_ .. GAD_OP_COMPOSITE_ - 1 have no gradient and
 * GAD_OP_COMPOSITE_ .. GAD_OP_COUNT_ - 1 record the nodes of the ops they
 * call (both with info.vjp NULL). */
enum {
    GAD_OP_NOGRAD_ = 1
#define X(ID, name, family, pwords) +1
#include "ops.def"
};
enum { GAD_OP_COMPOSITE_ = GAD_OP_COUNT_
#define COMPOSITE(ID, name, family) -1
#include "ops.def"
};
/* an op that may have a gradient: an X or a COMPOSITE row */
#define GAD_OP_DIFFERENTIABLE(op) ((op) < GAD_OP_NOGRAD_ || (op) >= GAD_OP_COMPOSITE_)

/* A gradcheck case of an op, made by its sample function: inputs (float ones
 * are f64 leaves unless held constant), the call, and its parameters. */
typedef struct gad_op_sample {
    int n;
    gad_tensor *in[12];
    gad_tensor *(*apply)(void *self, gad_tensor *const *in, int n);
    int64_t i[2 * GAD_MAX_RANK];
    double d[4];
    int smooth; /* twice differentiable here: gradgradcheck applies */
    char what[120];
} gad_op_sample;

typedef struct gad_op_entry {
    gad_op_info info; /* what the engine sees: name and VJP */
    /* Fill case `variant` (0, 1, ...) with tensors owned by the current
     * scope, drawing values from r; return 0 when there is no such case. */
    int (*sample)(gad_op_sample *s, gad_rng *r, int variant);
} gad_op_entry;

extern const gad_op_entry gad__ops[GAD_OP_COUNT_];

/* What gad__track needs of op ID: its entry's gad_op_info. */
#define GAD_OP(ID) (&gad__ops[GAD_OP_##ID].info)

#define X(ID, name, family, pwords)                                            \
    int gad__vjp_##name(gad_node *n, gad_tensor *gy, const bool *need,         \
                        gad_tensor **gin);                                     \
    int gad__sample_##name(gad_op_sample *s, gad_rng *r, int variant);
#define NOGRAD(ID, name, family)                                               \
    int gad__sample_##name(gad_op_sample *s, gad_rng *r, int variant);
#define COMPOSITE(ID, name, family)                                            \
    int gad__sample_##name(gad_op_sample *s, gad_rng *r, int variant);
#include "ops.def"

/* ---------------------------------------------------- node parameters */

/* What an op keeps in its nodes (its row's pwords 8-byte words after the
 * shape), by name: GAD_NODE_P(n, reduce)->keepdims. Every field is an
 * int64_t or a double, so a struct is its row's pwords words exactly
 * (checked below against ops.def): the node keeps its size. */
#define GAD_NODE_P(n, kind) ((gad_np_##kind *)GAD_NP(n))

/* elementwise ops with scalars (mul_scalar, pow_scalar, clamp, ...): the
 * row's scalars, as its kernels get them (gad_uparams); a row of pwords 1
 * keeps a alone */
typedef struct gad_np_scalars {
    double a, b;
} gad_np_scalars;
/* sum, mean: the reduced axes (bit d for axis d), whether they were kept,
 * and how many elements each output is made of */
typedef struct gad_np_reduce {
    int64_t mask, keepdims, count;
} gad_np_reduce;
/* amax */
typedef struct gad_np_axis_keep {
    int64_t axis, keepdims;
} gad_np_axis_keep;
/* softmax, log_softmax, gather, scatter_add, take, cat */
typedef struct gad_np_axis {
    int64_t axis;
} gad_np_axis;
/* matmul: whether a and b were 1-D (seen as [1, k] and [k, 1]), and the
 * product's last two dims */
typedef struct gad_np_matmul {
    int64_t a_vec, b_vec, m, n;
} gad_np_matmul;
/* permute: the output's axis d is the input's axes[d] */
typedef struct gad_np_permute {
    int64_t axes[GAD_MAX_RANK];
} gad_np_permute;
/* slice, slice_scatter: the first index and the step of each dim */
typedef struct gad_np_slice {
    int64_t start[GAD_MAX_RANK], step[GAD_MAX_RANK];
} gad_np_slice;
/* select: the axis and the index taken on it */
typedef struct gad_np_select {
    int64_t axis, index;
} gad_np_select;
/* to_device: the input's device, where the gradient goes */
typedef struct gad_np_to_device {
    int64_t src;
} gad_np_to_device;
/* flip: the reversed axes (bit d for axis d) */
typedef struct gad_np_flip {
    int64_t mask;
} gad_np_flip;
/* roll: the shift of each axis, in [0, its size) */
typedef struct gad_np_roll {
    int64_t shift[GAD_MAX_RANK];
} gad_np_roll;
/* masked_fill: the value, and invert: the fill goes where the mask is
 * false instead (x kept where it is true: where's VJP) */
typedef struct gad_np_fill {
    double value;
    int64_t invert;
} gad_np_fill;
/* tril, triu: the diagonal offset */
typedef struct gad_np_diag {
    int64_t diag;
} gad_np_diag;
/* cumsum: the axis, and whether the sum runs from the end (its VJP) */
typedef struct gad_np_cumsum {
    int64_t axis, reverse;
} gad_np_cumsum;
/* pooling (issue 28), the four ops of src/ops/pool.c: the window of each
 * pooled axis (H then W; for 1-d pooling H is a unit axis, kernel 1), or
 * for adaptive pooling the output size in kernel; nd: 1 or 2 */
typedef struct gad_np_pool {
    int64_t kernel[2], stride[2], pad[2], dil[2];
    int64_t ceil, exclude_pad, divisor, adaptive, nd;
} gad_np_pool;
/* pad (issue 28): the left pad of each axis (negative: cropped; the right
 * one is what the shapes leave), the mode (gad_pad_mode) and constant
 * mode's value */
typedef struct gad_np_pad {
    int64_t lo[GAD_MAX_RANK], mode;
    double value;
} gad_np_pad;
/* unfold and fold (issue 28): the plane [H, W] (unfold's input, fold's
 * output) and the blocks: kernel, stride (>= 1), padding, dilation (>= 1)
 * per axis ([0] H, [1] W) */
typedef struct gad_np_fold {
    int64_t H, W, k[2], s[2], p[2], d[2];
} gad_np_fold;
/* interpolate and its backward (issue 28): the mode (gad_interp_mode),
 * align_corners, the spatial dims (1 or 2) and the scale factors (0: the
 * scale from the sizes; for 1-d sf[0] is the one) */
typedef struct gad_np_interp {
    int64_t mode, align, nd;
    double sf[2];
} gad_np_interp;
/* linear_act: the activation (gad_act) */
typedef struct gad_np_act {
    int64_t act;
} gad_np_act;
/* rms_norm, helix_block */
typedef struct gad_np_eps {
    double eps;
} gad_np_eps;

/* conv, conv_transpose, conv_weight (src/ops/conv.c): the spatial dims
 * (1..3), groups, and the geometry as 3-D (a 1-D or 2-D op's leading dims
 * size 1, stride and dilation 1, padding 0: backend/conv.h), with the one
 * spatial size the inputs do not give: conv's output, conv_transpose's
 * output (the convolution's input), conv_weight's kernel */
typedef struct gad_np_conv {
    int64_t nd, groups, stride[3], pad[3], dil[3], size[3];
} gad_np_conv;
/* scaled_dot_product_attention (issue 27): the scale used, the dropout
 * probability and its Philox key, whether causal */
typedef struct gad_np_sdpa {
    double scale, dropout_p;
    int64_t seed, causal;
} gad_np_sdpa;
/* rope (issue 27) */
typedef struct gad_np_rope {
    double base;
    int64_t interleaved;
} gad_np_rope;
/* batch_norm (normalization, issue 28): eps, and whether the statistics
 * were the batch's (1) or constants (0) */
typedef struct gad_np_bnorm {
    double eps;
    int64_t batch;
} gad_np_bnorm;
/* group_norm (normalization, issue 28): eps and the number of groups */
typedef struct gad_np_gnorm {
    double eps;
    int64_t groups;
} gad_np_gnorm;

enum {
#define X(ID, name, family, pwords) GAD_PWORDS_##ID = (pwords),
#include "ops.def"
};
#define GAD_NP_FITS(kind, ID)                                                  \
    _Static_assert(sizeof(gad_np_##kind) == 8 * GAD_PWORDS_##ID,               \
                   "gad_np_" #kind " is not " #ID "'s pwords words (ops.def)")
GAD_NP_FITS(scalars, CLAMP);
GAD_NP_FITS(fill, MASKED_FILL);
GAD_NP_FITS(diag, TRIL);
GAD_NP_FITS(diag, TRIU);
GAD_NP_FITS(reduce, SUM);
GAD_NP_FITS(flip, FLIP);
GAD_NP_FITS(roll, ROLL);
GAD_NP_FITS(reduce, MEAN);
GAD_NP_FITS(axis_keep, AMAX);
GAD_NP_FITS(axis, SOFTMAX);
GAD_NP_FITS(axis, LOG_SOFTMAX);
GAD_NP_FITS(axis, GATHER);
GAD_NP_FITS(axis, SCATTER_ADD);
GAD_NP_FITS(axis, TAKE);
GAD_NP_FITS(axis, CAT);
GAD_NP_FITS(matmul, MATMUL);
GAD_NP_FITS(permute, PERMUTE);
GAD_NP_FITS(slice, SLICE);
GAD_NP_FITS(slice, SLICE_SCATTER);
GAD_NP_FITS(select, SELECT);
GAD_NP_FITS(to_device, TO_DEVICE);
GAD_NP_FITS(eps, RMS_NORM);
GAD_NP_FITS(eps, HELIX_BLOCK);
/* sort, top-k, cumulative */
GAD_NP_FITS(axis, SORT);
GAD_NP_FITS(axis, TOPK);
GAD_NP_FITS(cumsum, CUMSUM);
GAD_NP_FITS(axis, CUMPROD);
GAD_NP_FITS(pool, MAX_POOL); /* pooling (issue 28) */
GAD_NP_FITS(pool, MAX_POOL_BACKWARD);
GAD_NP_FITS(pool, AVG_POOL);
GAD_NP_FITS(pool, AVG_POOL_BACKWARD);
GAD_NP_FITS(pad, PAD);
GAD_NP_FITS(conv, CONV);
GAD_NP_FITS(conv, CONV_TRANSPOSE);
GAD_NP_FITS(conv, CONV_WEIGHT);
GAD_NP_FITS(sdpa, SDPA);
GAD_NP_FITS(rope, ROPE);
GAD_NP_FITS(bnorm, BATCH_NORM); /* normalization (issue 28) */
GAD_NP_FITS(gnorm, GROUP_NORM);
GAD_NP_FITS(act, LINEAR_ACT);
GAD_NP_FITS(fold, UNFOLD);
GAD_NP_FITS(fold, FOLD);
GAD_NP_FITS(interp, INTERPOLATE);
GAD_NP_FITS(interp, INTERPOLATE_BACKWARD);
#undef GAD_NP_FITS

/* ------------------------------------------------------------- helpers */

/* Whether every value of index (i64) lies in [lo, hi), checked on its
 * device: 0, or -1 with the first position outside (row-major) in *pos and
 * its value in *bad; nothing is recorded (the caller words the error). A
 * back end that defers the check (backend.h's index_check) answers 0 and
 * reports a bad value under op at the device's next synchronising call. */
int gad__index_in_range(const char *op, const gad_tensor *index, int64_t lo, int64_t hi,
                        int64_t *pos, int64_t *bad);

/* Make t private and packed so that it can be written in place (the
 * copy-on-write of gad_data_mut, on any device): 0, or -1 with a
 * not-unique error (t is a tracked op's output) or a memory error under op. */
int gad__make_writable(const char *op, gad_tensor *t);

/* A new view header over src's storage with the given layout (refs = 1,
 * owned by nobody yet, off the tape). */
gad_tensor *gad__view_new(const char *op, gad_tensor *src, const int64_t *shape,
                          const int64_t *strides, int rank, int64_t offset);

/* Resolve a requested shape with at most one -1 against numel (SPEC 1.10).
 * 0 or -1 (shape error). */
int gad__resolve_reshape(const char *op, const gad_tensor *t,
                         const int64_t *shape, int rank, int64_t *out);

/* Sum g over the axes that broadcasting stretched, down to shape (VJPs). */
gad_tensor *gad__unbroadcast(gad_tensor *g, const int64_t *shape, int rank);

/* Untracked results of kernels, for masks in VJPs (owned by the scope). */
gad_tensor *gad__const_unary(gad_ukernel k, gad_tensor *x, double a, double b);
gad_tensor *gad__const_binary(gad_bkernel k, gad_tensor *a, gad_tensor *b);

/* The view of t with per-axis start and step (t's rank) and the given
 * shape, on the tape as a slice (SLICE_SCATTER's VJP). */
gad_tensor *gad__slice_geom(gad_tensor *t, const int64_t *start,
                            const int64_t *step, const int64_t *shape);

/* zeros(shape) with src written at the view (start, step) of it: the VJP
 * of slice and select, and an op of its own so that it is differentiable. */
gad_tensor *gad__slice_scatter(gad_tensor *src, const int64_t *shape, int rank,
                               const int64_t *start, const int64_t *step);

/* Helpers for samples: an f64 leaf of the given shape with values in
 * [lo, hi) (and |x| >= away from 0 when away > 0); a sample description. */
gad_tensor *gad__sample_leaf(gad_rng *r, const int64_t *shape, int rank,
                             double lo, double hi, double away);

/* The unfused compositions of the fused ops (src/ops/fused.c): the same
 * values from ordinary tracked ops; the fused VJPs go through them under
 * GAD_CREATE_GRAPH, and tests compare. */
gad_tensor *gad__gated_scan_unfused(gad_tensor *a, gad_tensor *b);
gad_tensor *gad__rms_norm_unfused(gad_tensor *x, double eps);
gad_tensor *gad__masked_ce_unfused(gad_tensor *logits, gad_tensor *targets, gad_tensor *mask);
gad_tensor *gad__embedding_unfused(gad_tensor *table, gad_tensor *idx);
gad_tensor *gad__helix_block_unfused(gad_tensor *x, const gad_helix_weights *w, double eps);

/* gad_linear_act under op's name (gad_linear's is "linear"), act a
 * gad_act (src/ops/linear.c). With GAD_ACT_NONE it runs where the fused
 * node cannot (a device without the linear family) as gad_matmul and
 * gad_add; gad_linear_act there is an unsupported error. */
gad_tensor *gad__linear(const char *op, gad_tensor *x, gad_tensor *w, gad_tensor *b, int act);
/* normalization (issue 28, src/ops/norm.c): batch norm from ordinary ops,
 * with the batch's statistics (batch) or the constants mean, invstd [C] */
gad_tensor *gad__batch_norm_unfused(gad_tensor *x, gad_tensor *w, gad_tensor *b,
                                    gad_tensor *mean, gad_tensor *invstd, int batch, double eps);
/* group norm from ordinary ops: x seen as [N, groups, C/groups S], w, b
 * per channel (each NULL: none) */
gad_tensor *gad__group_norm_unfused(gad_tensor *x, gad_tensor *w, gad_tensor *b, int64_t groups,
                                    double eps);

/* attention (src/ops/attention.c, issue 27): the composition that defines
 * scaled_dot_product_attention, with the dropout factors of seed (the key
 * the op draws from its rng: gad_rng_next); and those factors, [.., Hq, Tq,
 * Tk] of 0 or 1/(1-p), as the kernels draw them (tests compare). */
gad_tensor *gad__sdpa_unfused(gad_tensor *q, gad_tensor *k, gad_tensor *v, gad_tensor *mask,
                              int is_causal, double dropout_p, double scale, uint64_t seed);
gad_tensor *gad__sdpa_dropout_factors(gad_tensor *q, gad_tensor *k, gad_tensor *v,
                                      double dropout_p, uint64_t seed);

/* integer dtypes of the sort family (src/ops/sort.c): the index of the
 * first minimum (largest: maximum) along axis for f32, f64 and i64; reduce.c's
 * argmax sends i64 here (its own kernel takes floats). */
gad_tensor *gad__arg_extreme(const char *op, gad_tensor *x, int axis, int keepdims,
                             int largest);

/* ------------------------------------------------------------- offload */

/* g's matmul offload (offload.c, SPEC §8). gad__offload_wanted: the setting
 * is on. gad__offload_matmul: y (the full batch + [M, N], contiguous, on
 * the host) = a @ b computed with the GPUs when the product passes the
 * crossover and a GPU is there; 1 when done, 0 when the CPU must compute it
 * (below the crossover, no GPU, or a GPU failed: no error left pending). */
bool gad__offload_wanted(void);
bool gad__offload_crossover(int64_t m, int64_t n, int64_t k, int64_t batch);
int gad__offload_matmul(const char *op, gad_tensor *a, gad_tensor *b, gad_tensor *y, int a1,
                        int b1);
extern atomic_llong gad__offload_products; /* how many products used a GPU */

#endif
