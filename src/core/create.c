/* create.c: constructors (SPEC §1.8). */
#include "gad_int.h"

#include <math.h>

static gad_tensor *from_data(const char *op, int dtype, const void *data,
                             const int64_t *shape, int rank) {
    gad_tensor *t = gad__tensor_new(op, GAD_DEV_HOST, dtype, shape, rank);
    if (!t) return NULL;
    if (t->numel > 0) {
        if (!data) {
            long long n = (long long)t->numel;
            gad_release(t);
            return gad__err(GAD_ERR_DOMAIN, op, "data is NULL for %lld elements", n);
        }
        memcpy(gad__ptr(t), data, (size_t)t->numel * gad__dsize(dtype));
    }
    return gad__own_on_default(op, t);
}

gad_tensor *gad_from_f32(const float *data, const int64_t *shape, int rank) {
    return from_data("from_f32", GAD_F32, data, shape, rank);
}
gad_tensor *gad_from_f64(const double *data, const int64_t *shape, int rank) {
    return from_data("from_f64", GAD_F64, data, shape, rank);
}
gad_tensor *gad_from_i64(const int64_t *data, const int64_t *shape, int rank) {
    return from_data("from_i64", GAD_I64, data, shape, rank);
}
gad_tensor *gad_from_bool(const uint8_t *data, const int64_t *shape, int rank) {
    gad_tensor *t = gad__tensor_new("from_bool", GAD_DEV_HOST, GAD_BOOL, shape, rank);
    if (!t) return NULL;
    if (t->numel > 0 && !data) {
        long long n = (long long)t->numel;
        gad_release(t);
        return gad__err(GAD_ERR_DOMAIN, "from_bool", "data is NULL for %lld elements", n);
    }
    uint8_t *p = gad__ptr(t); /* any nonzero byte is true, kept as 1 */
    for (int64_t i = 0; i < t->numel; i++) p[i] = data[i] != 0;
    return gad__own_on_default("from_bool", t);
}
/* The bytes of any dtype, copied; a bool byte must be 0 or 1 (PyTorch
 * stores bools so, and a checkpoint with another byte is corrupt). */
gad_tensor *gad_from_raw(gad_dtype_t dtype, const void *data, const int64_t *shape,
                         int rank) {
    if (!gad__dtype_valid(dtype))
        return gad__err(GAD_ERR_DTYPE, "from_raw", "invalid dtype value %d", (int)dtype);
    gad_tensor *t = gad__tensor_new("from_raw", GAD_DEV_HOST, dtype, shape, rank);
    if (!t) return NULL;
    if (t->numel > 0 && !data) {
        long long n = (long long)t->numel;
        gad_release(t);
        return gad__err(GAD_ERR_DOMAIN, "from_raw", "data is NULL for %lld elements", n);
    }
    if (dtype == GAD_BOOL) {
        const uint8_t *b = data;
        for (int64_t i = 0; i < t->numel; i++) {
            if (b[i] > 1) {
                gad_release(t);
                return gad__err(GAD_ERR_DOMAIN, "from_raw",
                                "bool byte %lld is %u, not 0 or 1", (long long)i, b[i]);
            }
        }
    }
    if (t->numel > 0) memcpy(gad__ptr(t), data, (size_t)t->numel * gad__dsize(dtype));
    return gad__own_on_default("from_raw", t);
}

static gad_tensor *full_op(const char *op, int dev, const int64_t *shape, int rank,
                           int dtype, double value) {
    if (dtype == GAD_I64 &&
        !(value >= -9223372036854775808.0 && value < 9223372036854775808.0))
        return gad__err(GAD_ERR_DOMAIN, op, "value %g does not fit in i64", value);
    gad_tensor *t = gad__tensor_new(op, dev, dtype, shape, rank);
    if (!t) return NULL;
    gad__fill(t, value);
    return gad__own(t);
}

gad_tensor *gad__full_on(int dev, const int64_t *shape, int rank, int dtype, double value) {
    return full_op(value == 0 ? "zeros" : "full", dev, shape, rank, dtype, value);
}

gad_tensor *gad_zeros(const int64_t *shape, int rank, gad_dtype_t dtype) {
    return full_op("zeros", gad__default_dev, shape, rank, dtype, 0.0);
}
gad_tensor *gad_ones(const int64_t *shape, int rank, gad_dtype_t dtype) {
    return full_op("ones", gad__default_dev, shape, rank, dtype, 1.0);
}
gad_tensor *gad_full(const int64_t *shape, int rank, gad_dtype_t dtype,
                     double value) {
    return full_op("full", gad__default_dev, shape, rank, dtype, value);
}
gad_tensor *gad_scalar(double value, gad_dtype_t dtype) {
    return full_op("scalar", gad__default_dev, NULL, 0, dtype, value);
}
gad_tensor *gad_scalar_f32(float value) {
    return full_op("scalar", gad__default_dev, NULL, 0, GAD_F32, value);
}
gad_tensor *gad_scalar_f64(double value) {
    return full_op("scalar", gad__default_dev, NULL, 0, GAD_F64, value);
}
gad_tensor *gad_zeros_like(gad_tensor *t) {
    if (gad__bad_tensor(t)) return gad__bad_arg("zeros_like", t);
    return full_op("zeros_like", t->dev, t->shape, t->rank, t->dtype, 0.0);
}
gad_tensor *gad_full_like(gad_tensor *t, double value) {
    if (gad__bad_tensor(t)) return gad__bad_arg("full_like", t);
    return full_op("full_like", t->dev, t->shape, t->rank, t->dtype, value);
}

/* Count the values of arange by running its own recurrence once. */
#define ARANGE(T)                                                              \
    do {                                                                       \
        T s_ = (T)start, e_ = (T)end, d_ = (T)step, x_;                        \
        int64_t n_ = 0;                                                        \
        for (x_ = s_; d_ > 0 ? x_ < e_ : x_ > e_; x_ += d_) {                  \
            if (++n_ > limit || x_ + d_ == x_) { n_ = limit + 1; break; }      \
        }                                                                      \
        if (n_ > limit)                                                        \
            return gad__err(GAD_ERR_SHAPE, "arange",                           \
                            "(%g, %g, %g) gives too many elements", start,     \
                            end, step);                                        \
        int64_t shp_[1] = {n_};                                                \
        t = gad__tensor_new("arange", GAD_DEV_HOST, dtype, shp_, 1);                         \
        if (!t) return NULL;                                                   \
        T *p_ = gad__ptr(t);                                                   \
        x_ = s_;                                                               \
        for (int64_t i_ = 0; i_ < n_; i_++, x_ += d_) p_[i_] = x_;             \
    } while (0)

static gad_tensor *arange_in(double start, double end, double step, gad_dtype_t dtype);

/* A tensor made in dtype `via` (f32 for the halves, i64 for i32/u8) and
 * converted to dtype, PyTorch's way of computing them in a wider type. */
static gad_tensor *made_via(const char *op, gad_tensor *w, int dtype) {
    if (!w || (int)w->dtype == dtype) return w;
    gad_tensor *t = gad__tensor_new(op, GAD_DEV_HOST, dtype, w->shape, w->rank);
    if (t) gad__host_convert(w, gad__ptr(t), dtype);
    gad_release(w);
    return t;
}

gad_tensor *gad_arange(double start, double end, double step,
                       gad_dtype_t dtype) {
    int via = gad__is_half(dtype) ? GAD_F32
            : dtype == GAD_I32 || dtype == GAD_U8 ? GAD_I64 : dtype;
    gad_tensor *t = made_via("arange", arange_in(start, end, step, via), dtype);
    return t ? gad__own_on_default("arange", t) : NULL;
}

static gad_tensor *arange_in(double start, double end, double step,
                             gad_dtype_t dtype) {
    if (!isfinite(start) || !isfinite(end) || !isfinite(step) || step == 0)
        return gad__err(GAD_ERR_SHAPE, "arange",
                        "needs finite bounds and a nonzero step, got (%g, %g, %g)",
                        start, end, step);
    /* Refuse sequences that could not fit in memory anyway; the recurrence
     * below may take a few more steps than (end - start) / step. */
    double est = ceil((end - start) / step);
    if (est > 4294967296.0)
        return gad__err(GAD_ERR_SHAPE, "arange",
                        "(%g, %g, %g) gives too many elements", start, end, step);
    const int64_t limit = (est > 0 ? (int64_t)est : 0) + 1024;
    gad_tensor *t = NULL;
    if (dtype == GAD_F32) ARANGE(float);
    else if (dtype == GAD_F64) ARANGE(double);
    else if (dtype == GAD_I64) {
        if (fabs(start) > 9e18 || fabs(end) > 9e18 || fabs(step) > 9e18)
            return gad__err(GAD_ERR_SHAPE, "arange", "bounds exceed i64");
        int64_t s = (int64_t)start, e = (int64_t)end, d = (int64_t)step;
        if (d == 0)
            return gad__err(GAD_ERR_SHAPE, "arange", "step %g truncates to 0",
                            step);
        int64_t n = 0;
        if (d > 0 && e > s) n = (e - s + d - 1) / d;
        if (d < 0 && e < s) n = (s - e + (-d) - 1) / (-d);
        if (n > limit)
            return gad__err(GAD_ERR_SHAPE, "arange", "too many elements");
        int64_t shp[1] = {n};
        t = gad__tensor_new("arange", GAD_DEV_HOST, GAD_I64, shp, 1);
        if (!t) return NULL;
        int64_t *p = gad__ptr(t);
        for (int64_t i = 0; i < n; i++) p[i] = s + i * d;
    } else {
        return gad__err(GAD_ERR_DTYPE, "arange", "needs a float or integer dtype, got %s",
                        gad_dtype_name(dtype));
    }
    return t;
}

static gad_tensor *linspace_in(double start, double end, int64_t num,
                               gad_dtype_t dtype);

gad_tensor *gad_linspace(double start, double end, int64_t num,
                         gad_dtype_t dtype) {
    int via = gad__is_half(dtype) ? GAD_F32 : dtype; /* computed in f32, rounded once */
    gad_tensor *t = made_via("linspace", linspace_in(start, end, num, via), dtype);
    return t ? gad__own_on_default("linspace", t) : NULL;
}

static gad_tensor *linspace_in(double start, double end, int64_t num,
                               gad_dtype_t dtype) {
    if (dtype != GAD_F32 && dtype != GAD_F64)
        return gad__err(GAD_ERR_DTYPE, "linspace", "needs a float dtype, got %s",
                        gad_dtype_name(dtype));
    if (num < 0)
        return gad__err(GAD_ERR_SHAPE, "linspace", "negative count %lld",
                        (long long)num);
    int64_t shp[1] = {num};
    gad_tensor *t = gad__tensor_new("linspace", GAD_DEV_HOST, dtype, shp, 1);
    if (!t) return NULL;
    if (dtype == GAD_F32) {
        float *p = gad__ptr(t), s = (float)start, e = (float)end;
        for (int64_t i = 0; i < num; i++)
            p[i] = num == 1 ? s : s + (e - s) * (float)i / (float)(num - 1);
    } else {
        double *p = gad__ptr(t);
        for (int64_t i = 0; i < num; i++)
            p[i] = num == 1 ? start : start + (end - start) * (double)i / (double)(num - 1);
    }
    return t;
}

gad_tensor *gad_eye(int64_t n, gad_dtype_t dtype) {
    int64_t shp[2] = {n, n};
    gad_tensor *t = gad__tensor_new("eye", GAD_DEV_HOST, dtype, shp, 2);
    if (!t) return NULL;
    size_t es = gad__dsize(dtype);
    memset(gad__ptr(t), 0, (size_t)t->numel * es);
    for (int64_t i = 0; i < n; i++)
        gad__host_fill((char *)gad__ptr(t) + (size_t)(i * n + i) * es, dtype, 1, 1.0);
    return gad__own_on_default("eye", t);
}
