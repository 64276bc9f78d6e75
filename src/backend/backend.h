/* backend.h: the seam between the ops and the devices (DESIGN §1, §9). One
 * table of kernel entry points per back end, at the granularity of the
 * kernel families; a device is a number (src/core/gad_int.h) whose table
 * is gad__backends[dev]. The CPU (src/cpu/backend.c) is device 0.
 *
 * The contract of every entry, unless it says otherwise:
 * - The ops layer has validated dtypes, shapes and devices: every tensor
 *   argument lives on this back end's device, and outputs are fresh
 *   contiguous tensors the caller allocated there (gad__tensor_new).
 * - Inputs may have any strides where the entry says so; otherwise the
 *   caller passes packed (contiguous) tensors (gad__contig).
 * - Kernels never know about gradients and never allocate tensors.
 * - An entry that returns int returns 0, or -1 with the error recorded
 *   (gad__err): an index out of range (checked here, on the device, so that
 *   an op never copies indices to the host to validate them), or scratch
 *   memory the kernel could not get (a memory error under op).
 * - Work may be queued: a device back end's results are ready at the next
 *   copy to the host or sync (gad_devmem).
 * - A back end may defer its index checks (index_check, mce_prep): it then
 *   reports the first bad index at the next synchronising call on that
 *   device (gad__err_late_index), and every kernel of it that consumes
 *   indices must stay in bounds when one is bad (0 at that position, or
 *   the entry skipped), since the op runs before the error is known. */
#ifndef GAD_BACKEND_H
#define GAD_BACKEND_H

#include "gad_int.h"
#include "backend/kernels.h"

/* A HELIX block's tensors, in one array: the ten inputs (x, wa, wb, wo,
 * wf1, wf2, g1..g4), then the buffers the forward fills and the backward
 * reads (a, h, out1, f1, f2), then the forward's scratch (s2, xn2). */
enum {
    GAD_HX_X, GAD_HX_WA, GAD_HX_WB, GAD_HX_WO, GAD_HX_WF1, GAD_HX_WF2,
    GAD_HX_G1, GAD_HX_G2, GAD_HX_G3, GAD_HX_G4, GAD_HX_NIN,
    GAD_HX_A = GAD_HX_NIN, GAD_HX_H, GAD_HX_OUT1, GAD_HX_F1, GAD_HX_F2, GAD_HX_NSAVE,
    GAD_HX_S2 = GAD_HX_NSAVE, GAD_HX_XN2, GAD_HX_NALL
};

/* AdamW's coefficients for one step t (from 1), computed by the caller in
 * double. */
typedef struct gad_adamw_coef {
    double beta1, one_minus_beta1; /* beta1 and 1 - beta1 */
    double beta2, one_minus_beta2; /* beta2 and 1 - beta2 */
    double bc1, bc2;               /* 1 - beta1^t and 1 - beta2^t */
    double lr, eps;
    double decay;                  /* 1 - lr * weight_decay */
} gad_adamw_coef;

/* SGD's coefficients. momentum is read only when a buffer is given. */
typedef struct gad_sgd_coef {
    double lr, weight_decay, momentum;
    int first;    /* the buffer is new: b = g' instead of momentum b + g' */
    int nesterov; /* step along g' + momentum b instead of b */
} gad_sgd_coef;

typedef struct gad_backend {
    const char *name;
    const gad_devmem *mem; /* allocation, copies and sync (core's half) */

    /* -- elementwise (any strides; b and v broadcast to the output) */
    void (*unary)(gad_ukernel k, const gad_tensor *x, gad_tensor *y, const gad_uparams *p);
    void (*binary)(gad_bkernel k, const gad_tensor *a, const gad_tensor *b, gad_tensor *y);
    void (*grad)(gad_gkernel k, const gad_tensor *gy, const gad_tensor *v, gad_tensor *out,
                 const gad_uparams *p);
    /* y (x's shape, another dtype) = x converted (any strides), as
     * gad_cast defines it. */
    void (*convert)(const gad_tensor *x, gad_tensor *y);

    /* -- reductions (packed x; see cpu.h for each one's meaning) */
    void (*sum)(const gad_tensor *x, unsigned mask, double scale, gad_tensor *y);
    void (*amax)(const gad_tensor *x, int axis, gad_tensor *y);
    void (*amax_mask)(const gad_tensor *x, int axis, gad_tensor *y);
    void (*argmax)(const gad_tensor *x, int axis, gad_tensor *y);
    void (*softmax)(const gad_tensor *x, int axis, int log, gad_tensor *y);
    /* Whether every element of x (any strides, float) is finite. */
    bool (*all_finite)(const gad_tensor *x);

    /* -- indexing (index: i64, any strides; gather and take read f32, f64
     * or i64 x, scatter_add float only) */
    /* The first position (row-major) of index whose value lies outside
     * [lo, hi), its value in *bad, for the caller to word the error (the
     * CPU, and the test device by default, answer at once); or -1 when
     * every value is inside, or when the back end defers the check (CUDA:
     * the check is queued on the device, no answer comes back). A back
     * end that defers promises to report the first bad index of the
     * checks queued since its last synchronising call, as an index error
     * under op naming the value and the bounds, at the next one (its sync,
     * a copy to or from the host, an entry that waits for an answer). */
    int64_t (*index_check)(const char *op, const gad_tensor *index, int64_t lo, int64_t hi,
                           int64_t *bad);
    void (*gather)(const gad_tensor *x, int axis, const gad_tensor *index, gad_tensor *y);
    void (*scatter_add)(gad_tensor *y, int axis, const gad_tensor *index,
                        const gad_tensor *src);
    void (*take)(const gad_tensor *x, int axis, const gad_tensor *index, gad_tensor *y);
    void (*cat_into)(const gad_tensor *x, int axis, int64_t start, gad_tensor *y);

    /* -- matrix products. y (batch + [M, N], contiguous) = a @ b with
     * NumPy's batch broadcasting; a1/b1: a is 1-D (a row [1, K]) or b is
     * 1-D (a column [K, 1]). a and b any strides (transposed views without
     * copies where the GEMM can read them). -1: scratch memory (recorded). */
    int (*matmul)(const char *op, const gad_tensor *a, const gad_tensor *b, gad_tensor *y,
                  int a1, int b1);

    /* -- the fused HELIX kernels (packed tensors; docs/helix.md; cpu/fused.h) */
    void (*scan_fwd)(const gad_tensor *a, const gad_tensor *b, gad_tensor *h);
    /* ga or gb NULL when not wanted */
    void (*scan_bwd)(const gad_tensor *a, const gad_tensor *h, const gad_tensor *gh,
                     gad_tensor *ga, gad_tensor *gb);
    void (*rms_fwd)(const gad_tensor *x, gad_tensor *y, double eps);
    void (*rms_bwd)(const gad_tensor *x, const gad_tensor *g, gad_tensor *dx, double eps);
    /* masked cross-entropy over logits [N, V]: prep checks the targets of
     * the rows whose weight is not 0 against V (an index error "target T of
     * row R out of bounds for V classes", at once, or deferred as
     * index_check says: the bad targets are then written as 0), writes
     * them to safe (i64 [N], unweighted rows' targets 0), the total
     * |weight| to count (f64, rank
     * 0) and -1/count (0 when count is 0) to nscale (the logits' dtype,
     * rank 0). fwd writes the softmax rows to probs and the loss to loss
     * (rank 0); bwd writes dlogits = (probs - onehot) * mask * gy / count. */
    int (*mce_prep)(const char *op, const gad_tensor *targets, const gad_tensor *mask,
                    int64_t V, gad_tensor *safe, gad_tensor *count, gad_tensor *nscale);
    int (*mce_fwd)(const char *op, const gad_tensor *logits, const gad_tensor *safe,
                   const gad_tensor *mask, gad_tensor *probs, gad_tensor *loss);
    void (*mce_bwd)(const gad_tensor *probs, const gad_tensor *safe, const gad_tensor *mask,
                    const gad_tensor *count, const gad_tensor *gy, gad_tensor *dlogits);
    /* y [R, D] = rows idx (values checked by the caller, at once or
     * deferred) of table [V, D]; gt (zeroed by the caller) += the rows of
     * gy scattered back. */
    void (*emb_fwd)(const gad_tensor *table, const gad_tensor *idx, gad_tensor *y);
    void (*emb_bwd)(const gad_tensor *idx, const gad_tensor *gy, gad_tensor *gt);
    /* t holds GAD_HX_NALL tensors (the forward) or GAD_HX_NSAVE (the
     * backward: s2 and xn2 are recomputed); grads the ten inputs' gradients
     * (NULL entries skipped). -1: scratch memory (recorded). */
    int (*helix_fwd)(const char *op, gad_tensor *const *t, gad_tensor *y, double eps);
    int (*helix_bwd)(const char *op, gad_tensor *const *t, const gad_tensor *gy,
                     gad_tensor *const *grads, double eps);

    /* -- optimizers (the CPU's: src/cpu/optim.h, which gives the formulas
     * and the order of the arithmetic): one parameter's update in place.
     * p, the state tensors and g are packed, of p's dtype and shape, and
     * writable where written (the caller did the copy-on-write). */
    void (*adamw_step)(gad_tensor *p, gad_tensor *m, gad_tensor *v, const gad_tensor *g,
                       const gad_adamw_coef *c);
    /* b: the momentum buffer, NULL for plain SGD */
    void (*sgd_step)(gad_tensor *p, gad_tensor *b, const gad_tensor *g, const gad_sgd_coef *c);
    /* The sum of the squares of g's elements (packed), in double, in an
     * order fixed by the size alone; and g *= s in place (packed). */
    double (*sumsq)(const gad_tensor *g);
    void (*scale)(gad_tensor *g, double s);
} gad_backend;

/* An index error a back end found on its device and reports later, at a
 * synchronising call (a deferred index_check or mce_prep): the op that
 * asked and the first bad value. */
typedef struct gad_late_index {
    char op[32];
    int target;    /* 0: the value at position pos of an index, bounds [lo, hi);
                    * 1: masked_ce's target of row pos, hi classes */
    int64_t pos, value, lo, hi;
} gad_late_index;

/* What was wrong, "index 12 out of bounds for size 10 at position 4" (or
 * "... out of bounds [0, 10) at ...", "target 12 of row 4 out of bounds
 * for 10 classes"), cut to cap - 1 bytes. */
void gad__late_index_text(char *buf, size_t cap, const gad_late_index *f);
/* It recorded as the thread's error, found on device dev: GAD_ERR_INDEX
 * under f->op, the text followed by "(found on cuda:0, reported at this
 * synchronising call)". */
void gad__err_late_index(int dev, const gad_late_index *f);

/* The table of every device (NULL where none is registered). */
extern const gad_backend *gad__backends[GAD_MAX_DEVICES];

/* The table of t's device. */
#define GAD_BE(t) (gad__backends[(t)->dev])

/* The CPU's table (device 0). */
extern const gad_backend gad__cpu_backend;

/* Register a back end as a new device: its memory hooks go to core, its
 * table here. Returns the device number, or -1 when every slot is taken. */
int gad__backend_register(const gad_backend *be);

#endif
