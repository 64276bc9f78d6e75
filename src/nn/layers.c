/* layers.c: neural-network layers (SPEC §3.4, D3, D4, D5, D6): linear,
 * layer_norm, embedding, one_hot, dropout, whiten and the categorical
 * policy helpers.
 *
 * Written on the public API only (DESIGN §1): each layer checks its
 * arguments up front, so that an error names the layer rather than an op
 * inside it, then composes gad's tracked ops, so that its gradient comes
 * from theirs. Intermediates live in an inner scope; the result is kept
 * (rule 2 of gad.h: it belongs to the caller's scope, or to the caller when
 * no scope is open). */
#include "gad.h"
#include "ops/ops_int.h" /* gad__index_in_range: indices checked on their device */
#include "params.h"      /* gad__params_find: batch norm's optional tensors */

#include <math.h>
#include <stdio.h>
#include <string.h>

/* t's shape as "[2,3]" into buf, which holds SHAPE_CAP bytes. */
enum { SHAPE_CAP = GAD_SHAPE_FORMAT_CAP };
static const char *shape_str(char *buf, const gad_tensor *t) {
    return gad_shape_format(buf, SHAPE_CAP, gad_shape(t), gad_rank(t));
}

static int is_float(const gad_tensor *t) {
    return gad_dtype(t) == GAD_F32 || gad_dtype(t) == GAD_F64;
}

static int need_float(const char *op, const char *what, const gad_tensor *t) {
    if (is_float(t)) return 0;
    gad_error_set(GAD_ERR_DTYPE, op, "%s must be f32 or f64, got %s", what,
                  gad_dtype_name(gad_dtype(t)));
    return -1;
}

static int need_i64(const char *op, const char *what, const gad_tensor *t) {
    if (gad_dtype(t) == GAD_I64) return 0;
    gad_error_set(GAD_ERR_DTYPE, op, "%s must be i64, got %s", what,
                  gad_dtype_name(gad_dtype(t)));
    return -1;
}

static int need_same_dtype(const char *op, const char *what,
                           const gad_tensor *t, const gad_tensor *ref,
                           const char *refname) {
    if (gad_dtype(t) == gad_dtype(ref)) return 0;
    gad_error_set(GAD_ERR_DTYPE, op, "%s is %s but %s is %s (use gad_cast)",
                  what, gad_dtype_name(gad_dtype(t)), refname,
                  gad_dtype_name(gad_dtype(ref)));
    return -1;
}

/* Every value of the i64 tensor idx lies in [0, bound): no wrapping of
 * negatives (D5). Otherwise an index error names the first bad value. */
static int check_indices(const char *op, const char *what, gad_tensor *idx,
                         int64_t bound) {
    int64_t pos, v;
    if (gad__index_in_range(op, idx, 0, bound, &pos, &v) == 0) return 0;
    gad_error_set(GAD_ERR_INDEX, op, "%s %lld out of bounds [0, %lld) (at position %lld)",
                  what, (long long)v, (long long)bound, (long long)pos);
    return -1;
}

/* A new reference to t itself, owned as rule 2 says, without a copy: keep
 * moves one more reference to the caller's scope (or to the caller). */
static gad_tensor *same_tensor(gad_tensor *t) {
    gad_scope_begin();
    gad_keep(t);
    gad_scope_end();
    return t;
}

/* ----------------------------------------------------------------- linear */

gad_tensor *gad_linear(gad_tensor *x, gad_tensor *w, gad_tensor *b) {
    GAD_COMPOSITE("linear");
    return gad__linear("linear", x, w, b, GAD_ACT_NONE); /* src/ops/linear.c */
}

/* ------------------------------------------------------------- layer_norm */

static int check_affine(const char *op, const char *what, gad_tensor *p,
                        gad_tensor *x, int64_t d) {
    if (!p) return 0;
    if (need_same_dtype(op, what, p, x, "x")) return -1;
    if (gad_rank(p) == 1 && gad_shape(p)[0] == d) return 0;
    char sp[SHAPE_CAP], sx[SHAPE_CAP];
    gad_error_set(GAD_ERR_SHAPE, op, "%s %s must be [D] = [%lld] (x %s)", what,
                  shape_str(sp, p), (long long)d, shape_str(sx, x));
    return -1;
}

gad_tensor *gad_layer_norm(gad_tensor *x, gad_tensor *gain, gad_tensor *bias,
                           double eps) {
    const char *op = "layer_norm";
    GAD_COMPOSITE(op);
    if (!x) return gad_error_set(GAD_ERR_DOMAIN, op, "x is NULL");
    if (GAD_LIVE(op, x, gain, bias)) return NULL;
    if (need_float(op, "x", x)) return NULL;
    int r = gad_rank(x);
    if (r < 1)
        return gad_error_set(GAD_ERR_SHAPE, op,
                             "x [] has no last axis to normalize");
    if (!(eps >= 0) || isinf(eps))
        return gad_error_set(GAD_ERR_DOMAIN, op,
                             "eps %g must be finite and >= 0", eps);
    int64_t d = gad_shape(x)[r - 1];
    if (check_affine(op, "gain", gain, x, d) ||
        check_affine(op, "bias", bias, x, d))
        return NULL;
    /* Every step is a tracked op, so the gradient includes the paths
     * through the mean and through the variance (g leaves out the latter,
     * D3). */
    const int ax = -1;
    gad_scope_begin();
    gad_tensor *xc = gad_sub(x, gad_mean(x, &ax, 1, 1));
    gad_tensor *var = gad_mean(gad_square(xc), &ax, 1, 1); /* population */
    gad_tensor *y = gad_div(xc, gad_sqrt(gad_add_scalar(var, eps)));
    if (gain) y = gad_mul(y, gain);
    if (bias) y = gad_add(y, bias);
    gad_keep(y);
    gad_scope_end();
    return y;
}

/* -------------------------------------------------------------- embedding */

gad_tensor *gad_embedding(gad_tensor *weight, gad_tensor *indices) {
    const char *op = "embedding";
    GAD_COMPOSITE(op);
    if (!weight || !indices)
        return gad_error_set(GAD_ERR_DOMAIN, op, "weight or indices is NULL");
    if (GAD_LIVE(op, weight, indices)) return NULL;
    if (need_float(op, "weight", weight) || need_i64(op, "indices", indices))
        return NULL;
    /* here, not in the gather below, so that the error names this op */
    if (gad_device_of(weight) != gad_device_of(indices))
        return gad_error_set(GAD_ERR_DEVICE, op, "weight is on %s, indices on %s",
                             gad_device_name(gad_device_of(weight)),
                             gad_device_name(gad_device_of(indices)));
    char sw[SHAPE_CAP], si[SHAPE_CAP];
    if (gad_rank(weight) != 2)
        return gad_error_set(GAD_ERR_SHAPE, op, "weight %s must be rank 2 [V, D]",
                             shape_str(sw, weight));
    int ri = gad_rank(indices);
    if (ri + 1 > GAD_MAX_RANK)
        return gad_error_set(GAD_ERR_SHAPE, op,
                             "indices %s: the result would have rank %d > %d",
                             shape_str(si, indices), ri + 1, GAD_MAX_RANK);
    int64_t v = gad_shape(weight)[0], d = gad_shape(weight)[1];
    if (check_indices(op, "index", indices, v)) return NULL;
    int64_t n = gad_numel(indices);
    int64_t out[GAD_MAX_RANK];
    for (int i = 0; i < ri; i++) out[i] = gad_shape(indices)[i];
    out[ri] = d;
    /* gather along axis 0 with each index repeated across the row (a
     * stride-0 view): its VJP scatter-adds gy's rows into zeros [V, D], so
     * duplicate indices accumulate. */
    gad_scope_begin();
    gad_tensor *col = gad_reshape(indices, (int64_t[]){n, 1}, 2);
    gad_tensor *idx = gad_broadcast_to(col, (int64_t[]){n, d}, 2);
    gad_tensor *y = gad_reshape(gad_gather(weight, 0, idx), out, ri + 1);
    gad_keep(y);
    gad_scope_end();
    return y;
}

/* ---------------------------------------------------------------- one_hot */

gad_tensor *gad_one_hot(gad_tensor *indices, int64_t depth) {
    const char *op = "one_hot";
    GAD_COMPOSITE(op);
    if (!indices) return gad_error_set(GAD_ERR_DOMAIN, op, "indices is NULL");
    if (GAD_LIVE(op, indices)) return NULL;
    if (need_i64(op, "indices", indices)) return NULL;
    if (depth < 0)
        return gad_error_set(GAD_ERR_DOMAIN, op, "depth %lld must be >= 0",
                             (long long)depth);
    char si[SHAPE_CAP];
    int ri = gad_rank(indices);
    if (ri + 1 > GAD_MAX_RANK)
        return gad_error_set(GAD_ERR_SHAPE, op,
                             "indices %s: the result would have rank %d > %d",
                             shape_str(si, indices), ri + 1, GAD_MAX_RANK);
    int64_t n = gad_numel(indices);
    if (depth > 0 && n > INT64_MAX / 8 / depth) /* gad's element limit */
        return gad_error_set(GAD_ERR_SHAPE, op,
                             "indices %s with depth %lld: too many elements",
                             shape_str(si, indices), (long long)depth);
    if (check_indices(op, "index", indices, depth)) return NULL;
    int64_t out[GAD_MAX_RANK];
    for (int i = 0; i < ri; i++) out[i] = gad_shape(indices)[i];
    out[ri] = depth;
    /* zeros with a 1 scattered at each index along the new last axis, on
     * the indices' device: y[..., i] = 1 where indices[...] == i */
    gad_scope_begin();
    int dev = indices->dev;
    gad_tensor *y = gad__full_on(dev, out, ri + 1, GAD_F32, 0);
    if (y && n > 0 && depth > 0) {
        int64_t col[GAD_MAX_RANK];
        for (int i = 0; i < ri; i++) col[i] = out[i];
        col[ri] = 1;
        gad_tensor *at = gad_unsqueeze(indices, ri);
        y = gad_scatter_add(y, ri, at, gad__full_on(dev, col, ri + 1, GAD_F32, 1));
    }
    gad_keep(y);
    gad_scope_end();
    return y;
}

/* ---------------------------------------------------- categorical policy */

gad_tensor *gad_categorical_log_prob(gad_tensor *logits, gad_tensor *actions) {
    const char *op = "categorical_log_prob";
    GAD_COMPOSITE(op);
    if (!logits || !actions)
        return gad_error_set(GAD_ERR_DOMAIN, op, "logits or actions is NULL");
    if (GAD_LIVE(op, logits, actions)) return NULL;
    if (need_float(op, "logits", logits) || need_i64(op, "actions", actions))
        return NULL;
    char sl[SHAPE_CAP], sa[SHAPE_CAP];
    if (gad_rank(logits) != 2)
        return gad_error_set(GAD_ERR_SHAPE, op, "logits %s must be [B,C]",
                             shape_str(sl, logits));
    int64_t b = gad_shape(logits)[0], c = gad_shape(logits)[1];
    if (gad_rank(actions) != 1 || gad_shape(actions)[0] != b)
        return gad_error_set(GAD_ERR_SHAPE, op, "actions %s must be [%lld] (logits %s)",
                             shape_str(sa, actions), (long long)b,
                             shape_str(sl, logits));
    if (check_indices(op, "action", actions, c)) return NULL;
    if (c == 0) /* only with b == 0 here */
        return gad_error_set(GAD_ERR_SHAPE, op, "logits %s have no classes",
                             shape_str(sl, logits));
    /* take along the class axis gives [B] directly: no flatten, so nothing
     * can fall off the tape (D4; g's raw view-reshape detached here). */
    gad_scope_begin();
    gad_tensor *y = gad_take(gad_log_softmax(logits, -1), 1, actions);
    gad_keep(y);
    gad_scope_end();
    return y;
}

gad_tensor *gad_categorical_entropy(gad_tensor *logits) {
    const char *op = "categorical_entropy";
    GAD_COMPOSITE(op);
    if (!logits) return gad_error_set(GAD_ERR_DOMAIN, op, "logits is NULL");
    if (GAD_LIVE(op, logits)) return NULL;
    if (need_float(op, "logits", logits)) return NULL;
    char sl[SHAPE_CAP];
    int r = gad_rank(logits);
    if (r < 1 || gad_shape(logits)[r - 1] == 0)
        return gad_error_set(GAD_ERR_SHAPE, op,
                             "logits %s need a non-empty last axis (classes)",
                             shape_str(sl, logits));
    const int ax = -1;
    gad_scope_begin();
    gad_tensor *plogp = gad_mul(gad_softmax(logits, -1), gad_log_softmax(logits, -1));
    gad_tensor *y = gad_neg(gad_sum(plogp, &ax, 1, 0));
    gad_keep(y);
    gad_scope_end();
    return y;
}

/* ----------------------------------------------------------------- whiten */

gad_tensor *gad_whiten(gad_tensor *x) {
    const char *op = "whiten";
    GAD_COMPOSITE(op);
    if (!x) return gad_error_set(GAD_ERR_DOMAIN, op, "x is NULL");
    if (GAD_LIVE(op, x)) return NULL;
    if (need_float(op, "x", x)) return NULL;
    gad_scope_begin();
    gad_tensor *xc = gad_sub(x, gad_mean_all(x));
    gad_tensor *sd = gad_sqrt(gad_mean_all(gad_square(xc))); /* population */
    gad_tensor *y = gad_div(xc, gad_add_scalar(sd, 1e-8));
    gad_keep(y);
    gad_scope_end();
    return y;
}

/* ---------------------------------------------------------------- dropout */

gad_tensor *gad_dropout(gad_tensor *x, double p, gad_rng *rng, int training) {
    const char *op = "dropout";
    GAD_COMPOSITE(op);
    if (!x) return gad_error_set(GAD_ERR_DOMAIN, op, "x is NULL");
    if (GAD_LIVE(op, x)) return NULL;
    if (need_float(op, "x", x)) return NULL;
    if (!(p >= 0 && p < 1))
        return gad_error_set(GAD_ERR_DOMAIN, op, "p %g outside [0, 1)", p);
    if (!training || p == 0) return same_tensor(x);
    if (!rng) return gad_error_set(GAD_ERR_DOMAIN, op, "generator is NULL");
    int r = gad_rank(x);
    const int64_t *s = gad_shape(x);
    int64_t n = gad_numel(x);
    /* The mask is a constant holding 0 or 1/(1-p) in x's dtype, so that
     * y = x * mask and dy/dx = mask. Draws are f64 whatever x's dtype, one
     * per element in row-major order: a seed gives the same mask. */
    gad_scope_begin();
    gad_device was = gad_set_default_device(GAD_CPU); /* drawn on the host */
    gad_tensor *u = gad_rng_uniform_tensor(rng, s, r, GAD_F64, 0.0, 1.0);
    gad_tensor *m = u ? gad_zeros(s, r, gad_dtype(x)) : NULL;
    gad_set_default_device(was);
    gad_tensor *y = NULL;
    if (m) {
        const double *up = n ? gad_data(u) : NULL;
        void *mp = n ? gad_data_mut(m) : NULL;
        if (n == 0 || (up && mp)) {
            double scale = 1.0 / (1.0 - p);
            if (gad_dtype(x) == GAD_F32) {
                float *q = mp;
                for (int64_t i = 0; i < n; i++) q[i] = up[i] >= p ? (float)scale : 0.0f;
            } else {
                double *q = mp;
                for (int64_t i = 0; i < n; i++) q[i] = up[i] >= p ? scale : 0.0;
            }
            y = gad_mul(x, gad_to_device(m, gad_device_of(x)));
        }
    }
    gad_keep(y);
    gad_scope_end();
    return y;
}

/* ---------------------------------------------- batch norm layer (issue 28) */

/* "<prefix>.<field>" into buf (cap bytes); -1 and a domain error when it
 * does not fit. */
static int field_name(const char *op, char *buf, size_t cap, const char *prefix,
                      const char *field) {
    int k = snprintf(buf, cap, "%s.%s", prefix, field);
    if (k >= 0 && (size_t)k < cap) return 0;
    gad_error_set(GAD_ERR_DOMAIN, op, "the prefix is too long (%zu bytes)", strlen(prefix));
    return -1;
}

enum { FIELD_CAP = 512 };

gad_status gad_batch_norm_params(gad_params *ps, const char *prefix, int64_t channels,
                                 gad_dtype_t dtype, int affine, int track_running_stats) {
    const char *op = "batch_norm_params";
    if (!ps || !prefix) {
        gad_error_set(GAD_ERR_DOMAIN, op, "the %s is NULL", ps ? "prefix" : "set");
        return GAD_ERR_DOMAIN;
    }
    if (dtype != GAD_F32 && dtype != GAD_F64) {
        gad_error_set(GAD_ERR_DTYPE, op, "dtype must be f32 or f64, got %s", gad_dtype_name(dtype));
        return GAD_ERR_DTYPE;
    }
    if (channels < 0) {
        gad_error_set(GAD_ERR_SHAPE, op, "channels = %lld is negative", (long long)channels);
        return GAD_ERR_SHAPE;
    }
    static const char *const fields[5] = {"weight", "bias", "running_mean", "running_var",
                                          "num_batches_tracked"};
    char names[5][FIELD_CAP];
    for (int i = 0; i < 5; i++)
        if (field_name(op, names[i], FIELD_CAP, prefix, fields[i])) return GAD_ERR_DOMAIN;
    /* every name free first, so that an error adds nothing */
    for (int i = 0; i < 5; i++)
        if ((i < 2 ? affine : track_running_stats) && gad__params_find(ps, names[i])) {
            gad_error_set(GAD_ERR_DOMAIN, op, "the name \"%s\" is already in the set", names[i]);
            return GAD_ERR_DOMAIN;
        }
    gad_status st = GAD_OK;
    gad_scope_begin();
    if (affine && (!gad_params_add(ps, names[0], gad_ones(&channels, 1, dtype)) ||
                   !gad_params_add(ps, names[1], gad_zeros(&channels, 1, dtype))))
        st = GAD_ERR_MEMORY;
    if (st == GAD_OK && track_running_stats &&
        (!gad_params_add_buffer(ps, names[2], gad_zeros(&channels, 1, dtype)) ||
         !gad_params_add_buffer(ps, names[3], gad_ones(&channels, 1, dtype)) ||
         !gad_params_add_buffer(ps, names[4], gad_zeros(NULL, 0, GAD_I64))))
        st = GAD_ERR_MEMORY;
    gad_scope_end();
    if (st != GAD_OK && gad_last_error()) st = gad_last_error()->kind;
    return st;
}

gad_tensor *gad_batch_norm_layer(gad_params *ps, const char *prefix, gad_tensor *x, int training,
                                 double momentum, double eps) {
    const char *op = "batch_norm_layer";
    GAD_COMPOSITE(op);
    if (!ps || !prefix || !x)
        return gad_error_set(GAD_ERR_DOMAIN, op, "the %s is NULL",
                             !ps ? "set" : !prefix ? "prefix" : "input");
    if (GAD_LIVE(op, x)) return NULL;
    char names[5][FIELD_CAP];
    static const char *const fields[5] = {"weight", "bias", "running_mean", "running_var",
                                          "num_batches_tracked"};
    for (int i = 0; i < 5; i++)
        if (field_name(op, names[i], FIELD_CAP, prefix, fields[i])) return NULL;
    gad_tensor *w = gad__params_find(ps, names[0]), *b = gad__params_find(ps, names[1]);
    gad_tensor *rm = gad__params_find(ps, names[2]), *rv = gad__params_find(ps, names[3]);
    gad_tensor *nbt = gad__params_find(ps, names[4]);
    if (!w && !b && !rm && !rv)
        return gad_error_set(GAD_ERR_INDEX, op, "the set has no batch norm named \"%s\"", prefix);
    gad_tensor *any = w ? w : b ? b : rm ? rm : rv;
    int64_t C = gad_numel(any);
    if (gad_rank(x) < 2 || gad_shape(x)[1] != C) {
        char sx[SHAPE_CAP];
        return gad_error_set(GAD_ERR_SHAPE, op, "x %s must be [N, %lld, ...] for \"%s\" ([%lld])",
                             shape_str(sx, x), (long long)C, prefix, (long long)C);
    }
    if (nbt && (gad_dtype(nbt) != GAD_I64 || gad_numel(nbt) != 1))
        return gad_error_set(GAD_ERR_DTYPE, op, "\"%s\" must be an i64 scalar", names[4]);
    /* PyTorch's _BatchNorm.forward: count the batch, and with momentum
     * None (NaN here) average cumulatively (factor 1 / batches) */
    double factor = isnan(momentum) ? 0.0 : momentum;
    int use_batch = training || !rm;
    if (training && rm) {
        int64_t count = 0;
        if (nbt) {
            if (gad_read_i64(nbt, &count, 1) != GAD_OK) return NULL;
            count = count < INT64_MAX ? count + 1 : count;
        }
        if (isnan(momentum)) factor = count > 0 ? 1.0 / (double)count : 0.0;
        gad_tensor *y = gad_batch_norm(x, rm, rv, w, b, 1, factor, eps);
        if (y && nbt && gad_write_i64(nbt, &count, 1) != GAD_OK) return NULL;
        return y;
    }
    return gad_batch_norm(x, use_batch ? NULL : rm, use_batch ? NULL : rv, w, b, use_batch, factor,
                          eps);
}
