/* norm.c: normalization over channels (issue 28): batch norm and group
 * norm, each one tape node with a fused forward and backward (the back
 * end's norm family, backend/norm.h; the CPU's is src/cpu/norm.c), and
 * instance norm as group norm with one channel a group (batch norm's
 * evaluation with its running statistics). Under GAD_CREATE_GRAPH the VJPs
 * go through the unfused composition of ordinary tracked ops, so that they
 * are differentiable again (as rms_norm's in fused.c). PyTorch's
 * torch.nn.functional semantics. */
#include "ops_int.h"
#include "backend/norm.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A packed version of t (gad__contig), owned by the current scope. */
static gad_tensor *packed(const char *op, gad_tensor *t) {
    return t ? gad__own(gad__contig(op, t)) : NULL;
}

static int check_eps(const char *op, double eps) {
    if (eps >= 0 && isfinite(eps)) return 0;
    gad__err(GAD_ERR_DOMAIN, op, "eps must be finite and >= 0, got %g", eps);
    return -1;
}

/* x as [N, C, S] */
static void ncs(const gad_tensor *x, int64_t *N, int64_t *C, int64_t *S) {
    *N = x->shape[0];
    *C = x->shape[1];
    *S = 1;
    for (int d = 2; d < x->rank; d++) *S *= x->shape[d];
}

/* [1, C, 1, ...] of x's rank: a per-channel tensor broadcast over x */
static gad_tensor *per_channel(gad_tensor *t, const gad_tensor *x) {
    int64_t s[GAD_MAX_RANK];
    for (int d = 0; d < x->rank; d++) s[d] = d == 1 ? x->shape[1] : 1;
    return gad_reshape(t, s, x->rank);
}

/* A per-channel argument (weight, bias, running stats): [C], x's dtype and
 * device. */
static int check_chan(const char *op, const char *what, const gad_tensor *t, const gad_tensor *x,
                      int64_t C) {
    if (!t) return 0;
    if (gad__bad_tensor(t)) return (gad__bad_arg(op, t), -1);
    if (gad__need_same_dtype(op, x, t)) return -1;
    if (t->dev != x->dev) return (gad__err_device(op, x->dev, t->dev), -1);
    if (t->rank != 1 || t->shape[0] != C) {
        char b1[GAD_SHAPE_BUF], b2[GAD_SHAPE_BUF];
        gad__err(GAD_ERR_SHAPE, op, "%s must be [%lld] for x %s, got %s", what, (long long)C,
                 gad__shape_str(b1, x->shape, x->rank), gad__shape_str(b2, t->shape, t->rank));
        return -1;
    }
    return 0;
}

/* running statistics are written in place: not on the tape */
static int check_running(const char *op, const char *what, const gad_tensor *t) {
    if (!t || !t->node) return 0;
    gad__err(GAD_ERR_DOMAIN, op,
             "%s is on the tape (a leaf or an op's result); running statistics are updated in "
             "place and take no gradient: pass a detached tensor",
             what);
    return -1;
}

/* ============================================================ batch norm */

/* The same values from ordinary tracked ops: batch statistics (batch) or
 * the constants mean and invstd ([C]) */
gad_tensor *gad__batch_norm_unfused(gad_tensor *x, gad_tensor *w, gad_tensor *b,
                                    gad_tensor *mean, gad_tensor *invstd, int batch, double eps) {
    GAD_NEED("batch_norm", x);
    int axes[GAD_MAX_RANK], na = 0;
    for (int d = 0; d < x->rank; d++)
        if (d != 1) axes[na++] = d;
    gad_scope_begin();
    gad_tensor *xh;
    if (batch) {
        gad_tensor *xc = gad_sub(x, gad_mean(x, axes, na, 1));
        gad_tensor *var = gad_mean(gad_square(xc), axes, na, 1);
        xh = gad_div(xc, gad_sqrt(gad_add_scalar(var, eps)));
    } else {
        xh = gad_mul(gad_sub(x, per_channel(mean, x)), per_channel(invstd, x));
    }
    if (w) xh = gad_mul(xh, per_channel(w, x));
    if (b) xh = gad_add(xh, per_channel(b, x));
    gad_tensor *y = gad_keep(xh);
    gad_scope_end();
    return y;
}

/* y on the tape as op of x, w, b, saving them and the statistics mean and
 * invstd (which the caller retained for the node: released here). */
static gad_tensor *track_stats(gad_tensor *y, const gad_op_info *op, gad_tensor *x,
                               gad_tensor *w, gad_tensor *b, gad_tensor *mean,
                               gad_tensor *invstd) {
    gad_tensor *in[3] = {x, w, b}, *save[5] = {x, w, b, mean, invstd};
    y = gad__track(y, op, in, 3, save, 5);
    gad_release(mean);
    gad_release(invstd);
    return y;
}

/* The node: x [N, C, ...] checked by the caller; batch: normalise with the
 * batch's statistics (and update rm, rv when given), else with rm, rv. */
static gad_tensor *bn_core(const char *op, gad_tensor *x, gad_tensor *rm, gad_tensor *rv,
                           gad_tensor *w, gad_tensor *b, int batch, double momentum,
                           double eps) {
    if (GAD_LACKS_FAM(op, x, norm, stats) || GAD_LACKS_FAM(op, x, norm, fwd)) return NULL;
    int64_t N, C, S;
    ncs(x, &N, &C, &S);
    gad_tensor *y = gad__tensor_like(op, x), *mean = NULL, *invstd = NULL;
    if (!y) return NULL;
    int ok = 0;
    gad_scope_begin();
    gad_tensor *xp = packed(op, x), *wp = packed(op, w), *bp = packed(op, b);
    if (xp && (!w || wp) && (!b || bp)) {
        if (batch) {
            mean = gad__own(gad__tensor_new(op, x->dev, x->dtype, &C, 1));
            invstd = gad__own(gad__tensor_new(op, x->dev, x->dtype, &C, 1));
            if (mean && invstd && N * S == 0) { /* an empty batch: NaN statistics, no update */
                gad__fill(mean, NAN);
                gad__fill(invstd, NAN);
                ok = 1;
            } else if (mean && invstd && (!rm || (gad__make_writable(op, rm) == 0 &&
                                                  gad__make_writable(op, rv) == 0))) {
                GAD_BE(x)->norm->stats(xp, mean, invstd, rm, rv, momentum, eps);
                ok = 1;
            }
        } else {
            gad_no_grad_begin();
            mean = packed(op, rm);
            invstd = gad_pow_scalar(gad_add_scalar(rv, eps), -0.5);
            gad_no_grad_end();
            ok = mean && invstd;
        }
        if (ok) GAD_BE(x)->norm->fwd(xp, mean, invstd, wp, bp, y);
    }
    if (ok) { /* the node keeps them: out of the scope */
        gad_retain(mean);
        gad_retain(invstd);
    }
    gad_scope_end();
    if (!ok) {
        gad_release(y);
        return NULL;
    }
    y = track_stats(y, GAD_OP(BATCH_NORM), x, w, b, mean, invstd);
    if (y && y->node) {
        GAD_NODE_P(y->node, bnorm)->eps = eps;
        GAD_NODE_P(y->node, bnorm)->batch = batch;
    }
    return gad__own(y);
}

/* x: rank >= 2, float; the per-channel arguments against it */
static int check_x(const char *op, gad_tensor *x) {
    if (gad__need_float(op, x)) return -1;
    if (x->rank < 2) {
        char b[GAD_SHAPE_BUF];
        gad__err(GAD_ERR_SHAPE, op, "x must be [N, C, ...] (rank >= 2), got %s",
                 gad__shape_str(b, x->shape, x->rank));
        return -1;
    }
    return 0;
}

/* The checks batch_norm and instance_norm share: x, eps, the per-channel
 * tensors and the running statistics, which go together, are needed when
 * the batch's statistics are not used (`without`: when that is) and are
 * updated with a finite momentum. Sets x's [N, C, S]; 1 on an error
 * (recorded). */
static int check_stats_args(const char *op, gad_tensor *x, gad_tensor *running_mean,
                            gad_tensor *running_var, gad_tensor *weight, gad_tensor *bias,
                            int batch_stats, double momentum, double eps, const char *without,
                            int64_t *N, int64_t *C, int64_t *S) {
    if (check_x(op, x) || check_eps(op, eps)) return 1;
    ncs(x, N, C, S);
    if (check_chan(op, "weight", weight, x, *C) || check_chan(op, "bias", bias, x, *C) ||
        check_chan(op, "running_mean", running_mean, x, *C) ||
        check_chan(op, "running_var", running_var, x, *C) ||
        check_running(op, "running_mean", running_mean) ||
        check_running(op, "running_var", running_var))
        return 1;
    if (!running_mean != !running_var) {
        gad__err(GAD_ERR_DOMAIN, op, "running_mean and running_var go together (one is NULL)");
        return 1;
    }
    if (!batch_stats && !running_mean) {
        gad__err(GAD_ERR_DOMAIN, op, "running_mean and running_var are needed %s", without);
        return 1;
    }
    if (batch_stats && running_mean && !isfinite(momentum)) {
        gad__err(GAD_ERR_DOMAIN, op, "momentum must be finite, got %g", momentum);
        return 1;
    }
    return 0;
}

/* ---- half x with half running statistics (issue 29): the f32 op runs on
 * f32 copies of the statistics, whose update is then written back into
 * them rounded once. */
static int half_running(const gad_tensor *x, const gad_tensor *rm, const gad_tensor *rv) {
    return !gad__bad_tensor(x) && gad__is_half(x->dtype) && !gad__bad_tensor(rm) &&
           !gad__bad_tensor(rv) && gad__is_half(rm->dtype) && gad__is_half(rv->dtype);
}

static int write_back(const char *op, gad_tensor *dst, gad_tensor *src) {
    gad_tensor *h = gad_cast(src, dst->dtype);
    if (!h || gad__make_writable(op, dst)) return -1;
    gad__pack(h, gad__ptr(dst));
    return 0;
}

static gad_tensor *norm_half_running(const char *op, int inst, gad_tensor *x, gad_tensor *rm,
                                     gad_tensor *rv, gad_tensor *w, gad_tensor *b, int flag,
                                     double momentum, double eps) {
    gad_scope_begin();
    gad_no_grad_begin();
    gad_tensor *m32 = gad_cast(rm, GAD_F32), *v32 = gad_cast(rv, GAD_F32), *y = NULL;
    gad_no_grad_end();
    if (m32 && v32)
        y = inst ? gad_instance_norm(x, m32, v32, w, b, flag, momentum, eps)
                 : gad_batch_norm(x, m32, v32, w, b, flag, momentum, eps);
    if (y && (write_back(op, rm, m32) || write_back(op, rv, v32))) y = NULL;
    gad_keep(y);
    gad_scope_end();
    return y;
}

gad_tensor *gad_batch_norm(gad_tensor *x, gad_tensor *running_mean, gad_tensor *running_var,
                           gad_tensor *weight, gad_tensor *bias, int training, double momentum,
                           double eps) {
    const char *op = "batch_norm";
    GAD_COMPOSITE(op); /* evaluation's invstd comes from ordinary ops */
    GAD_NEED(op, x);
    if (GAD_UNLIKELY(half_running(x, running_mean, running_var)))
        return norm_half_running(op, 0, x, running_mean, running_var, weight, bias, training,
                                 momentum, eps);
    gad_tensor *hin[3] = {x, weight, bias}; /* f32 running statistics stay as they are */
    GAD_HALF_VIA_F32(op, hin, 3,
                     gad_batch_norm(hin[0], running_mean, running_var, hin[1], hin[2], training,
                                    momentum, eps));
    int64_t N, C, S;
    if (check_stats_args(op, x, running_mean, running_var, weight, bias, training, momentum,
                         eps, "in evaluation mode", &N, &C, &S))
        return NULL;
    if (training && N * S == 1) {
        char b[GAD_SHAPE_BUF];
        return gad__err(GAD_ERR_SHAPE, op,
                        "expected more than 1 value per channel when training, got x %s",
                        gad__shape_str(b, x->shape, x->rank));
    }
    return bn_core(op, x, running_mean, running_var, weight, bias, training, momentum, eps);
}

int gad__vjp_batch_norm(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    const char *op = "batch_norm";
    double eps = GAD_NODE_P(n, bnorm)->eps;
    int batch = (int)GAD_NODE_P(n, bnorm)->batch;
    if (gad_grad_enabled()) {
        gad_tensor *w = n->saved[1] ? gad__saved(n, 1) : NULL;
        gad_tensor *b = n->saved[2] ? gad__saved(n, 2) : NULL;
        return gad__vjp_composed(n, gy, need, gin,
                                 gad__batch_norm_unfused(gad__saved(n, 0), w, b, n->saved[3],
                                                         n->saved[4], batch, eps));
    }
    if (GAD_LACKS_FAM(op, gy, norm, bwd)) return -1;
    gad_tensor *x = packed(op, n->saved[0]), *g = packed(op, gy);
    gad_tensor *w = n->saved[1] ? packed(op, n->saved[1]) : NULL;
    if (!x || !g || (n->saved[1] && !w)) return -1;
    int64_t C = x->shape[1];
    gad_tensor *dx = need[0] ? gad__own(gad__tensor_like(op, x)) : NULL;
    gad_tensor *dw = gad__own(gad__tensor_new(op, x->dev, x->dtype, &C, 1));
    gad_tensor *db = gad__own(gad__tensor_new(op, x->dev, x->dtype, &C, 1));
    if ((need[0] && !dx) || !dw || !db) return -1;
    /* mean and invstd are the op's own, packed */
    GAD_BE(x)->norm->bwd(x, g, n->saved[3], n->saved[4], w, batch, dx, dw, db);
    gin[0] = dx;
    gin[1] = need[1] ? dw : NULL;
    gin[2] = need[2] ? db : NULL;
    return 0;
}

/* ============================================================ group norm */

/* The same values from ordinary tracked ops: x [N, C, ...] seen as [N, G,
 * C/G S], each row normalised with its biased variance, then w and b per
 * channel (each optional) */
gad_tensor *gad__group_norm_unfused(gad_tensor *x, gad_tensor *w, gad_tensor *b, int64_t groups,
                                    double eps) {
    GAD_NEED("group_norm", x);
    int64_t N, C, S;
    ncs(x, &N, &C, &S);
    gad_scope_begin();
    int64_t rs[3] = {N, groups, C / groups * S};
    int ax = 2;
    gad_tensor *xr = gad_reshape(x, rs, 3);
    gad_tensor *xc = gad_sub(xr, gad_mean(xr, &ax, 1, 1));
    gad_tensor *var = gad_mean(gad_square(xc), &ax, 1, 1);
    gad_tensor *y = gad_reshape(gad_div(xc, gad_sqrt(gad_add_scalar(var, eps))), x->shape, x->rank);
    if (y && w) y = gad_mul(y, per_channel(w, y));
    if (y && b) y = gad_add(y, per_channel(b, y));
    gad_keep(y);
    gad_scope_end();
    return y;
}

/* The fused node: x [N, C, ...] and w, b checked by the caller, C % groups
 * = 0; rm, rv: [N groups], packed and writable, updated in place (instance
 * norm's running statistics repeated per sample), or NULL. */
static gad_tensor *gn_core(const char *op, gad_tensor *x, int64_t groups, gad_tensor *w,
                           gad_tensor *b, gad_tensor *rm, gad_tensor *rv, double momentum,
                           double eps) {
    if (GAD_LACKS_FAM(op, x, norm, group_fwd)) return NULL;
    int64_t NG = x->shape[0] * groups;
    gad_tensor *y = gad__tensor_like(op, x), *mean = NULL, *invstd = NULL;
    if (!y) return NULL;
    int ok = 0;
    gad_scope_begin();
    gad_tensor *xp = packed(op, x), *wp = packed(op, w), *bp = packed(op, b);
    if (xp && (!w || wp) && (!b || bp)) {
        mean = gad__own(gad__tensor_new(op, x->dev, x->dtype, &NG, 1));
        invstd = gad__own(gad__tensor_new(op, x->dev, x->dtype, &NG, 1));
        if (mean && invstd) {
            GAD_BE(x)->norm->group_fwd(xp, groups, wp, bp, y, mean, invstd, rm, rv, momentum, eps);
            ok = 1;
            gad_retain(mean); /* the node keeps them: out of the scope */
            gad_retain(invstd);
        }
    }
    gad_scope_end();
    if (!ok) {
        gad_release(y);
        return NULL;
    }
    y = track_stats(y, GAD_OP(GROUP_NORM), x, w, b, mean, invstd);
    if (y && y->node) {
        GAD_NODE_P(y->node, gnorm)->eps = eps;
        GAD_NODE_P(y->node, gnorm)->groups = groups;
    }
    return gad__own(y);
}

gad_tensor *gad_group_norm(gad_tensor *x, int64_t groups, gad_tensor *weight, gad_tensor *bias,
                           double eps) {
    const char *op = "group_norm";
    GAD_COMPOSITE(op);
    GAD_NEED(op, x);
    gad_tensor *hin[3] = {x, weight, bias};
    GAD_HALF_VIA_F32(op, hin, 3, gad_group_norm(hin[0], groups, hin[1], hin[2], eps));
    if (check_x(op, x) || check_eps(op, eps)) return NULL;
    int64_t N, C, S;
    ncs(x, &N, &C, &S);
    if (check_chan(op, "weight", weight, x, C) || check_chan(op, "bias", bias, x, C)) return NULL;
    if (groups <= 0 || C % groups != 0) {
        char b[GAD_SHAPE_BUF];
        return gad__err(GAD_ERR_SHAPE, op,
                        "the channels of x %s must be divisible by groups = %lld (> 0)",
                        gad__shape_str(b, x->shape, x->rank), (long long)groups);
    }
    return gn_core(op, x, groups, weight, bias, NULL, NULL, 0, eps);
}

int gad__vjp_group_norm(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    const char *op = "group_norm";
    double eps = GAD_NODE_P(n, gnorm)->eps;
    int64_t groups = GAD_NODE_P(n, gnorm)->groups;
    if (gad_grad_enabled()) {
        gad_tensor *w = n->saved[1] ? gad__saved(n, 1) : NULL;
        gad_tensor *b = n->saved[2] ? gad__saved(n, 2) : NULL;
        return gad__vjp_composed(n, gy, need, gin,
                                 gad__group_norm_unfused(gad__saved(n, 0), w, b, groups, eps));
    }
    if (GAD_LACKS_FAM(op, gy, norm, group_bwd)) return -1;
    gad_tensor *x = packed(op, n->saved[0]), *g = packed(op, gy);
    gad_tensor *w = n->saved[1] ? packed(op, n->saved[1]) : NULL;
    if (!x || !g || (n->saved[1] && !w)) return -1;
    int64_t C = x->shape[1];
    gad_tensor *dx = need[0] ? gad__own(gad__tensor_like(op, x)) : NULL;
    gad_tensor *dw = need[1] ? gad__own(gad__tensor_new(op, x->dev, x->dtype, &C, 1)) : NULL;
    gad_tensor *db = need[2] ? gad__own(gad__tensor_new(op, x->dev, x->dtype, &C, 1)) : NULL;
    if ((need[0] && !dx) || (need[1] && !dw) || (need[2] && !db)) return -1;
    /* mean and invstd are the op's own, packed */
    if (GAD_BE(x)->norm->group_bwd(op, x, g, n->saved[3], n->saved[4], w, groups, dx, dw, db))
        return -1;
    gin[0] = dx;
    gin[1] = dw;
    gin[2] = db;
    return 0;
}

/* ========================================================= instance norm */

/* t [C] repeated n times: a new [n C] tensor, off the tape */
static gad_tensor *repeat_rows(gad_tensor *t, int64_t n) {
    int64_t C = t->shape[0], s2[2] = {n, C}, flat = n * C;
    return gad_reshape(gad_contiguous(gad_broadcast_to(gad_reshape(t, (int64_t[]){1, C}, 2), s2, 2)),
                       &flat, 1);
}

/* dst[c] = the mean over n of src viewed as [n, C], in place */
static int mean_rows_into(const char *op, gad_tensor *dst, gad_tensor *src, int64_t n) {
    int64_t C = dst->shape[0];
    gad_tensor *m = gad_mean(gad_reshape(src, (int64_t[]){n, C}, 2), (int[]){0}, 1, 0);
    if (!m || gad__make_writable(op, dst)) return -1;
    gad__pack(m, gad__ptr(dst));
    return 0;
}

gad_tensor *gad_instance_norm(gad_tensor *x, gad_tensor *running_mean, gad_tensor *running_var,
                              gad_tensor *weight, gad_tensor *bias, int use_input_stats,
                              double momentum, double eps) {
    const char *op = "instance_norm";
    GAD_COMPOSITE(op);
    GAD_NEED(op, x);
    if (GAD_UNLIKELY(half_running(x, running_mean, running_var)))
        return norm_half_running(op, 1, x, running_mean, running_var, weight, bias,
                                 use_input_stats, momentum, eps);
    gad_tensor *hin[3] = {x, weight, bias}; /* f32 running statistics stay as they are */
    GAD_HALF_VIA_F32(op, hin, 3,
                     gad_instance_norm(hin[0], running_mean, running_var, hin[1], hin[2],
                                       use_input_stats, momentum, eps));
    int64_t N, C, S;
    if (check_stats_args(op, x, running_mean, running_var, weight, bias, use_input_stats,
                         momentum, eps, "when use_input_stats is 0", &N, &C, &S))
        return NULL;
    if (use_input_stats && S <= 1) {
        char b[GAD_SHAPE_BUF];
        return gad__err(GAD_ERR_SHAPE, op,
                        "expected more than 1 spatial element when training, got x %s",
                        gad__shape_str(b, x->shape, x->rank));
    }
    /* no channels: nothing to normalise (and no groups for gn_core, whose
     * group size C / groups would divide by zero); an empty result on the
     * tape, so that a gradient has x's shape */
    if (C == 0) return gad_clone(x);
    /* the running statistics: batch norm's evaluation */
    if (!use_input_stats)
        return bn_core(op, x, running_mean, running_var, weight, bias, 0, momentum, eps);
    /* the input's: group norm with one channel a group; as PyTorch, the
     * running statistics repeated N times are updated per sample, then
     * their mean over N is written back */
    if (GAD_LACKS_FAM(op, x, norm, group_fwd)) return NULL;
    gad_scope_begin();
    gad_tensor *y = NULL, *rm = NULL, *rv = NULL;
    if (running_mean) {
        gad_no_grad_begin();
        rm = repeat_rows(running_mean, N);
        rv = repeat_rows(running_var, N);
        gad_no_grad_end();
    }
    if (!running_mean || (rm && rv && gad__make_writable(op, rm) == 0 &&
                          gad__make_writable(op, rv) == 0))
        y = gn_core(op, x, C, weight, bias, rm, rv, momentum, eps);
    if (y && running_mean && N > 0) {
        gad_no_grad_begin();
        if (mean_rows_into(op, running_mean, rm, N) || mean_rows_into(op, running_var, rv, N))
            y = NULL;
        gad_no_grad_end();
    }
    gad_keep(y);
    gad_scope_end();
    return y;
}

/* ============================================================== samples */

static gad_tensor *apply_bn(void *self, gad_tensor *const *in, int n) {
    (void)n;
    const gad_op_sample *s = self;
    gad_tensor *w = s->i[0] & 1 ? in[1] : NULL, *b = s->i[0] & 2 ? in[2] : NULL;
    gad_tensor *rm = s->i[1] ? in[3] : NULL, *rv = s->i[1] ? in[4] : NULL;
    /* updated in place when training, which changes no output: the sample
     * may run many times */
    return gad_batch_norm(in[0], rm, rv, w, b, (int)s->i[2], 0.1, s->d[0]);
}

int gad__sample_batch_norm(gad_op_sample *s, gad_rng *r, int v) {
    /* x shape, rank; affine bits (1 w, 2 b); running stats; training */
    static const int64_t shapes[][4] = {{3, 2, 4, 0}, {4, 3, 0, 0}, {2, 3, 2, 3}, {3, 2, 5, 0},
                                        {2, 2, 3, 0}};
    static const int ranks[] = {3, 2, 4, 3, 3};
    static const int aff[] = {3, 0, 1, 2, 3}, run[] = {1, 0, 1, 1, 1}, train[] = {1, 1, 1, 0, 0};
    if (v >= 5) return 0;
    int64_t C = shapes[v][1];
    *s = (gad_op_sample){.n = 5, .apply = apply_bn, .smooth = 1};
    s->i[0] = aff[v];
    s->i[1] = run[v];
    s->i[2] = train[v];
    s->d[0] = 1e-5;
    s->in[0] = gad__sample_leaf(r, shapes[v], ranks[v], -1.5, 1.5, 0);
    s->in[1] = gad__sample_leaf(r, &C, 1, 0.5, 1.5, 0);
    s->in[2] = gad__sample_leaf(r, &C, 1, -1, 1, 0);
    gad_tensor *rm = gad__sample_leaf(r, &C, 1, -0.5, 0.5, 0);
    gad_tensor *rv = gad__sample_leaf(r, &C, 1, 0.5, 2, 0);
    s->in[3] = gad_detach(rm);
    s->in[4] = gad_detach(rv);
    int k = gad__shape_str(s->what, shapes[v], ranks[v]) ? (int)strlen(s->what) : 0;
    snprintf(s->what + k, sizeof s->what - (size_t)k, " %s%s%s", train[v] ? "training" : "eval",
             aff[v] & 1 ? " w" : "", aff[v] & 2 ? " b" : "");
    return s->in[0] && s->in[1] && s->in[2] && s->in[3] && s->in[4];
}

/* ---- group_norm (an X row) and instance_norm (a COMPOSITE row).
 * i[0]: the row; i[1]: affine bits (1 weight, 2 bias); i[2]: groups, or
 * for instance norm i[3]: running statistics, i[4]: use_input_stats */
static gad_tensor *apply_comp(void *self, gad_tensor *const *in, int n) {
    (void)n;
    const gad_op_sample *s = self;
    gad_tensor *w = s->i[1] & 1 ? in[1] : NULL, *b = s->i[1] & 2 ? in[2] : NULL;
    if (s->i[0] == GAD_OP_GROUP_NORM) return gad_group_norm(in[0], s->i[2], w, b, s->d[0]);
    gad_tensor *rm = s->i[3] ? in[3] : NULL, *rv = s->i[3] ? in[4] : NULL;
    /* the running statistics change in place, which changes no output
     * when use_input_stats: the sample may run many times */
    return gad_instance_norm(in[0], rm, rv, w, b, (int)s->i[4], 0.1, s->d[0]);
}

static int comp_sample(gad_op_sample *s, gad_rng *r, int op, const int64_t *shape, int rank,
                       int aff, int64_t groups, int run, int use_input) {
    int64_t C = shape[1];
    *s = (gad_op_sample){.n = op == GAD_OP_GROUP_NORM ? 3 : 5, .apply = apply_comp, .smooth = 1};
    s->i[0] = op;
    s->i[1] = aff;
    s->i[2] = groups;
    s->i[3] = run;
    s->i[4] = use_input;
    s->d[0] = 1e-5;
    s->in[0] = gad__sample_leaf(r, shape, rank, -1.5, 1.5, 0);
    s->in[1] = gad__sample_leaf(r, &C, 1, 0.5, 1.5, 0);
    s->in[2] = gad__sample_leaf(r, &C, 1, -1, 1, 0);
    if (op == GAD_OP_INSTANCE_NORM) {
        s->in[3] = gad_detach(gad__sample_leaf(r, &C, 1, -0.5, 0.5, 0));
        s->in[4] = gad_detach(gad__sample_leaf(r, &C, 1, 0.5, 2, 0));
    }
    int k = gad__shape_str(s->what, shape, rank) ? (int)strlen(s->what) : 0;
    if (op == GAD_OP_GROUP_NORM)
        snprintf(s->what + k, sizeof s->what - (size_t)k, " groups %lld%s%s", (long long)groups,
                 aff & 1 ? " w" : "", aff & 2 ? " b" : "");
    else
        snprintf(s->what + k, sizeof s->what - (size_t)k, " %s%s%s%s",
                 use_input ? "input stats" : "running stats", run ? " running" : "",
                 aff & 1 ? " w" : "", aff & 2 ? " b" : "");
    for (int i = 0; i < s->n; i++)
        if (!s->in[i]) return 0;
    return 1;
}

int gad__sample_group_norm(gad_op_sample *s, gad_rng *r, int v) {
    static const int64_t shapes[][4] = {{2, 4, 3, 0}, {2, 6, 2, 2}, {3, 4, 0, 0}, {2, 2, 5, 0},
                                        {0, 4, 3, 0}};
    static const int ranks[] = {3, 4, 2, 3, 3}, groups[] = {2, 3, 1, 2, 4}, aff[] = {3, 0, 1, 2, 3};
    if (v >= 5) return 0;
    return comp_sample(s, r, GAD_OP_GROUP_NORM, shapes[v], ranks[v], aff[v], groups[v], 0, 1);
}

int gad__sample_instance_norm(gad_op_sample *s, gad_rng *r, int v) {
    static const int64_t shapes[][4] = {{2, 3, 4, 0}, {1, 2, 3, 3}, {2, 2, 5, 0}, {3, 2, 2, 2}};
    static const int ranks[] = {3, 4, 3, 4}, aff[] = {3, 0, 1, 2}, run[] = {1, 0, 1, 1},
                     use[] = {1, 1, 0, 1};
    if (v >= 4) return 0;
    return comp_sample(s, r, GAD_OP_INSTANCE_NORM, shapes[v], ranks[v], aff[v], 0, run[v],
                       use[v]);
}
