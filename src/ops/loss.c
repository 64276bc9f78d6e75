/* loss.c: mse_loss, nll_loss, cross_entropy (SPEC §3.4, §4.6, D5) and the
 * losses with PyTorch's options, cross_entropy_ex and bce_with_logits, with
 * their registry samples (ops.def's COMPOSITE rows).
 *
 * Written on the public API only (DESIGN §1), like layers.c: arguments are
 * checked up front so that an error names the loss, then tracked ops
 * compute it, so that the gradient comes from theirs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gad.h"
#include "ops_int.h" /* gad__index_in_range: targets checked on their device */

/* t's shape as "[2,3]" into buf, which holds SHAPE_CAP bytes. */
enum { SHAPE_CAP = GAD_SHAPE_FORMAT_CAP };
static const char *shape_str(char *buf, const gad_tensor *t) {
    return gad_shape_format(buf, SHAPE_CAP, gad_shape(t), gad_rank(t));
}

static int check_reduction(const char *op, gad_reduction red) {
    if (red == GAD_REDUCE_MEAN || red == GAD_REDUCE_SUM || red == GAD_REDUCE_NONE)
        return 0;
    gad_error_set(GAD_ERR_DOMAIN, op, "unknown reduction %d", (int)red);
    return -1;
}

static gad_tensor *reduce(gad_tensor *v, gad_reduction red) {
    switch (red) {
    case GAD_REDUCE_MEAN: return gad_mean_all(v);
    case GAD_REDUCE_SUM: return gad_sum_all(v);
    default: return v;
    }
}

/* --------------------------------------------------------------- mse_loss */

gad_tensor *gad_mse_loss(gad_tensor *pred, gad_tensor *target, gad_reduction red) {
    const char *op = "mse_loss";
    GAD_COMPOSITE(op);
    gad_tensor *hin[2] = {pred, target}; /* half precision: in f32 (ops_int.h) */
    GAD_HALF_VIA_F32(op, hin, 2, gad_mse_loss(hin[0], hin[1], red));
    if (!pred || !target)
        return gad_error_set(GAD_ERR_DOMAIN, op, "pred or target is NULL");
    if (GAD_LIVE(op, pred, target)) return NULL;
    gad_dtype_t dt = gad_dtype(pred);
    if (dt != GAD_F32 && dt != GAD_F64)
        return gad_error_set(GAD_ERR_DTYPE, op, "pred must be f32 or f64, got %s",
                             gad_dtype_name(dt));
    if (gad_dtype(target) != dt)
        return gad_error_set(GAD_ERR_DTYPE, op,
                             "target is %s but pred is %s (use gad_cast)",
                             gad_dtype_name(gad_dtype(target)), gad_dtype_name(dt));
    /* Deliberately stricter than g, whose mse_loss broadcast pred against
     * target, so that [N] against [N,1] silently gave an [N,N] loss: here
     * the shapes must be equal. */
    int r = gad_rank(pred);
    const int64_t *ps = gad_shape(pred), *ts = gad_shape(target);
    int same = gad_rank(target) == r;
    for (int i = 0; same && i < r; i++) same = ps[i] == ts[i];
    if (!same) {
        char sp[SHAPE_CAP], st[SHAPE_CAP];
        return gad_error_set(GAD_ERR_SHAPE, op,
                             "pred %s and target %s must have the same shape",
                             shape_str(sp, pred), shape_str(st, target));
    }
    if (check_reduction(op, red)) return NULL;
    gad_scope_begin();
    gad_tensor *d = gad_sub(pred, gad_detach(target)); /* target is constant */
    gad_tensor *y = reduce(gad_square(d), red);
    gad_keep(y);
    gad_scope_end();
    return y;
}

/* ------------------------------------------------- nll_loss, cross_entropy */

/* The checks shared by nll_loss and cross_entropy: x ("log_probs" or
 * "logits") float [B,C], targets i64 [B], every target in [0, C) (no
 * wrapping of negatives, D5), a known reduction. */
static int check_nll(const char *op, const char *xname, gad_tensor *x,
                     gad_tensor *targets, gad_reduction red) {
    if (!x || !targets) {
        gad_error_set(GAD_ERR_DOMAIN, op, "%s or targets is NULL", xname);
        return -1;
    }
    if (GAD_LIVE(op, x, targets)) return -1;
    gad_dtype_t dt = gad_dtype(x);
    if (dt != GAD_F32 && dt != GAD_F64) {
        gad_error_set(GAD_ERR_DTYPE, op, "%s must be f32 or f64, got %s", xname,
                      gad_dtype_name(dt));
        return -1;
    }
    if (gad_dtype(targets) != GAD_I64) {
        gad_error_set(GAD_ERR_DTYPE, op, "targets must be i64, got %s",
                      gad_dtype_name(gad_dtype(targets)));
        return -1;
    }
    char sx[SHAPE_CAP], st[SHAPE_CAP];
    if (gad_rank(x) != 2) {
        gad_error_set(GAD_ERR_SHAPE, op, "%s %s must be [B,C]", xname,
                      shape_str(sx, x));
        return -1;
    }
    int64_t b = gad_shape(x)[0], c = gad_shape(x)[1];
    if (gad_rank(targets) != 1 || gad_shape(targets)[0] != b) {
        gad_error_set(GAD_ERR_SHAPE, op, "targets %s must be [%lld] (%s %s)",
                      shape_str(st, targets), (long long)b, xname,
                      shape_str(sx, x));
        return -1;
    }
    if (check_reduction(op, red)) return -1;
    if (b == 0) return 0;
    int64_t row, v;
    if (gad__index_in_range(op, targets, 0, c, &row, &v) == 0) return 0;
    gad_error_set(GAD_ERR_INDEX, op, "class %lld of row %lld out of bounds [0, %lld)",
                  (long long)v, (long long)row, (long long)c);
    return -1;
}

/* -log_probs[i, targets[i]], reduced; arguments already checked. take keeps
 * it on the tape: its VJP puts -gy_i at (i, t_i) and zeros elsewhere. */
static gad_tensor *nll(gad_tensor *log_probs, gad_tensor *targets,
                       gad_reduction red) {
    return reduce(gad_neg(gad_take(log_probs, 1, targets)), red);
}

gad_tensor *gad_nll_loss(gad_tensor *log_probs, gad_tensor *targets,
                         gad_reduction red) {
    GAD_COMPOSITE("nll_loss");
    gad_tensor *hin[2] = {log_probs, targets};
    GAD_HALF_VIA_F32("nll_loss", hin, 2, gad_nll_loss(hin[0], hin[1], red));
    if (check_nll("nll_loss", "log_probs", log_probs, targets, red)) return NULL;
    gad_scope_begin();
    gad_tensor *y = gad_keep(nll(log_probs, targets, red));
    gad_scope_end();
    return y;
}

gad_tensor *gad_cross_entropy(gad_tensor *logits, gad_tensor *targets,
                              gad_reduction red) {
    const char *op = "cross_entropy";
    GAD_COMPOSITE(op);
    gad_tensor *hin[2] = {logits, targets};
    GAD_HALF_VIA_F32(op, hin, 2, gad_cross_entropy(hin[0], hin[1], red));
    if (check_nll(op, "logits", logits, targets, red)) return NULL;
    if (gad_shape(logits)[1] == 0) { /* only with B = 0: targets are checked */
        char sx[SHAPE_CAP];
        return gad_error_set(GAD_ERR_SHAPE, op, "logits %s have no classes",
                             shape_str(sx, logits));
    }
    gad_scope_begin();
    gad_tensor *y;
    int64_t B = gad_shape(logits)[0];
    if (B > 0 && red != GAD_REDUCE_NONE && targets->dev == logits->dev) {
        /* one fused node (masked_ce: softmax, loss and its gradient in one
         * pass each) with every row's weight 1, which is the mean */
        gad_tensor *ones = gad__full_on(logits->dev, &B, 1, logits->dtype, 1.0);
        y = gad_masked_ce(logits, targets, ones);
        if (red == GAD_REDUCE_SUM) y = gad_mul_scalar(y, (double)B);
    } else {
        y = nll(gad_log_softmax(logits, -1), targets, red);
    }
    gad_keep(y);
    gad_scope_end();
    return y;
}

/* ------------------------------------- cross_entropy_ex (PyTorch's options) */
/* F.cross_entropy with every option: class indices (ignore_index, class
 * weights) or probabilities, label smoothing, the class dim 1 of [N, C,
 * d...]. Composed on the tape: logits are moved to [M, C] (class last,
 * M = N * d...), log_softmax'd once, and the reductions follow PyTorch's
 * formulas (aten's cross_entropy_loss_label_smoothing): with smoothing e
 * over C classes, loss_i = (1 - e) w[t_i] nll_i + (e / C) sum_c w_c
 * (-log p_ic), ignored rows 0; MEAN divides both terms by the sum of
 * w[t_i] over the rows not ignored (NaN when there are none). The common
 * case of a language model (f32, MEAN, no smoothing, no class weights)
 * is one gad_masked_ce node, whose weights are 0 on ignored rows. */

/* x [C] or [N, C, d...] as [M, C], class last (a copy when d is not empty). */
static gad_tensor *classes_last(gad_tensor *x, int64_t M, int64_t C) {
    int r = gad_rank(x);
    if (r > 2) {
        int perm[GAD_MAX_RANK];
        perm[0] = 0;
        for (int i = 2; i < r; i++) perm[i - 1] = i;
        perm[r - 1] = 1;
        x = gad_permute(x, perm, r);
    }
    return gad_reshape(x, (int64_t[]){M, C}, 2);
}

/* A host array of M values as a tensor of logits' dtype on its device. */
static gad_tensor *host_vector(const double *v, int64_t M, gad_tensor *like) {
    gad_tensor *t = gad_from_f64(v, (int64_t[]){M}, 1);
    if (t && gad_dtype(like) != GAD_F64) t = gad_cast(t, gad_dtype(like));
    return t ? gad_to_device(t, gad_device_of(like)) : NULL;
}

static int check_ce_ex(const char *op, gad_tensor *logits, gad_tensor *target,
                       gad_tensor *weight, gad_reduction red, double smoothing,
                       int64_t *C_out, int64_t *M_out) {
    char sx[SHAPE_CAP], st[SHAPE_CAP];
    if (!logits || !target) {
        gad_error_set(GAD_ERR_DOMAIN, op, "logits or target is NULL");
        return -1;
    }
    if (weight ? GAD_LIVE(op, logits, target, weight) : GAD_LIVE(op, logits, target)) return -1;
    /* here, before the targets and weights are read on the host */
    gad_tensor *other = gad_device_of(target) != gad_device_of(logits) ? target
                        : weight && gad_device_of(weight) != gad_device_of(logits) ? weight
                                                                                     : NULL;
    if (other) {
        gad_error_set(GAD_ERR_DEVICE, op, "logits are on %s, %s on %s",
                      gad_device_name(gad_device_of(logits)), other == target ? "target" : "weight",
                      gad_device_name(gad_device_of(other)));
        return -1;
    }
    gad_dtype_t dt = gad_dtype(logits);
    if (dt != GAD_F32 && dt != GAD_F64) {
        gad_error_set(GAD_ERR_DTYPE, op, "logits must be f32 or f64, got %s",
                      gad_dtype_name(dt));
        return -1;
    }
    gad_dtype_t tt = gad_dtype(target);
    int probs = tt == GAD_F32 || tt == GAD_F64;
    if (!probs && tt != GAD_I64) {
        gad_error_set(GAD_ERR_DTYPE, op,
                      "target must be i64 class indices or %s probabilities, got %s",
                      gad_dtype_name(dt), gad_dtype_name(tt));
        return -1;
    }
    if (probs && tt != dt) {
        gad_error_set(GAD_ERR_DTYPE, op,
                      "probability target is %s but logits are %s (use gad_cast)",
                      gad_dtype_name(tt), gad_dtype_name(dt));
        return -1;
    }
    int r = gad_rank(logits);
    const int64_t *xs = gad_shape(logits), *ts = gad_shape(target);
    if (r < 1) {
        gad_error_set(GAD_ERR_SHAPE, op, "logits %s must be [C] or [N,C,d...]",
                      shape_str(sx, logits));
        return -1;
    }
    int64_t C = r == 1 ? xs[0] : xs[1];
    /* indices: logits' shape without the class dim; probabilities: logits' */
    int ok = gad_rank(target) == (probs ? r : r - 1);
    for (int i = 0, j = 0; ok && i < r; i++) {
        if (!probs && i == (r == 1 ? 0 : 1)) continue;
        ok = ts[j++] == xs[i];
    }
    if (!ok) {
        gad_error_set(GAD_ERR_SHAPE, op, "target %s does not fit logits %s (%s)",
                      shape_str(st, target), shape_str(sx, logits),
                      probs ? "probabilities have the logits' shape"
                            : "class indices have the logits' shape without dim 1");
        return -1;
    }
    if (C == 0) {
        gad_error_set(GAD_ERR_SHAPE, op, "logits %s have no classes", shape_str(sx, logits));
        return -1;
    }
    if (weight && (gad_rank(weight) != 1 || gad_shape(weight)[0] != C)) {
        gad_error_set(GAD_ERR_SHAPE, op, "weight %s must be [%lld], one per class",
                      shape_str(st, weight), (long long)C);
        return -1;
    }
    if (weight && gad_dtype(weight) != dt) {
        gad_error_set(GAD_ERR_DTYPE, op, "weight is %s but logits are %s (use gad_cast)",
                      gad_dtype_name(gad_dtype(weight)), gad_dtype_name(dt));
        return -1;
    }
    if (!(smoothing >= 0 && smoothing <= 1)) {
        gad_error_set(GAD_ERR_DOMAIN, op, "label_smoothing %g must be in [0, 1]", smoothing);
        return -1;
    }
    if (check_reduction(op, red)) return -1;
    *C_out = C;
    *M_out = C ? gad_numel(logits) / C : 0;
    return 0;
}

gad_tensor *gad_cross_entropy_ex(gad_tensor *logits, gad_tensor *target, gad_tensor *weight,
                                 int64_t ignore_index, gad_reduction red,
                                 double label_smoothing) {
    const char *op = "cross_entropy_ex";
    GAD_COMPOSITE(op);
    gad_tensor *hin[3] = {logits, target, weight};
    GAD_HALF_VIA_F32(op, hin, 3,
                     gad_cross_entropy_ex(hin[0], hin[1], hin[2], ignore_index, red,
                                          label_smoothing));
    int64_t C = 0, M = 0;
    if (check_ce_ex(op, logits, target, weight, red, label_smoothing, &C, &M)) return NULL;
    const double e = label_smoothing;
    int probs = gad_dtype(target) != GAD_I64;
    double *w = NULL, *rowc = NULL, *valid = NULL;
    int64_t *safe = NULL;
    /* the host's view of the class weights and (indices) of the targets */
    if (weight) {
        w = malloc((size_t)C * sizeof *w);
        if (!w) return gad_error_set(GAD_ERR_MEMORY, op, "no memory for %lld weights",
                                     (long long)C);
        if (gad_read_f64(weight, w, (size_t)C) != GAD_OK) {
            free(w);
            return NULL;
        }
    }
    double denom = (double)M; /* MEAN's divisor */
    if (!probs) {
        size_t n = M > 0 ? (size_t)M : 1; /* never a NULL array below */
        safe = malloc(n * sizeof *safe);
        rowc = malloc(n * sizeof *rowc);
        valid = malloc(n * sizeof *valid);
        if (!safe || !rowc || !valid) {
            free(w), free(safe), free(rowc), free(valid);
            return gad_error_set(GAD_ERR_MEMORY, op, "no memory for %lld targets", (long long)M);
        }
        gad_scope_begin();
        gad_status st = M > 0 ? gad_read_i64(gad_contiguous(target), safe, (size_t)M) : GAD_OK;
        gad_scope_end();
        if (st != GAD_OK) {
            free(w), free(safe), free(rowc), free(valid);
            return NULL;
        }
        denom = 0;
        for (int64_t i = 0; i < M; i++) {
            int64_t t = safe[i];
            if (t == ignore_index) {
                safe[i] = 0, rowc[i] = 0, valid[i] = 0;
                continue;
            }
            if (t < 0 || t >= C) {
                free(w), free(safe), free(rowc), free(valid);
                return gad_error_set(GAD_ERR_INDEX, op,
                                     "class %lld of row %lld out of bounds [0, %lld) "
                                     "(ignore_index %lld)",
                                     (long long)t, (long long)i, (long long)C,
                                     (long long)ignore_index);
            }
            rowc[i] = w ? w[t] : 1.0, valid[i] = 1;
            denom += rowc[i];
        }
    }
    gad_scope_begin();
    gad_tensor *x = classes_last(gad_rank(logits) == 1 ? gad_unsqueeze(logits, 0) : logits,
                                 M, C);
    gad_tensor *wrow = weight ? gad_reshape(gad_detach(weight), (int64_t[]){1, C}, 2) : NULL;
    gad_tensor *per = NULL, *y = NULL; /* per: the M losses */
    if (probs) {
        gad_tensor *p = classes_last(gad_rank(target) == 1 ? gad_unsqueeze(target, 0) : target,
                                     M, C);
        if (e > 0) p = gad_add_scalar(gad_mul_scalar(p, 1 - e), e / (double)C);
        gad_tensor *pl = gad_mul(p, gad_log_softmax(x, 1));
        if (wrow) pl = gad_mul(pl, wrow);
        per = gad_neg(gad_sum(pl, (int[]){1}, 1, 0));
    } else if (M > 0 && gad_dtype(logits) == GAD_F32 && !weight && e == 0 &&
               red == GAD_REDUCE_MEAN && denom > 0) {
        /* one fused node: mean over the rows not ignored */
        gad_tensor *tg = gad_to_device(gad_from_i64(safe, (int64_t[]){M}, 1),
                                       gad_device_of(logits));
        y = gad_masked_ce(x, tg, host_vector(valid, M, logits));
    } else {
        gad_tensor *lp = gad_log_softmax(x, 1);
        gad_tensor *tg = gad_to_device(gad_from_i64(safe, (int64_t[]){M}, 1),
                                       gad_device_of(logits));
        per = gad_mul(gad_neg(gad_take(lp, 1, tg)), host_vector(rowc, M, logits));
        if (e > 0) {
            gad_tensor *wl = wrow ? gad_mul(lp, wrow) : lp;
            gad_tensor *sm = gad_mul(gad_neg(gad_sum(wl, (int[]){1}, 1, 0)),
                                     host_vector(valid, M, logits));
            per = gad_add(gad_mul_scalar(per, 1 - e), gad_mul_scalar(sm, e / (double)C));
        }
    }
    if (!y) {
        if (red == GAD_REDUCE_NONE) {
            int r = gad_rank(logits), k = 0;
            int64_t shape[GAD_MAX_RANK];
            for (int i = 0; i < r; i++)
                if (i != (r == 1 ? 0 : 1)) shape[k++] = gad_shape(logits)[i];
            y = gad_reshape(per, shape, k);
        } else {
            y = gad_sum_all(per);
            if (red == GAD_REDUCE_MEAN) y = gad_mul_scalar(y, 1.0 / denom);
        }
    }
    gad_keep(y);
    gad_scope_end();
    free(w), free(safe), free(rowc), free(valid);
    return y;
}

/* ------------------------------------------- binary_cross_entropy_with_logits */
/* -w [p y log s(x) + (1 - y) log(1 - s(x))] with s the sigmoid and p the
 * pos_weight, in the stable form PyTorch uses: (1 - y) x + (1 + (p - 1) y)
 * softplus(-x), where softplus never takes exp of a large argument. */

/* 1 when b broadcasts to a's shape without growing it. */
static int broadcasts_to(const gad_tensor *b, const gad_tensor *a) {
    int ra = gad_rank(a), rb = gad_rank(b);
    if (rb > ra) return 0;
    for (int i = 0; i < rb; i++) {
        int64_t db = gad_shape(b)[rb - 1 - i], da = gad_shape(a)[ra - 1 - i];
        if (db != 1 && db != da) return 0;
    }
    return 1;
}

gad_tensor *gad_binary_cross_entropy_with_logits(gad_tensor *x, gad_tensor *target,
                                                 gad_tensor *weight, gad_tensor *pos_weight,
                                                 gad_reduction red) {
    const char *op = "bce_with_logits"; /* the full name is longer than an error's op */
    GAD_COMPOSITE(op);
    gad_tensor *hin[4] = {x, target, weight, pos_weight};
    GAD_HALF_VIA_F32(op, hin, 4,
                     gad_binary_cross_entropy_with_logits(hin[0], hin[1], hin[2], hin[3], red));
    char sx[SHAPE_CAP], st[SHAPE_CAP];
    if (!x || !target) return gad_error_set(GAD_ERR_DOMAIN, op, "x or target is NULL");
    if (GAD_LIVE(op, x, target)) return NULL;
    if (weight && GAD_LIVE(op, weight)) return NULL;
    if (pos_weight && GAD_LIVE(op, pos_weight)) return NULL;
    gad_dtype_t dt = gad_dtype(x);
    if (dt != GAD_F32 && dt != GAD_F64)
        return gad_error_set(GAD_ERR_DTYPE, op, "x must be f32 or f64, got %s",
                             gad_dtype_name(dt));
    gad_tensor *const extra[3] = {target, weight, pos_weight};
    const char *names[3] = {"target", "weight", "pos_weight"};
    for (int k = 0; k < 3; k++) {
        if (!extra[k]) continue;
        if (gad_dtype(extra[k]) != dt)
            return gad_error_set(GAD_ERR_DTYPE, op, "%s is %s but x is %s (use gad_cast)",
                                 names[k], gad_dtype_name(gad_dtype(extra[k])),
                                 gad_dtype_name(dt));
        int fits = k == 0 ? gad_rank(target) == gad_rank(x) && broadcasts_to(target, x) &&
                                broadcasts_to(x, target)
                          : broadcasts_to(extra[k], x);
        if (!fits)
            return gad_error_set(GAD_ERR_SHAPE, op, "%s %s %s x %s", names[k],
                                 shape_str(st, extra[k]),
                                 k == 0 ? "must have the shape of" : "does not broadcast to",
                                 shape_str(sx, x));
    }
    if (check_reduction(op, red)) return NULL;
    gad_scope_begin();
    gad_tensor *sp = gad_softplus(gad_neg(x)); /* -log s(x) */
    gad_tensor *coef = pos_weight ? gad_add_scalar(gad_mul(gad_add_scalar(pos_weight, -1.0),
                                                           target), 1.0)
                                  : NULL;
    gad_tensor *l = gad_add(gad_mul(gad_add_scalar(gad_neg(target), 1.0), x),
                            coef ? gad_mul(coef, sp) : sp);
    if (weight) l = gad_mul(l, weight);
    gad_tensor *y = gad_keep(reduce(l, red));
    gad_scope_end();
    return y;
}

/* ================================================== samples (COMPOSITE rows)
 * The op registry's cases for cross_entropy_ex and bce_with_logits
 * (src/ops/ops.def): in[0] the logits, in[1] the target, then the tensors
 * that i[1] (weight) and i[2] (pos_weight) say are there, packed. */

static gad_tensor *apply_loss(void *self, gad_tensor *const *in, int n) {
    const gad_op_sample *s = self;
    (void)n;
    int k = 2;
    gad_tensor *w = s->i[1] ? in[k++] : NULL;
    gad_tensor *pw = s->i[2] ? in[k++] : NULL;
    if (s->i[0] == GAD_OP_MSE_LOSS) return gad_mse_loss(in[0], in[1], (gad_reduction)s->i[3]);
    if (s->i[0] == GAD_OP_NLL_LOSS) return gad_nll_loss(in[0], in[1], (gad_reduction)s->i[3]);
    if (s->i[0] == GAD_OP_CROSS_ENTROPY)
        return gad_cross_entropy(in[0], in[1], (gad_reduction)s->i[3]);
    if (s->i[0] == GAD_OP_CROSS_ENTROPY_EX)
        return gad_cross_entropy_ex(in[0], in[1], w, s->i[4], (gad_reduction)s->i[3], s->d[0]);
    return gad_binary_cross_entropy_with_logits(in[0], in[1], w, pw, (gad_reduction)s->i[3]);
}

static const char *const red_name[] = {"mean", "sum", "none"};

int gad__sample_cross_entropy_ex(gad_op_sample *s, gad_rng *r, int v) {
    /* logits' shape, target: -1 probabilities (a leaf) or the class indices
     * (i64, of logits' shape without dim 1); weight; reduction; ignore_index;
     * label smoothing */
    static const struct {
        int rank;
        int64_t shape[4];
        int probs, weight, red;
        int64_t ignore;
        double smooth;
        int64_t t[8];
    } c[] = {
        {2, {4, 5}, 0, 1, GAD_REDUCE_MEAN, -100, 0.1, {1, -100, 4, 0}},
        {3, {2, 3, 4}, 0, 0, GAD_REDUCE_SUM, 2, 0, {0, 2, 1, 1, 2, 0, 2, 1}},
        {1, {5}, 0, 0, GAD_REDUCE_NONE, -100, 0, {3}},
        {2, {3, 4}, 1, 1, GAD_REDUCE_MEAN, -100, 0.2, {0}},
        {4, {2, 3, 2, 1}, 1, 0, GAD_REDUCE_NONE, -100, 0, {0}},
        {2, {4, 5}, 0, 0, GAD_REDUCE_MEAN, -100, 0, {4, 0, 2, 2}},
        {2, {3, 4}, 0, 1, GAD_REDUCE_NONE, 1, 0.3, {1, 3, 0}},
    };
    if (v >= (int)(sizeof c / sizeof c[0])) return 0;
    *s = (gad_op_sample){.n = 2, .apply = apply_loss, .smooth = 1};
    s->i[0] = GAD_OP_CROSS_ENTROPY_EX;
    s->i[1] = c[v].weight;
    s->i[3] = c[v].red;
    s->i[4] = c[v].ignore;
    s->d[0] = c[v].smooth;
    int rank = c[v].rank;
    int64_t C = rank == 1 ? c[v].shape[0] : c[v].shape[1];
    s->in[0] = gad__sample_leaf(r, c[v].shape, rank, -2, 2, 0);
    if (c[v].probs) {
        /* rows of probabilities along dim 1 */
        s->in[1] = gad_requires_grad(gad_detach(
            gad_softmax(gad__sample_values(r, c[v].shape, rank, -1, 1, 0, 0), 1)));
    } else {
        int64_t ts[3], tr = 0;
        for (int d = 0; d < rank; d++)
            if (d != 1 || rank == 1) ts[tr++] = c[v].shape[d];
        if (rank == 1) tr = 0; /* [C]: a 0-d target */
        s->in[1] = gad_from_i64(c[v].t, ts, (int)tr);
    }
    if (c[v].weight) s->in[s->n++] = gad__sample_values(r, &C, 1, 0.5, 2, 0, 0);
    int k = gad__shape_str(s->what, c[v].shape, rank) ? (int)strlen(s->what) : 0;
    snprintf(s->what + k, sizeof s->what - (size_t)k, " %s%s %s ignore %lld smoothing %g",
             c[v].probs ? "probabilities" : "indices", c[v].weight ? " weight" : "",
             red_name[c[v].red], (long long)c[v].ignore, c[v].smooth);
    for (int i = 0; i < s->n; i++)
        if (!s->in[i]) return 0;
    return 1;
}

int gad__sample_bce_with_logits(gad_op_sample *s, gad_rng *r, int v) {
    /* x's shape; target a leaf; weight's and pos_weight's shapes (rank -1:
     * none); reduction */
    static const struct {
        int rank;
        int64_t shape[3];
        int tleaf, wrank;
        int64_t w[2];
        int prank;
        int64_t p[2];
        int red;
    } c[] = {
        {2, {3, 4}, 1, -1, {0}, 1, {4}, GAD_REDUCE_MEAN},
        {2, {2, 3}, 0, 2, {2, 3}, -1, {0}, GAD_REDUCE_SUM},
        {1, {5}, 1, 1, {1}, 1, {5}, GAD_REDUCE_NONE},
        {3, {2, 2, 3}, 1, 2, {2, 1}, 0, {0}, GAD_REDUCE_MEAN},
        {2, {0, 3}, 1, -1, {0}, -1, {0}, GAD_REDUCE_SUM},
    };
    if (v >= (int)(sizeof c / sizeof c[0])) return 0;
    *s = (gad_op_sample){.n = 2, .apply = apply_loss, .smooth = 1};
    s->i[0] = GAD_OP_BCE_WITH_LOGITS;
    s->i[1] = c[v].wrank >= 0;
    s->i[2] = c[v].prank >= 0;
    s->i[3] = c[v].red;
    s->in[0] = gad__sample_leaf(r, c[v].shape, c[v].rank, -3, 3, 0);
    s->in[1] = c[v].tleaf ? gad__sample_leaf(r, c[v].shape, c[v].rank, 0, 1, 0)
                          : gad__sample_values(r, c[v].shape, c[v].rank, 0, 1, 0, 0);
    if (c[v].wrank >= 0) s->in[s->n++] = gad__sample_leaf(r, c[v].w, c[v].wrank, 0.5, 2, 0);
    if (c[v].prank >= 0) s->in[s->n++] = gad__sample_leaf(r, c[v].p, c[v].prank, 0.5, 3, 0);
    int k = gad__shape_str(s->what, c[v].shape, c[v].rank) ? (int)strlen(s->what) : 0;
    snprintf(s->what + k, sizeof s->what - (size_t)k, "%s%s %s", c[v].wrank >= 0 ? " weight" : "",
             c[v].prank >= 0 ? " pos_weight" : "", red_name[c[v].red]);
    for (int i = 0; i < s->n; i++)
        if (!s->in[i]) return 0;
    return 1;
}

/* mse_loss: a pred leaf and a target (constant) of one shape; nll_loss and cross_entropy:
 * [B, C] (log-probabilities or logits) and i64 targets [B] */
static int simple_loss(gad_op_sample *s, gad_rng *r, int v, int op) {
    static const struct {
        int64_t B, C;
        int red;
        int64_t t[4];
    } c[] = {{4, 3, GAD_REDUCE_MEAN, {2, 0, 1, 2}}, {2, 5, GAD_REDUCE_SUM, {4, 0}},
             {3, 1, GAD_REDUCE_NONE, {0, 0, 0}}, {0, 3, GAD_REDUCE_SUM, {0}}};
    if (v >= (int)(sizeof c / sizeof c[0])) return 0;
    *s = (gad_op_sample){.n = 2, .apply = apply_loss, .smooth = 1};
    s->i[0] = op;
    s->i[3] = c[v].red;
    int64_t shape[2] = {c[v].B, c[v].C};
    if (op == GAD_OP_MSE_LOSS) {
        s->in[0] = gad__sample_leaf(r, shape, 2, -2, 2, 0);
        s->in[1] = gad__sample_values(r, shape, 2, -2, 2, 0, 0); /* held constant */
    } else {
        s->in[0] = gad__sample_leaf(r, shape, 2, op == GAD_OP_NLL_LOSS ? -3 : -2,
                                    op == GAD_OP_NLL_LOSS ? -0.1 : 2, 0);
        s->in[1] = gad_from_i64(c[v].t, &c[v].B, 1);
    }
    snprintf(s->what, sizeof s->what, "[%lld,%lld] %s", (long long)c[v].B, (long long)c[v].C,
             red_name[c[v].red]);
    return s->in[0] && s->in[1];
}

int gad__sample_mse_loss(gad_op_sample *s, gad_rng *r, int v) {
    return simple_loss(s, r, v, GAD_OP_MSE_LOSS);
}
int gad__sample_nll_loss(gad_op_sample *s, gad_rng *r, int v) {
    return simple_loss(s, r, v, GAD_OP_NLL_LOSS);
}
int gad__sample_cross_entropy(gad_op_sample *s, gad_rng *r, int v) {
    return simple_loss(s, r, v, GAD_OP_CROSS_ENTROPY);
}
