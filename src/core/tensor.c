/* tensor.c: the tensor object: creation, layout, copy-on-write, packing,
 * accessors and dtype conversion (SPEC §1.2-1.9). */
#include "gad_int.h"
#include "half.h"
#include "half_vec.h"
#include "iter.h"

#include <math.h>

const char *gad_dtype_name(gad_dtype_t dtype) {
    switch (dtype) {
    case GAD_F32: return "f32";
    case GAD_F64: return "f64";
    case GAD_I64: return "i64";
    case GAD_BOOL: return "bool";
    case GAD_F16: return "f16";
    case GAD_BF16: return "bf16";
    case GAD_I32: return "i32";
    case GAD_U8: return "u8";
    default: return "?";
    }
}

size_t gad_dtype_size(gad_dtype_t dtype) {
    return gad__dtype_valid(dtype) ? gad__dsize(dtype) : 0;
}

double gad__elem_f64(int dtype, const void *p) {
    switch (dtype) {
    case GAD_F32: return *(const float *)p;
    case GAD_F64: return *(const double *)p;
    case GAD_I64: return (double)*(const int64_t *)p;
    case GAD_F16: return gad__f16_to_f32(*(const uint16_t *)p);
    case GAD_BF16: return gad__bf16_to_f32(*(const uint16_t *)p);
    case GAD_I32: return *(const int32_t *)p;
    default: return *(const uint8_t *)p; /* u8, bool */
    }
}

static inline void convert_elem(int from, const char *p, int to, void *dst, int64_t k);

static int check_dtype(const char *op, int dtype) {
    if (gad__dtype_valid(dtype)) return 0;
    gad__err(GAD_ERR_DTYPE, op, "invalid dtype value %d", dtype);
    return -1;
}

/* contig_new's failure: t (NULL, or a header without storage) back, and
 * the memory error. */
static GAD_COLD void *contig_failed(const char *op, gad_tensor *t, int dev, size_t bytes) {
    if (t) gad__header_free(t);
    return gad__err(GAD_ERR_MEMORY, op, "cannot allocate %zu bytes on %s", bytes,
                    gad__device_name(dev));
}

/* A header over a new buffer of numel elements on dev, row-major at offset
 * 0; the caller fills shape and strides. NULL and a memory error on
 * failure. */
static gad_tensor *contig_new(const char *op, int dev, int dtype, int rank, int64_t numel) {
    size_t bytes = (size_t)numel * gad__dsize(dtype);
    gad_tensor *t = gad__header_new(op);
    gad_storage *s = t ? gad__storage_new_on(dev, bytes) : NULL;
    if (!s) return contig_failed(op, t, dev, bytes);
    t->st = s;
    t->dev = (uint8_t)dev;
    t->dtype = (uint8_t)dtype;
    t->rank = (uint8_t)rank;
    t->offset = 0;
    t->numel = numel;
    t->contig = 1;
    return t;
}

gad_tensor *gad__tensor_new(const char *op, int dev, int dtype, const int64_t *shape,
                            int rank) {
    int64_t numel;
    if (check_dtype(op, dtype) || gad__check_shape(op, shape, rank, &numel))
        return NULL;
    gad_tensor *t = contig_new(op, dev, dtype, rank, numel);
    if (!t) return NULL;
    if (rank > 0) memcpy(t->shape, shape, (size_t)rank * sizeof *shape); /* NULL at rank 0 */
    gad__row_major(shape, rank, t->strides);
    return t;
}

GAD_HOT gad_tensor *gad__tensor_like(const char *op, const gad_tensor *x) {
    /* contig_new, with x's fields read again after each call instead of
     * held across it (fewer registers to save: this is every op's path) */
    gad_tensor *t = gad__header_new(op);
    gad_storage *s =
        t ? gad__storage_new_on(x->dev, (size_t)x->numel * gad__dsize(x->dtype)) : NULL;
    if (GAD_UNLIKELY(!s))
        return contig_failed(op, t, x->dev, (size_t)x->numel * gad__dsize(x->dtype));
    t->st = s;
    t->dev = x->dev;
    t->dtype = x->dtype;
    t->rank = x->rank;
    t->offset = 0;
    t->numel = x->numel;
    t->contig = 1;
    /* whole arrays: a fixed-size copy is a few vector moves (what lies past
     * the rank is never read) */
    memcpy(t->shape, x->shape, sizeof t->shape);
    if (x->contig) memcpy(t->strides, x->strides, sizeof t->strides);
    else gad__row_major(x->shape, x->rank, t->strides);
    return t;
}

gad_tensor *gad__tensor_zeros(const char *op, int dev, int dtype, const int64_t *shape,
                              int rank) {
    gad_tensor *t = gad__tensor_new(op, dev, dtype, shape, rank);
    if (t) gad__fill(t, 0.0);
    return t;
}

void gad__fill(gad_tensor *t, double value) {
    if (t->numel == 0) return;
    if (GAD_LIKELY(t->dev == GAD_DEV_HOST)) gad__host_fill(gad__ptr(t), t->dtype, t->numel, value);
    else gad__devmem[t->dev]->fill(gad__ptr(t), t->dtype, t->numel, value);
}

void gad__host_fill(void *p, int dtype, int64_t n, double v) {
    if (v == 0.0 && !signbit(v)) { /* all-zero bits, whatever the dtype */
        memset(p, 0, (size_t)n * gad__dsize(dtype));
    } else if (dtype == GAD_F32) {
        float f = (float)v, *d = p;
        for (int64_t i = 0; i < n; i++) d[i] = f;
    } else if (dtype == GAD_F64) {
        double *d = p;
        for (int64_t i = 0; i < n; i++) d[i] = v;
    } else if (dtype == GAD_BOOL) { /* nonzero (NaN included) is true */
        memset(p, v != 0, (size_t)n);
    } else if (dtype == GAD_I64) {
        int64_t k = (int64_t)v, *d = p;
        for (int64_t i = 0; i < n; i++) d[i] = k;
    } else { /* one element converted as gad_cast does, then copied */
        union { uint8_t b; uint16_t h; uint32_t w; double d; } one;
        convert_elem(GAD_F64, (const char *)&v, dtype, &one, 0);
        size_t es = gad__dsize(dtype);
        if (es == 1) memset(p, one.b, (size_t)n);
        else if (es == 2) for (int64_t i = 0; i < n; i++) ((uint16_t *)p)[i] = one.h;
        else for (int64_t i = 0; i < n; i++) ((uint32_t *)p)[i] = one.w;
    }
}

GAD_HOT gad_tensor *gad__alias(const char *op, gad_tensor *src) {
    gad_tensor *t = gad__header_new(op);
    if (!t) return gad__err(GAD_ERR_MEMORY, op, "cannot allocate a tensor");
    atomic_fetch_add_explicit(&src->st->refs, 1, memory_order_relaxed);
    t->st = src->st;
    t->dev = src->dev;
    t->dtype = src->dtype;
    t->rank = src->rank;
    t->offset = src->offset;
    t->numel = src->numel;
    t->contig = src->contig;
    memcpy(t->shape, src->shape, sizeof t->shape);
    memcpy(t->strides, src->strides, sizeof t->strides);
    return t;
}

/* ----------------------------------------------------------------- pack */

typedef struct copy_ctx {
    gad_iter it; /* operand 0: source, operand 1: destination */
    const char *src;
    char *dst;
    size_t es;
} copy_ctx;

#define COPY_RUN(T)                                                            \
    do {                                                                       \
        const T *s_ = (const T *)c->src + off[0] + j * ss;                     \
        T *d_ = (T *)c->dst + off[1] + j * ds;                                 \
        if (ss == 1 && ds == 1) memcpy(d_, s_, (size_t)len * sizeof(T));       \
        else                                                                   \
            for (int64_t k = 0; k < len; k++) d_[k * ds] = s_[k * ss];         \
    } while (0)

/* Copy the elements at row-major positions [lo, hi). */
static void copy_range(void *vctx, int64_t lo, int64_t hi) {
    copy_ctx *c = vctx;
    int nd = c->it.nd;
    int64_t inner = c->it.inner;
    int64_t ss = c->it.strides[0][nd - 1], ds = c->it.strides[1][nd - 1];
    int64_t idx[GAD_MAX_RANK], off[2];
    int64_t j = lo % inner, pos = lo;
    gad__iter_seek(&c->it, lo / inner, idx, off);
    while (pos < hi) {
        int64_t len = inner - j < hi - pos ? inner - j : hi - pos;
        if (c->es == 4) COPY_RUN(uint32_t);
        else if (c->es == 2) COPY_RUN(uint16_t); /* f16, bf16 */
        else if (c->es == 1) COPY_RUN(uint8_t);
        else COPY_RUN(uint64_t);
        pos += len;
        j = 0;
        gad__iter_next(&c->it, idx, off);
    }
}

void gad__host_copy_strided(const gad_tensor *src, void *dst,
                            const int64_t *dst_strides) {
    if (src->numel == 0) return;
    int64_t rm[GAD_MAX_RANK];
    if (!dst_strides) { /* packed */
        if (src->contig && src->numel < (1 << 16)) {
            memcpy(dst, gad__ptr(src), (size_t)src->numel * gad__dsize(src->dtype));
            return;
        }
        gad__row_major(src->shape, src->rank, rm);
        dst_strides = rm;
    }
    copy_ctx c = {.src = gad__ptr(src), .dst = dst, .es = gad__dsize(src->dtype)};
    const int64_t *strides[2] = {src->strides, dst_strides};
    gad__iter_init(&c.it, src->shape, src->rank, 2, strides);
    gad__parallel_for(src->numel, 1 << 16, copy_range, &c);
}

void gad__copy_strided(const gad_tensor *src, void *dst,
                       const int64_t *dst_strides) {
    gad__devmem[src->dev]->copy_strided(src, dst, dst_strides);
}

void gad__pack(const gad_tensor *t, void *dst) {
    gad__devmem[t->dev]->copy_strided(t, dst, NULL);
}

gad_tensor *gad__contig(const char *op, const gad_tensor *t) {
    if (t->contig) return gad_retain((gad_tensor *)t); /* a count, not the tensor */
    gad_tensor *c = gad__tensor_like(op, t);
    if (c) gad__pack(t, gad__ptr(c));
    return c;
}

gad_tensor *gad__to_dev(const char *op, const gad_tensor *t, int dev) {
    gad_tensor *src = gad__contig(op, t); /* packed, on t's device */
    gad_tensor *y = src ? contig_new(op, dev, t->dtype, t->rank, t->numel) : NULL;
    if (!y) {
        gad_release(src);
        return NULL;
    }
    memcpy(y->shape, t->shape, sizeof y->shape);
    gad__row_major(t->shape, t->rank, y->strides);
    size_t n = (size_t)t->numel * gad__dsize(t->dtype);
    int rc = 0;
    if (n == 0) {
    } else if (t->dev == dev) {
        gad__pack(src, gad__ptr(y));
    } else if (t->dev == GAD_DEV_HOST) {
        rc = gad__devmem[dev]->from_host(gad__ptr(y), gad__ptr(src), n);
    } else if (dev == GAD_DEV_HOST) {
        rc = gad__devmem[t->dev]->to_host(gad__ptr(y), gad__ptr(src), n);
    } else { /* between two devices: through the host */
        void *bounce = gad__alloc(n);
        rc = bounce ? gad__devmem[t->dev]->to_host(bounce, gad__ptr(src), n) : -1;
        if (rc == 0) rc = gad__devmem[dev]->from_host(gad__ptr(y), bounce, n);
        gad__free(bounce, n);
    }
    gad_release(src);
    if (rc) {
        gad_release(y);
        return gad__err(GAD_ERR_MEMORY, op, "cannot copy %zu bytes from %s to %s", n,
                        gad__device_name(t->dev), gad__device_name(dev));
    }
    return y;
}

/* A storage of t's size on t's device, or NULL with a memory error under op. */
static gad_storage *storage_like(const char *op, const gad_tensor *t) {
    size_t bytes = (size_t)t->numel * gad__dsize(t->dtype);
    gad_storage *s = gad__storage_new_on(t->dev, bytes);
    if (!s)
        gad__err(GAD_ERR_MEMORY, op, "cannot allocate %zu bytes on %s", bytes,
                 gad__device_name(t->dev));
    return s;
}

int gad__make_unique(const char *op, gad_tensor *t) {
    if (t->contig && atomic_load_explicit(&t->st->refs, memory_order_acquire) == 1)
        return 0;
    gad_storage *s = storage_like(op, t);
    if (!s) return -1;
    gad__pack(t, gad__storage_data(s));
    gad__storage_release(t->st);
    t->st = s;
    int64_t strides[GAD_MAX_RANK];
    gad__row_major(t->shape, t->rank, strides);
    gad__set_layout(t, t->shape, strides, t->rank, 0);
    return 0;
}

int gad__make_unique_whole(const char *op, gad_tensor *t, gad_storage **fresh) {
    *fresh = NULL;
    if (!t->contig || atomic_load_explicit(&t->st->refs, memory_order_acquire) == 1)
        return gad__make_unique(op, t);
    *fresh = storage_like(op, t);
    return *fresh ? 0 : -1;
}

gad_storage *gad__swap_storage(gad_tensor *t, gad_storage *s) {
    gad_storage *old = t->st;
    t->st = s;
    int64_t strides[GAD_MAX_RANK];
    gad__row_major(t->shape, t->rank, strides);
    gad__set_layout(t, t->shape, strides, t->rank, 0);
    return old;
}

/* ------------------------------------------------------------ accessors */

/* The accessors answer a released tensor as they answer NULL, and record
 * the error (a NULL records none: it is how "no tensor" is asked about). */
static bool released_arg(const char *op, const gad_tensor *t) {
    if (!t) return true;
    if (GAD_LIKELY(!gad__released(t))) return false;
    gad__err_released(op);
    return true;
}

int gad_rank(const gad_tensor *t) { return released_arg("rank", t) ? -1 : t->rank; }
const int64_t *gad_shape(const gad_tensor *t) {
    return released_arg("shape", t) ? NULL : t->shape;
}
const int64_t *gad_strides(const gad_tensor *t) {
    return released_arg("strides", t) ? NULL : t->strides;
}
int64_t gad_numel(const gad_tensor *t) { return released_arg("numel", t) ? 0 : t->numel; }
gad_dtype_t gad_dtype(const gad_tensor *t) {
    return released_arg("dtype", t) ? GAD_DTYPE_INVALID : (gad_dtype_t)t->dtype;
}
int gad_is_contiguous(const gad_tensor *t) {
    return !released_arg("is_contiguous", t) && t->contig;
}

int gad_is_unique(const gad_tensor *t) {
    return !released_arg("is_unique", t) && atomic_load(&t->st->refs) == 1;
}

int64_t gad_dim(const gad_tensor *t, int axis) {
    if (gad__bad_tensor(t)) return (gad__bad_arg("dim", t), -1);
    int a;
    if (gad__norm_axis("dim", axis, t->rank, &a)) return -1;
    return t->shape[a];
}

/* One element as double (exact for every dtype but i64 beyond 2^53). */
static inline double elem_f64(const gad_tensor *t, const char *p) {
    return gad__elem_f64(t->dtype, p);
}

/* float -> i64: truncate toward zero, saturate, NaN -> 0 (SPEC §1.9). */
static inline int64_t f2i(double v) {
    if (isnan(v)) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

/* An integer element (i64, i32, u8, bool) as int64. */
static inline int64_t int_elem(int dtype, const char *p) {
    switch (dtype) {
    case GAD_I64: return *(const int64_t *)p;
    case GAD_I32: return *(const int32_t *)p;
    default: return *(const uint8_t *)p; /* u8, bool */
    }
}

static inline bool is_int(int dtype) {
    return dtype == GAD_I64 || dtype == GAD_I32 || dtype == GAD_U8 || dtype == GAD_BOOL;
}

/* Store one element of dtype `from` at p into dst[k] of dtype `to`, as
 * gad_cast defines it (SPEC §1.9): to bool, nonzero (NaN included); float
 * to an integer truncates toward zero, saturates and sends NaN to 0; an
 * integer to a narrower one keeps the low bits (C's and PyTorch's wrap);
 * to a half, through f32 (one rounding from f32, i64 and i32 first rounded
 * to f32, f64 too: PyTorch's conversions, double rounding included). */
static inline void convert_elem(int from, const char *p, int to, void *dst, int64_t k) {
    if (to == GAD_BOOL) {
        ((uint8_t *)dst)[k] = is_int(from) ? int_elem(from, p) != 0 : gad__elem_f64(from, p) != 0;
        return;
    }
    if (to == GAD_I64 || to == GAD_I32 || to == GAD_U8) {
        int64_t v;
        if (is_int(from)) {
            v = int_elem(from, p);
        } else {
            double d = gad__elem_f64(from, p);
            if (to == GAD_I32)
                d = isnan(d) ? 0 : d >= 2147483647.0 ? 2147483647.0 : d <= -2147483648.0 ? -2147483648.0 : d;
            else if (to == GAD_U8)
                d = isnan(d) || d <= 0 ? 0 : d >= 255.0 ? 255.0 : d;
            v = f2i(d);
        }
        if (to == GAD_I64) ((int64_t *)dst)[k] = v;
        else if (to == GAD_I32) ((int32_t *)dst)[k] = (int32_t)(uint32_t)(uint64_t)v;
        else ((uint8_t *)dst)[k] = (uint8_t)(uint64_t)v;
        return;
    }
    /* to a float: i64 -> f32 in one rounding, not two through double */
    float f = from == GAD_I64 ? (float)*(const int64_t *)p
            : from == GAD_I32 ? (float)*(const int32_t *)p : (float)gad__elem_f64(from, p);
    switch (to) {
    case GAD_F64: ((double *)dst)[k] = gad__elem_f64(from, p); break;
    case GAD_F32: ((float *)dst)[k] = f; break;
    case GAD_F16: ((uint16_t *)dst)[k] = gad__f32_to_f16(f); break;
    default: ((uint16_t *)dst)[k] = gad__f32_to_bf16(f); break;
    }
}

double gad_item(gad_tensor *t) {
    if (gad__bad_tensor(t)) return (gad__bad_arg("item", t), NAN);
    if (t->numel != 1) {
        char b[GAD_SHAPE_BUF];
        gad__err(GAD_ERR_SHAPE, "item", "needs exactly one element, shape is %s",
                 gad__shape_str(b, t->shape, t->rank));
        return NAN;
    }
    if (GAD_LIKELY(t->dev == GAD_DEV_HOST)) return elem_f64(t, gad__ptr(t));
    char v[8];
    if (gad__devmem[t->dev]->to_host(v, gad__ptr(t), gad__dsize(t->dtype))) {
        gad__err(GAD_ERR_MEMORY, "item", "cannot copy from %s", gad__device_name(t->dev));
        return NAN;
    }
    return elem_f64(t, v);
}

/* Copy t's elements, row-major, converting into dst of dtype `to`. */
gad_status gad__convert(const char *op, gad_tensor *t, void *dst, size_t n,
                          int to) {
    if (gad__bad_tensor(t)) return (gad__bad_arg(op, t), gad_last_error()->kind);
    if (n < (size_t)t->numel) {
        char b[GAD_SHAPE_BUF];
        gad__err(GAD_ERR_SHAPE, op, "destination holds %zu elements, %s has %lld",
                 n, gad__shape_str(b, t->shape, t->rank), (long long)t->numel);
        return GAD_ERR_SHAPE;
    }
    if (t->numel == 0) return GAD_OK;
    if (!dst) {
        gad__err(GAD_ERR_DOMAIN, op, "destination is NULL");
        return GAD_ERR_DOMAIN;
    }
    if (t->dev != GAD_DEV_HOST) { /* a packed host copy first */
        gad_tensor *h = gad__to_dev(op, t, GAD_DEV_HOST);
        if (!h) return gad_last_error()->kind;
        gad__host_convert(h, dst, to);
        gad_release(h);
        return GAD_OK;
    }
    gad__host_convert(t, dst, to);
    return GAD_OK;
}

/* ------------------------------------------------------- converting runs */

/* A contiguous run of n elements of `from` at src converted into dst[0..n)
 * of `to`. Every pair is its own loop (convert_elem with constant dtypes
 * folds to the plain conversion, which the compiler vectorises); a half
 * on either side goes through f32 in blocks, f32 <-> half by half_vec.h's
 * vector routines. Through f32 is exact there: a half widens exactly, and
 * convert_elem rounds everything to a half from its f32 value. */
#define CONV_BLOCK 512
static void conv_run(int from, const char *src, int to, char *dst, int64_t n);

static void to_f32_run(int from, const char *src, float *y, int64_t n) {
    if (from == GAD_F16) gad__f16_to_f32_n((const uint16_t *)src, y, n);
    else if (from == GAD_BF16) gad__bf16_to_f32_n((const uint16_t *)src, y, n);
    else conv_run(from, src, GAD_F32, (char *)y, n);
}

static void from_f32_run(const float *x, int to, char *dst, int64_t n) {
    if (to == GAD_F16) gad__f32_to_f16_n(x, (uint16_t *)dst, n);
    else if (to == GAD_BF16) gad__f32_to_bf16_n(x, (uint16_t *)dst, n);
    else conv_run(GAD_F32, (const char *)x, to, dst, n);
}

#define CONV_PAIR(F, TF, T)                                                    \
    case (F) * 8 + (T):                                                        \
        for (int64_t k = 0; k < n; k++)                                        \
            convert_elem(F, src + k * (int64_t)sizeof(TF), T, dst, k);         \
        return;
#define CONV_FROM(F, TF)                                                       \
    CONV_PAIR(F, TF, GAD_F32) CONV_PAIR(F, TF, GAD_F64) CONV_PAIR(F, TF, GAD_I64) \
    CONV_PAIR(F, TF, GAD_BOOL) CONV_PAIR(F, TF, GAD_I32) CONV_PAIR(F, TF, GAD_U8)

static void conv_run(int from, const char *src, int to, char *dst, int64_t n) {
    if (from == to) {
        memcpy(dst, src, (size_t)n * gad__dsize(from));
        return;
    }
    if (gad__is_half(from) || gad__is_half(to)) {
        float buf[CONV_BLOCK];
        if (from == GAD_F32 || to == GAD_F32) { /* one vector pass */
            if (from == GAD_F32) from_f32_run((const float *)src, to, dst, n);
            else to_f32_run(from, src, (float *)dst, n);
            return;
        }
        size_t fs = gad__dsize(from), ts = gad__dsize(to);
        for (int64_t i = 0; i < n; i += CONV_BLOCK) {
            int64_t m = n - i < CONV_BLOCK ? n - i : CONV_BLOCK;
            to_f32_run(from, src + (size_t)i * fs, buf, m);
            from_f32_run(buf, to, dst + (size_t)i * ts, m);
        }
        return;
    }
    switch (from * 8 + to) {
        CONV_FROM(GAD_F32, float)
        CONV_FROM(GAD_F64, double)
        CONV_FROM(GAD_I64, int64_t)
        CONV_FROM(GAD_BOOL, uint8_t)
        CONV_FROM(GAD_I32, int32_t)
        CONV_FROM(GAD_U8, uint8_t)
    default:
        for (int64_t k = 0; k < n; k++) convert_elem(from, src + k * (int64_t)gad__dsize(from), to, dst, k);
    }
}

typedef struct conv_ctx {
    gad_iter it;
    const char *src;
    char *dst;
    int from, to;
} conv_ctx;

/* (memcpy of a constant size: one move, and no type punning between the
 * gathered bytes and conv_run's view of them) */
#define GATHER(T)                                                              \
    for (int64_t k = 0; k < m; k++)                                            \
        memcpy(g.b + k * (int64_t)sizeof(T), p + k * ss * (int64_t)sizeof(T), sizeof(T))

/* Convert the elements at row-major positions [lo, hi): contiguous runs
 * directly, strided ones gathered into a block first. */
static void conv_range(void *vctx, int64_t lo, int64_t hi) {
    conv_ctx *c = vctx;
    int64_t inner = c->it.inner, ss = c->it.strides[0][c->it.nd - 1];
    size_t fs = gad__dsize(c->from), ts = gad__dsize(c->to);
    int64_t idx[GAD_MAX_RANK], off[1];
    int64_t j = lo % inner, pos = lo;
    gad__iter_seek(&c->it, lo / inner, idx, off);
    while (pos < hi) {
        int64_t len = inner - j < hi - pos ? inner - j : hi - pos;
        const char *s = c->src + (off[0] + j * ss) * (int64_t)fs; /* strides may be < 0 */
        char *d = c->dst + (size_t)pos * ts;
        if (ss == 1) {
            conv_run(c->from, s, c->to, d, len);
        } else {
            union { double d; char b[CONV_BLOCK * 8]; } g;
            for (int64_t i = 0; i < len; i += CONV_BLOCK) {
                int64_t m = len - i < CONV_BLOCK ? len - i : CONV_BLOCK;
                const char *p = s + i * ss * (int64_t)fs;
                switch (fs) { /* a typed gather per element size */
                case 1: GATHER(uint8_t); break;
                case 2: GATHER(uint16_t); break;
                case 4: GATHER(uint32_t); break;
                default: GATHER(uint64_t); break;
                }
                conv_run(c->from, g.b, c->to, d + (size_t)i * ts, m);
            }
        }
        pos += len;
        j = 0;
        gad__iter_next(&c->it, idx, off);
    }
}

void gad__host_convert(const gad_tensor *t, void *dst, int to) {
    if (t->numel == 0) return;
    if (t->dtype == to) {
        gad__host_copy_strided(t, dst, NULL);
        return;
    }
    conv_ctx c = {.src = gad__ptr(t), .dst = dst, .from = t->dtype, .to = to};
    const int64_t *strides[1] = {t->strides};
    gad__iter_init(&c.it, t->shape, t->rank, 1, strides);
    gad__parallel_for_ew(t->numel, 1 << 15, conv_range, &c);
}

gad_status gad_read_f32(gad_tensor *t, float *dst, size_t n) {
    return gad__convert("read_f32", t, dst, n, GAD_F32);
}
gad_status gad_read_f64(gad_tensor *t, double *dst, size_t n) {
    return gad__convert("read_f64", t, dst, n, GAD_F64);
}
gad_status gad_read_i64(gad_tensor *t, int64_t *dst, size_t n) {
    return gad__convert("read_i64", t, dst, n, GAD_I64);
}
gad_status gad_read_bool(gad_tensor *t, uint8_t *dst, size_t n) {
    return gad__convert("read_bool", t, dst, n, GAD_BOOL);
}

void *gad__need_host(const char *op, const gad_tensor *t) {
    return gad__err(GAD_ERR_DEVICE, op,
                    "the tensor is on %s: its elements are not in host memory "
                    "(read them with gad_read_f32/f64/i64)",
                    gad__device_name(t->dev));
}

const void *gad_data(gad_tensor *t) {
    if (gad__bad_tensor(t)) return gad__bad_arg("data", t);
    if (t->dev != GAD_DEV_HOST) return gad__need_host("data", t);
    if (!t->contig) {
        char b[GAD_SHAPE_BUF];
        return gad__err(GAD_ERR_SHAPE, "data",
                        "tensor %s is not contiguous (use gad_contiguous)",
                        gad__shape_str(b, t->shape, t->rank));
    }
    return gad__ptr(t);
}


