/* loss.c: mse_loss, nll_loss and cross_entropy (SPEC §3.4, §4.6, D5).
 *
 * Written on the public API only (DESIGN §1), like layers.c: arguments are
 * checked up front so that an error names the loss, then tracked ops
 * compute it, so that the gradient comes from theirs. */
#include "gad.h"
#include "ops/ops_int.h" /* gad__index_in_range: targets checked on their device */

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
    if (check_nll(op, "logits", logits, targets, red)) return NULL;
    if (gad_shape(logits)[1] == 0) { /* only with B = 0: targets are checked */
        char sx[SHAPE_CAP];
        return gad_error_set(GAD_ERR_SHAPE, op, "logits %s have no classes",
                             shape_str(sx, logits));
    }
    gad_scope_begin();
    gad_tensor *y = gad_keep(nll(gad_log_softmax(logits, -1), targets, red));
    gad_scope_end();
    return y;
}
