/* copy.c: contiguous, clone, cast, stop_gradient and to_device (SPEC §1.4,
 * §1.9; DESIGN §9: the one way across devices). */
#include "ops_int.h"

#include <stdio.h>
#include <string.h>

/* A packed copy of t on the tape (op COPY); errors name op. */
static gad_tensor *copy_as(const char *op, gad_tensor *t) {
    gad_tensor *y = gad__tensor_like(op, t);
    if (!y) return NULL;
    gad__pack(t, gad__ptr(y));
    return gad__own(gad__track(y, GAD_OP(COPY), &t, 1, NULL, 0));
}

gad_tensor *gad_clone(gad_tensor *t) {
    GAD_NEED("clone", t);
    return copy_as("clone", t);
}

gad_tensor *gad_contiguous(gad_tensor *t) {
    GAD_NEED("contiguous", t);
    if (t->contig) return gad__own(gad_retain(t));
    return copy_as("contiguous", t);
}

gad_tensor *gad_cast(gad_tensor *t, gad_dtype_t dtype) {
    GAD_NEED("cast", t);
    if (!gad__dtype_valid(dtype))
        return gad__err(GAD_ERR_DTYPE, "cast", "invalid dtype value %d", dtype);
    if (t->dtype == dtype) return gad__own(gad_retain(t));
    if (GAD_LACKS("cast", t, convert)) return NULL;
    gad_tensor *y = gad__tensor_new("cast", t->dev, dtype, t->shape, t->rank);
    if (!y) return NULL;
    GAD_BE(t)->convert(t, y);
    /* only float -> float is differentiable; an i64 result is an index, a
     * bool one a mask */
    if (gad__is_floating(dtype)) y = gad__track(y, GAD_OP(CAST), &t, 1, NULL, 0);
    return gad__own(y);
}

/* ---- half precision (issue 29): GAD_HALF_VIA_F32 (ops_int.h) */

int gad__half_begin(const char *op, gad_tensor **in, int n) {
    int dt = 0;
    const gad_tensor *first = NULL;
    for (int i = 0; i < n; i++) {
        if (gad__bad_tensor(in[i]) || !gad__is_floating(in[i]->dtype)) continue;
        if (gad__is_half(in[i]->dtype) && gad__need_floating(op, in[i])) return -1;
        if (!first) first = in[i];
        else if (gad__need_same_dtype(op, first, in[i])) return -1;
        if (gad__is_half(in[i]->dtype)) dt = in[i]->dtype;
    }
    gad_scope_begin();
    for (int i = 0; i < n; i++)
        if (!gad__bad_tensor(in[i]) && gad__is_half(in[i]->dtype) &&
            !(in[i] = gad_cast(in[i], GAD_F32))) {
            gad_scope_end();
            return -1;
        }
    return dt;
}

gad_tensor *gad__half_end(gad_tensor *r, int dtype, gad_tensor **extra) {
    if (dtype <= 0) return NULL;
    if (r && r->dtype == GAD_F32) r = gad_cast(r, (gad_dtype_t)dtype);
    gad_keep(r);
    if (extra && *extra) {
        if (r) gad_keep(*extra);
        else *extra = NULL;
    }
    gad_scope_end();
    return r;
}

int gad__make_writable(const char *op, gad_tensor *t) {
    if (t->node && t->node->info) {
        gad__err(GAD_ERR_NOT_UNIQUE, op,
                 "the tensor is the output of a tracked op (%s): writing "
                 "would make its graph lie; detach it first",
                 t->node->info->name);
        return -1;
    }
    return gad__make_unique(op, t);
}

void *gad_data_mut(gad_tensor *t) {
    if (gad__bad_tensor(t)) return gad__bad_arg("data_mut", t);
    if (t->dev != GAD_DEV_HOST) return gad__need_host("data_mut", t);
    return gad__make_writable("data_mut", t) ? NULL : gad__ptr(t);
}

/* Copy n values of dtype from the host into t, in place on its device. */
static gad_status write_from(const char *op, gad_tensor *t, const void *src, size_t n,
                             int dtype) {
    if (gad__bad_tensor(t)) {
        gad__bad_arg(op, t);
        return gad_last_error()->kind;
    }
    char b[GAD_SHAPE_BUF];
    if (t->dtype != dtype) {
        gad__err(GAD_ERR_DTYPE, op, "the tensor %s is %s, the values %s",
                 gad__shape_str(b, t->shape, t->rank), gad_dtype_name(t->dtype),
                 gad_dtype_name(dtype));
        return GAD_ERR_DTYPE;
    }
    if (n != (size_t)t->numel) {
        gad__err(GAD_ERR_SHAPE, op, "%zu values for a tensor %s of %lld elements", n,
                 gad__shape_str(b, t->shape, t->rank), (long long)t->numel);
        return GAD_ERR_SHAPE;
    }
    if (n == 0) return GAD_OK;
    if (!src) {
        gad__err(GAD_ERR_DOMAIN, op, "the values are NULL");
        return GAD_ERR_DOMAIN;
    }
    if (gad__make_writable(op, t)) return gad_last_error()->kind; /* private and packed now */
    size_t bytes = n * gad__dsize(dtype);
    if (t->dev == GAD_DEV_HOST) {
        memcpy(gad__ptr(t), src, bytes);
    } else if (gad__devmem[t->dev]->from_host(gad__ptr(t), src, bytes) != 0) {
        gad__err(GAD_ERR_DEVICE, op, "cannot copy %zu bytes to %s", bytes,
                 gad__device_name(t->dev));
        return gad_last_error()->kind; /* the device's own error when it gave one */
    }
    return GAD_OK;
}

gad_status gad_write_f32(gad_tensor *t, const float *src, size_t n) {
    return write_from("write_f32", t, src, n, GAD_F32);
}
gad_status gad_write_f64(gad_tensor *t, const double *src, size_t n) {
    return write_from("write_f64", t, src, n, GAD_F64);
}
gad_status gad_write_i64(gad_tensor *t, const int64_t *src, size_t n) {
    return write_from("write_i64", t, src, n, GAD_I64);
}

gad_tensor *gad_stop_gradient(gad_tensor *t) {
    GAD_NEED("stop_gradient", t);
    return gad__own(gad__track(gad__alias("stop_gradient", t), GAD_OP(STOP_GRADIENT),
                               &t, 1, NULL, 0));
}

gad_tensor *gad_to_device(gad_tensor *t, gad_device dev) {
    GAD_NEED("to_device", t);
    if (!gad__dev_valid(dev))
        return gad__err(GAD_ERR_DEVICE, "to_device", "%d names no device", dev);
    if (t->dev == dev) return gad__own(gad_retain(t));
    gad_tensor *y = gad__to_dev("to_device", t, dev);
    int src = t->dev;
    y = gad__track(y, GAD_OP(TO_DEVICE), &t, 1, NULL, 0);
    if (y && y->node) GAD_NODE_P(y->node, to_device)->src = src;
    return gad__own(y);
}

int gad__vjp_copy(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)n, (void)need;
    gin[0] = gy;
    return 0;
}

int gad__vjp_cast(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    return (gin[0] = gad_cast(gy, (gad_dtype_t)n->parents[0]->dtype)) ? 0 : -1;
}

int gad__vjp_to_device(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    return (gin[0] = gad_to_device(gy, (gad_device)GAD_NODE_P(n, to_device)->src)) ? 0 : -1;
}

/* The path through stop_gradient contributes nothing. */
int gad__vjp_stop_gradient(gad_node *n, gad_tensor *gy, const bool *need,
                           gad_tensor **gin) {
    (void)n, (void)gy, (void)need, (void)gin;
    return 0;
}

static gad_tensor *apply_copy(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    (void)n;
    return s->i[0] == GAD_OP_CAST ? gad_cast(in[0], (gad_dtype_t)s->i[1])
                                  : gad_clone(in[0]);
}

int gad__sample_copy(gad_op_sample *s, gad_rng *r, int v) {
    const int64_t shape[2] = {3, 4};
    if (v >= 1) return 0;
    *s = (gad_op_sample){.n = 1, .apply = apply_copy, .smooth = 1};
    s->i[0] = GAD_OP_COPY;
    s->in[0] = gad__sample_leaf(r, shape, 2, -2, 2, 0);
    snprintf(s->what, sizeof s->what, "clone");
    return s->in[0] != NULL;
}

/* f32 -> f64 (checked at f32 precision, as the input is f32) */
int gad__sample_cast(gad_op_sample *s, gad_rng *r, int v) {
    const int64_t shape[2] = {3, 4};
    if (v >= 1) return 0;
    *s = (gad_op_sample){.n = 1, .apply = apply_copy, .smooth = 1};
    s->i[0] = GAD_OP_CAST;
    s->i[1] = GAD_F64;
    s->in[0] = gad_requires_grad(gad_rng_uniform_tensor(r, shape, 2, GAD_F32, -2, 2));
    snprintf(s->what, sizeof s->what, "f32 -> f64");
    return s->in[0] != NULL;
}

/* To the host and back to x's device: on the CPU both moves give x itself;
 * on another device (the test device, CUDA) both are copies whose
 * gradients cross back. */
static gad_tensor *apply_to_device(void *self, gad_tensor *const *in, int n) {
    (void)self, (void)n;
    return gad_to_device(gad_to_device(in[0], GAD_CPU), gad_device_of(in[0]));
}

int gad__sample_to_device(gad_op_sample *s, gad_rng *r, int v) {
    const int64_t shape[2] = {2, 3};
    if (v >= 1) return 0;
    *s = (gad_op_sample){.n = 1, .apply = apply_to_device, .smooth = 1};
    s->in[0] = gad__sample_leaf(r, shape, 2, -2, 2, 0);
    snprintf(s->what, sizeof s->what, "to the CPU and back");
    return s->in[0] != NULL;
}

/* stop_gradient's VJP is zero by design, so finite differences (which see
 * the identity) cannot check it: it has no sample, and tests/test_autodiff.c
 * checks its exact zeros instead. */
int gad__sample_stop_gradient(gad_op_sample *s, gad_rng *r, int v) {
    (void)s, (void)r, (void)v;
    return 0;
}

/* ---- composite (ops.def's COMPOSITE row): contiguous (a copy row when the
 * input is not; the gradient checks' layouts make it so) */
static gad_tensor *apply_contiguous(void *self, gad_tensor *const *in, int n) {
    (void)self, (void)n;
    return gad_contiguous(in[0]);
}

int gad__sample_contiguous(gad_op_sample *s, gad_rng *r, int v) {
    static const int64_t shapes[][3] = {{3, 4}, {2, 3, 2}, {0, 3}};
    static const int ranks[] = {2, 3, 2};
    if (v >= 4) return 0;
    *s = (gad_op_sample){.n = 1, .apply = apply_contiguous, .smooth = 1};
    gad_tensor *x = gad__sample_leaf(r, shapes[v % 3], ranks[v % 3], -2, 2, 0);
    if (v == 3 && x) /* a transposed leaf: the copy itself */
        x = gad_requires_grad(gad_transpose(gad_detach(x)));
    s->in[0] = x;
    gad__shape_str(s->what, shapes[v % 3], ranks[v % 3]);
    if (v == 3) strncat(s->what, " transposed", sizeof s->what - strlen(s->what) - 1);
    return x != NULL;
}
