/* select.c: the CPU's comparison and selection family (backend/select.h):
 * comparisons and tests writing bool masks, where, any/all over rows and
 * the matrix triangles, for every dtype, clamp by tensors for f32, f64 and
 * i64, and
 * its sub-table, which the CPU's table points to. The contiguous runs are
 * plain loops over arrays that the compiler vectorises, inlined into the
 * range functions so that their AVX2 and AVX-512 clones (GAD_CLONES)
 * vectorise them for those targets; large tensors are split over gad's
 * pool. */
#include "backend/select.h"
#include "cpu/cpu.h"
#include "iter.h"

#include <math.h>

#define P(t) gad__ptr(t)

/* Below this many elements per thread, extra threads cost more than they
 * save (as the elementwise kernels'). Compare and where split with
 * gad__parallel_for_ew: on a contended pool they stay on the caller below
 * its elements a thread (measured: config.c). Tensor clamp does not: with a
 * broadcast bound it costs about a nanosecond an element, and its split
 * gained 0.63-0.82x at 64K-128K elements even on a contended pool. */
#define SEL_GRAIN 32768

/* ------------------------------------------------------------ compare */

/* One run of n outputs: y[i] = E(x, z) with x = a[i * sa], z = b[i * sb];
 * the common layouts get loops of their own, which vectorise. */
#define CMP_LOOP(T, E)                                                         \
    do {                                                                       \
        if (sa == 1 && sb == 1) {                                              \
            for (int64_t i = 0; i < n; i++) {                                  \
                const T x = a[i], z = b[i];                                    \
                y[i] = (uint8_t)(E);                                           \
            }                                                                  \
        } else if (sa == 1 && sb == 0) {                                       \
            const T z = b[0];                                                  \
            for (int64_t i = 0; i < n; i++) {                                  \
                const T x = a[i];                                              \
                y[i] = (uint8_t)(E);                                           \
            }                                                                  \
        } else {                                                               \
            for (int64_t i = 0; i < n; i++) {                                  \
                const T x = a[i * sa], z = b[i * sb];                          \
                y[i] = (uint8_t)(E);                                           \
            }                                                                  \
        }                                                                      \
    } while (0)

#define CMP_RUN(T, NAME)                                                       \
    static GAD_ALWAYS_INLINE void NAME(gad_cmp_op op, int64_t n, const T *a, int64_t sa, \
                     const T *b, int64_t sb, uint8_t *y) {                     \
        switch (op) {                                                          \
        case GAD_CMP_EQ: CMP_LOOP(T, x == z); break;                           \
        case GAD_CMP_NE: CMP_LOOP(T, x != z); break;                           \
        case GAD_CMP_LT: CMP_LOOP(T, x < z); break;                            \
        case GAD_CMP_LE: CMP_LOOP(T, x <= z); break;                           \
        case GAD_CMP_GT: CMP_LOOP(T, x > z); break;                            \
        case GAD_CMP_GE: CMP_LOOP(T, x >= z); break;                           \
        case GAD_CMP_AND: CMP_LOOP(T, x & z); break;                           \
        case GAD_CMP_OR: CMP_LOOP(T, x | z); break;                            \
        default: CMP_LOOP(T, x ^ z); break;                                    \
        }                                                                      \
    }

/* floats have no & | ^: the logical ops come as bool (the ops convert) */
#define CMP_RUN_F(T, NAME)                                                     \
    static GAD_ALWAYS_INLINE void NAME(gad_cmp_op op, int64_t n, const T *a, int64_t sa, \
                     const T *b, int64_t sb, uint8_t *y) {                     \
        switch (op) {                                                          \
        case GAD_CMP_EQ: CMP_LOOP(T, x == z); break;                           \
        case GAD_CMP_NE: CMP_LOOP(T, x != z); break;                           \
        case GAD_CMP_LT: CMP_LOOP(T, x < z); break;                            \
        case GAD_CMP_LE: CMP_LOOP(T, x <= z); break;                           \
        case GAD_CMP_GT: CMP_LOOP(T, x > z); break;                            \
        case GAD_CMP_GE: CMP_LOOP(T, x >= z); break;                           \
        default: break;                                                        \
        }                                                                      \
    }

CMP_RUN_F(float, cmp_f32)
CMP_RUN_F(double, cmp_f64)
CMP_RUN(int64_t, cmp_i64)
CMP_RUN(uint8_t, cmp_u8)

typedef struct cmp_ctx {
    gad_iter it; /* operand 0: a, 1: b (y is packed) */
    gad_cmp_op op;
    int dtype;
    size_t es;
    const char *a, *b;
    uint8_t *y;
} cmp_ctx;

/* ---- half precision (issue 29): f16/bf16 operands compare as their
 * (exact) f32 widenings, a tile at a time; a broadcast operand (stride 0)
 * is widened once. */
#define SEL_HTILE 512
static void half_in(int dt, int64_t k, const char *x, int64_t s, float *buf, int64_t *fs) {
    gad__half_widen(dt, s ? k : 1, (const uint16_t *)x, s, buf);
    *fs = s ? 1 : 0;
}

static void cmp_half(gad_cmp_op op, int dt, int64_t n, const char *a, int64_t sa, const char *b,
                     int64_t sb, uint8_t *y) {
    _Alignas(64) float fa[SEL_HTILE], fb[SEL_HTILE];
    for (int64_t i = 0; i < n; i += SEL_HTILE) {
        int64_t k = n - i < SEL_HTILE ? n - i : SEL_HTILE, ja, jb;
        half_in(dt, k, a + i * sa * 2, sa, fa, &ja);
        half_in(dt, k, b + i * sb * 2, sb, fb, &jb);
        cmp_f32(op, k, fa, ja, fb, jb, y + i);
    }
}

GAD_CLONES static void cmp_range(void *vctx, int64_t lo, int64_t hi) {
    cmp_ctx *c = vctx;
    const gad_iter *it = &c->it;
    int64_t inner = it->inner, nd = it->nd;
    int64_t idx[GAD_MAX_RANK], off[GAD_ITER_MAXOPS];
    int64_t j = lo % inner, pos = lo;
    gad__iter_seek(it, lo / inner, idx, off);
    int64_t sa = it->strides[0][nd - 1], sb = it->strides[1][nd - 1];
    while (pos < hi) {
        int64_t len = inner - j < hi - pos ? inner - j : hi - pos;
        const char *a = c->a + (off[0] + j * sa) * (int64_t)c->es; /* strides may be < 0 */
        const char *b = c->b + (off[1] + j * sb) * (int64_t)c->es;
        uint8_t *y = c->y + pos;
        switch (c->dtype) {
        case GAD_F16:
        case GAD_BF16: cmp_half(c->op, c->dtype, len, a, sa, b, sb, y); break;
        case GAD_F32: cmp_f32(c->op, len, (const float *)a, sa, (const float *)b, sb, y); break;
        case GAD_F64: cmp_f64(c->op, len, (const double *)a, sa, (const double *)b, sb, y); break;
        case GAD_I64: cmp_i64(c->op, len, (const int64_t *)a, sa, (const int64_t *)b, sb, y); break;
        default: cmp_u8(c->op, len, (const uint8_t *)a, sa, (const uint8_t *)b, sb, y); break;
        }
        pos += len;
        j = 0;
        gad__iter_next(it, idx, off);
    }
}

static void cpu_compare(gad_cmp_op op, const gad_tensor *a, const gad_tensor *b,
                        const gad_sel_scalar *s, gad_tensor *y) {
    if (y->numel == 0) return;
    /* the scalar as one element of a's dtype, broadcast by stride 0 */
    union {
        float f;
        double d;
        int64_t i;
        uint8_t u;
        uint16_t h;
    } one;
    int64_t sa[GAD_MAX_RANK], sb[GAD_MAX_RANK];
    cmp_ctx c = {.op = op, .dtype = a->dtype, .es = gad__dsize(a->dtype), .a = P(a), .y = P(y)};
    gad__broadcast_strides(a, y->shape, y->rank, sa);
    if (b) {
        gad__broadcast_strides(b, y->shape, y->rank, sb);
        c.b = P(b);
    } else {
        if (a->dtype == GAD_F32) one.f = (float)s->f;
        else if (a->dtype == GAD_F64) one.d = s->f;
        else if (gad__is_half(a->dtype)) gad__half_put(a->dtype, &one.h, (float)s->f);
        else if (a->dtype == GAD_I64) one.i = s->i;
        else one.u = (uint8_t)s->i; /* a bool op with a bool scalar: 0 or 1 */
        for (int d = 0; d < y->rank; d++) sb[d] = 0;
        c.b = (const char *)&one;
    }
    const int64_t *strides[2] = {sa, sb};
    gad__iter_init(&c.it, y->shape, y->rank, 2, strides);
    gad__parallel_for_ew(y->numel, SEL_GRAIN, cmp_range, &c);
}

/* --------------------------------------------------------------- test */

#define TEST_LOOP(T, E)                                                        \
    do {                                                                       \
        if (sx == 1)                                                           \
            for (int64_t i = 0; i < n; i++) {                                  \
                const T x = p[i];                                              \
                y[i] = (uint8_t)(E);                                           \
            }                                                                  \
        else                                                                   \
            for (int64_t i = 0; i < n; i++) {                                  \
                const T x = p[i * sx];                                         \
                y[i] = (uint8_t)(E);                                           \
            }                                                                  \
    } while (0)

/* isnan by x != x, isinf by |x| == inf: compare forms that vectorise */
#define TEST_RUN_F(T, NAME, INF)                                               \
    static GAD_ALWAYS_INLINE void NAME(gad_test_op op, int64_t n, const T *p, int64_t sx, \
                                       uint8_t *y) {                           \
        switch (op) {                                                          \
        case GAD_TEST_NONZERO: TEST_LOOP(T, x != 0); break;                    \
        case GAD_TEST_ZERO: TEST_LOOP(T, x == 0); break;                       \
        case GAD_TEST_ISNAN: TEST_LOOP(T, x != x); break;                      \
        case GAD_TEST_ISINF: TEST_LOOP(T, (x < 0 ? -x : x) == INF); break;     \
        default: TEST_LOOP(T, (x < 0 ? -x : x) < INF); break;                  \
        }                                                                      \
    }
#define TEST_RUN_I(T, NAME)                                                    \
    static GAD_ALWAYS_INLINE void NAME(gad_test_op op, int64_t n, const T *p, int64_t sx, \
                                       uint8_t *y) {                           \
        switch (op) {                                                          \
        case GAD_TEST_NONZERO: TEST_LOOP(T, x != 0); break;                    \
        case GAD_TEST_ZERO: TEST_LOOP(T, x == 0); break;                       \
        case GAD_TEST_ISFINITE: memset(y, 1, (size_t)n); break;                \
        default: memset(y, 0, (size_t)n); break; /* never NaN nor inf */       \
        }                                                                      \
    }

TEST_RUN_F(float, test_f32, INFINITY)
TEST_RUN_F(double, test_f64, (double)INFINITY)
TEST_RUN_I(int64_t, test_i64)
TEST_RUN_I(uint8_t, test_u8)

typedef struct test_ctx {
    gad_iter it;
    gad_test_op op;
    int dtype;
    size_t es;
    const char *x;
    uint8_t *y;
} test_ctx;

GAD_CLONES /* half: the f32 tests of the widened values */
static void test_half(gad_test_op op, int dt, int64_t n, const char *x, int64_t sx, uint8_t *y) {
    _Alignas(64) float f[SEL_HTILE];
    for (int64_t i = 0; i < n; i += SEL_HTILE) {
        int64_t k = n - i < SEL_HTILE ? n - i : SEL_HTILE, j;
        half_in(dt, k, x + i * sx * 2, sx, f, &j);
        if (j) test_f32(op, k, f, 1, y + i);
        else test_f32(op, k, f, 0, y + i);
    }
}

static void test_range(void *vctx, int64_t lo, int64_t hi) {
    test_ctx *c = vctx;
    const gad_iter *it = &c->it;
    int64_t inner = it->inner, nd = it->nd;
    int64_t idx[GAD_MAX_RANK], off[GAD_ITER_MAXOPS];
    int64_t j = lo % inner, pos = lo;
    gad__iter_seek(it, lo / inner, idx, off);
    int64_t sx = it->strides[0][nd - 1];
    while (pos < hi) {
        int64_t len = inner - j < hi - pos ? inner - j : hi - pos;
        const char *x = c->x + (off[0] + j * sx) * (int64_t)c->es;
        uint8_t *y = c->y + pos;
        switch (c->dtype) {
        case GAD_F16:
        case GAD_BF16: test_half(c->op, c->dtype, len, x, sx, y); break;
        case GAD_F32: test_f32(c->op, len, (const float *)x, sx, y); break;
        case GAD_F64: test_f64(c->op, len, (const double *)x, sx, y); break;
        case GAD_I64: test_i64(c->op, len, (const int64_t *)x, sx, y); break;
        default: test_u8(c->op, len, (const uint8_t *)x, sx, y); break;
        }
        pos += len;
        j = 0;
        gad__iter_next(it, idx, off);
    }
}

static void cpu_test(gad_test_op op, const gad_tensor *x, gad_tensor *y) {
    if (y->numel == 0) return;
    test_ctx c = {.op = op, .dtype = x->dtype, .es = gad__dsize(x->dtype), .x = P(x), .y = P(y)};
    const int64_t *strides[1] = {x->strides};
    gad__iter_init(&c.it, x->shape, x->rank, 1, strides);
    gad__parallel_for(y->numel, SEL_GRAIN, test_range, &c);
}

/* -------------------------------------------------------------- where */

/* y[i] = c[i] ? a : b, moving elements as bits of their size (no float
 * arithmetic: NaN payloads and -0 pass unchanged); the contiguous run is
 * a select the compiler turns into vector blends. */
#define WHERE_RUN(T, NAME)                                                     \
    static GAD_ALWAYS_INLINE void NAME(int64_t n, const uint8_t *c, int64_t sc, const T *a, \
                                       int64_t sa,                             \
                     const T *b, int64_t sb, T *y) {                           \
        if (sc == 1 && sa == 1 && sb == 1) {                                   \
            for (int64_t i = 0; i < n; i++) y[i] = c[i] ? a[i] : b[i];         \
        } else if (sc == 1 && sa == 1 && sb == 0) {                            \
            const T z = b[0];                                                  \
            for (int64_t i = 0; i < n; i++) y[i] = c[i] ? a[i] : z;            \
        } else if (sc == 1 && sa == 0 && sb == 1) {                            \
            const T z = a[0];                                                  \
            for (int64_t i = 0; i < n; i++) y[i] = c[i] ? z : b[i];            \
        } else {                                                               \
            for (int64_t i = 0; i < n; i++)                                    \
                y[i] = c[i * sc] ? a[i * sa] : b[i * sb];                      \
        }                                                                      \
    }

WHERE_RUN(uint8_t, where_1)
WHERE_RUN(uint16_t, where_2)
WHERE_RUN(uint32_t, where_4)
WHERE_RUN(uint64_t, where_8)

typedef struct where_ctx {
    gad_iter it; /* operands c, a, b */
    size_t es;
    const uint8_t *c;
    const char *a, *b;
    char *y;
} where_ctx;

GAD_CLONES static void where_range(void *vctx, int64_t lo, int64_t hi) {
    where_ctx *w = vctx;
    const gad_iter *it = &w->it;
    int64_t inner = it->inner, nd = it->nd, es = (int64_t)w->es;
    int64_t idx[GAD_MAX_RANK], off[GAD_ITER_MAXOPS];
    int64_t j = lo % inner, pos = lo;
    gad__iter_seek(it, lo / inner, idx, off);
    int64_t sc = it->strides[0][nd - 1], sa = it->strides[1][nd - 1],
            sb = it->strides[2][nd - 1];
    while (pos < hi) {
        int64_t len = inner - j < hi - pos ? inner - j : hi - pos;
        const uint8_t *c = w->c + off[0] + j * sc;
        const char *a = w->a + (off[1] + j * sa) * es, *b = w->b + (off[2] + j * sb) * es;
        char *y = w->y + pos * es;
        if (es == 4)
            where_4(len, c, sc, (const uint32_t *)a, sa, (const uint32_t *)b, sb, (uint32_t *)y);
        else if (es == 2)
            where_2(len, c, sc, (const uint16_t *)a, sa, (const uint16_t *)b, sb, (uint16_t *)y);
        else if (es == 8)
            where_8(len, c, sc, (const uint64_t *)a, sa, (const uint64_t *)b, sb, (uint64_t *)y);
        else
            where_1(len, c, sc, (const uint8_t *)a, sa, (const uint8_t *)b, sb, (uint8_t *)y);
        pos += len;
        j = 0;
        gad__iter_next(it, idx, off);
    }
}

static void cpu_where(const gad_tensor *c, const gad_tensor *a, const gad_tensor *b,
                      const void *s, gad_tensor *y) {
    if (y->numel == 0) return;
    int64_t sc[GAD_MAX_RANK], sa[GAD_MAX_RANK], sb[GAD_MAX_RANK];
    where_ctx w = {.es = gad__dsize(y->dtype), .c = P(c), .y = P(y)};
    gad__broadcast_strides(c, y->shape, y->rank, sc);
    if (a) gad__broadcast_strides(a, y->shape, y->rank, sa);
    else memset(sa, 0, sizeof sa);
    if (b) gad__broadcast_strides(b, y->shape, y->rank, sb);
    else memset(sb, 0, sizeof sb);
    w.a = a ? (const char *)P(a) : (const char *)s;
    w.b = b ? (const char *)P(b) : (const char *)s;
    const int64_t *strides[3] = {sc, sa, sb};
    gad__iter_init(&w.it, y->shape, y->rank, 3, strides);
    gad__parallel_for_ew(y->numel, SEL_GRAIN, where_range, &w);
}

/* ---------------------------------------------------------------- any */

typedef struct any_ctx {
    const uint8_t *x;
    uint8_t *y;
    int64_t len; /* of a row */
    int all;
    uint8_t *part; /* one row split in chunks: each chunk's answer */
    int64_t chunk;
} any_ctx;

/* Whether p[0..n) holds a byte equal to v (memchr: the C library's
 * vectorised search). */
static int has_byte(const uint8_t *p, int64_t n, int v) {
    return n > 0 && memchr(p, v, (size_t)n) != NULL;
}

static void any_rows(void *vctx, int64_t lo, int64_t hi) {
    any_ctx *c = vctx;
    for (int64_t r = lo; r < hi; r++) {
        const uint8_t *p = c->x + r * c->len;
        c->y[r] = (uint8_t)(c->all ? !has_byte(p, c->len, 0) : has_byte(p, c->len, 1));
    }
}

static void any_chunks(void *vctx, int64_t lo, int64_t hi) {
    any_ctx *c = vctx;
    for (int64_t k = lo; k < hi; k++) {
        int64_t a = k * c->chunk, n = c->len - a < c->chunk ? c->len - a : c->chunk;
        c->part[k] = (uint8_t)has_byte(c->x + a, n, c->all ? 0 : 1);
    }
}

static void cpu_any(const gad_tensor *x, int all, gad_tensor *y) {
    int64_t rows = y->numel;
    if (rows == 0) return;
    any_ctx c = {.x = P(x), .y = P(y), .len = x->numel / rows, .all = all};
    if (rows > 1 || c.len < 4 * SEL_GRAIN) {
        gad__parallel_for(rows, (SEL_GRAIN + c.len) / (c.len + 1), any_rows, &c);
        return;
    }
    /* one long row: its chunks in parallel, their answers combined */
    enum { NCHUNK = 64 };
    uint8_t part[NCHUNK];
    c.part = part;
    c.chunk = (c.len + NCHUNK - 1) / NCHUNK;
    int64_t nk = (c.len + c.chunk - 1) / c.chunk;
    gad__parallel_for(nk, 1, any_chunks, &c);
    int found = has_byte(part, nk, 1);
    *(uint8_t *)P(y) = (uint8_t)(all ? !found : found);
}

/* ---------------------------------------------------------------- tri */

typedef struct tri_ctx {
    char *y;
    int64_t rows, cols, diag;
    size_t es;
    int upper;
} tri_ctx;

/* Zero what lies outside the band in rows [lo, hi) of the stacked
 * matrices (row r is row r % rows of its matrix). */
static void tri_range(void *vctx, int64_t lo, int64_t hi) {
    tri_ctx *c = vctx;
    for (int64_t r = lo; r < hi; r++) {
        int64_t i = r % c->rows;
        char *row = c->y + (size_t)(r * c->cols) * c->es;
        /* kept: j <= i + diag (tril), j >= i + diag (triu), within [0, cols] */
        int64_t edge = i + c->diag + (c->upper ? 0 : 1);
        edge = edge < 0 ? 0 : edge > c->cols ? c->cols : edge;
        if (c->upper) memset(row, 0, (size_t)edge * c->es);
        else memset(row + (size_t)edge * c->es, 0, (size_t)(c->cols - edge) * c->es);
    }
}

static void cpu_tri(const gad_tensor *x, int64_t diag, int upper, gad_tensor *y) {
    if (y->numel == 0) return;
    gad__host_copy_strided(x, P(y), NULL); /* packed, in parallel */
    tri_ctx c = {.y = P(y), .rows = y->shape[y->rank - 2], .cols = y->shape[y->rank - 1],
                 .diag = diag, .es = gad__dsize(y->dtype), .upper = upper};
    int64_t nrows = y->numel / c.cols;
    gad__parallel_for(nrows, (SEL_GRAIN + c.cols) / (c.cols + 1), tri_range, &c);
}

/* -------------------------------------------------------------- clamp */

/* max then min with a NaN on either side winning, as gad's maximum and
 * minimum rows: written as four plain selects, which become vector blends
 * (with (a > l || a != a) ? a : l GCC kept branches, mispredicted on most
 * data: 10x slower). */
#define CLAMP_ONE(T, X, L, H, OUT)                                             \
    do {                                                                       \
        const T a_ = (X), l_ = (L), h_ = (H);                                  \
        T m_ = a_ > l_ ? a_ : l_;                                              \
        m_ = a_ != a_ ? a_ : m_;                                               \
        const T r_ = m_ < h_ ? m_ : h_;                                        \
        (OUT) = m_ != m_ ? m_ : r_;                                            \
    } while (0)
#define CLAMP_RUN(T, NAME)                                                     \
    static GAD_ALWAYS_INLINE void NAME(int64_t n, const T *x, int64_t sx,      \
                                       const T *lo, int64_t sl, const T *hi,   \
                                       int64_t sh, T *y) {                     \
        if (sx == 1 && sl == 1 && sh == 1) {                                   \
            for (int64_t i = 0; i < n; i++)                                    \
                CLAMP_ONE(T, x[i], lo[i], hi[i], y[i]);                        \
        } else if (sx == 1 && sl == 0 && sh == 0) {                            \
            const T l = lo[0], h = hi[0];                                      \
            for (int64_t i = 0; i < n; i++) CLAMP_ONE(T, x[i], l, h, y[i]);    \
        } else {                                                               \
            for (int64_t i = 0; i < n; i++)                                    \
                CLAMP_ONE(T, x[i * sx], lo[i * sl], hi[i * sh], y[i]);         \
        }                                                                      \
    }

/* integers: no NaN, the plain max then min */
#define CLAMP_ONE_I(T, X, L, H, OUT)                                           \
    do {                                                                       \
        const T a_ = (X), l_ = (L), h_ = (H);                                  \
        const T m_ = a_ > l_ ? a_ : l_;                                        \
        (OUT) = m_ < h_ ? m_ : h_;                                             \
    } while (0)

CLAMP_RUN(float, clamp_f32)
CLAMP_RUN(double, clamp_f64)
#undef CLAMP_ONE
#define CLAMP_ONE CLAMP_ONE_I
CLAMP_RUN(int64_t, clamp_i64)

typedef struct clamp_ctx {
    gad_iter it; /* operands x, lo, hi */
    int dtype;
    const char *x, *lo, *hi;
    char *y;
} clamp_ctx;

GAD_CLONES static void clamp_range(void *vctx, int64_t lo, int64_t hi) {
    clamp_ctx *c = vctx;
    const gad_iter *it = &c->it;
    int64_t inner = it->inner, nd = it->nd, es = c->dtype == GAD_F32 ? 4 : 8;
    int64_t idx[GAD_MAX_RANK], off[GAD_ITER_MAXOPS];
    int64_t j = lo % inner, pos = lo;
    gad__iter_seek(it, lo / inner, idx, off);
    int64_t sx = it->strides[0][nd - 1], sl = it->strides[1][nd - 1],
            sh = it->strides[2][nd - 1];
    while (pos < hi) {
        int64_t len = inner - j < hi - pos ? inner - j : hi - pos;
        const char *x = c->x + (off[0] + j * sx) * es, *l = c->lo + (off[1] + j * sl) * es,
                   *h = c->hi + (off[2] + j * sh) * es;
        if (c->dtype == GAD_F32)
            clamp_f32(len, (const float *)x, sx, (const float *)l, sl, (const float *)h, sh,
                      (float *)c->y + pos);
        else if (c->dtype == GAD_F64)
            clamp_f64(len, (const double *)x, sx, (const double *)l, sl, (const double *)h,
                      sh, (double *)c->y + pos);
        else
            clamp_i64(len, (const int64_t *)x, sx, (const int64_t *)l, sl, (const int64_t *)h,
                      sh, (int64_t *)c->y + pos);
        pos += len;
        j = 0;
        gad__iter_next(it, idx, off);
    }
}

static void cpu_clamp(const gad_tensor *x, const gad_tensor *lo, const gad_tensor *hi,
                      gad_tensor *y) {
    if (y->numel == 0) return;
    /* a missing bound is an infinite one (i64: the extreme), broadcast
     * (stride 0) */
    static const float inf32[2] = {-INFINITY, INFINITY};
    static const double inf64[2] = {-INFINITY, INFINITY};
    static const int64_t ext64[2] = {INT64_MIN, INT64_MAX};
    int dt = y->dtype;
    const char *none = dt == GAD_F32   ? (const char *)inf32
                       : dt == GAD_F64 ? (const char *)inf64
                                       : (const char *)ext64;
    size_t es = gad__dsize(dt);
    clamp_ctx c = {.dtype = dt, .x = P(x), .y = P(y)};
    int64_t sx[GAD_MAX_RANK], sl[GAD_MAX_RANK] = {0}, sh[GAD_MAX_RANK] = {0};
    gad__broadcast_strides(x, y->shape, y->rank, sx);
    if (lo) gad__broadcast_strides(lo, y->shape, y->rank, sl);
    if (hi) gad__broadcast_strides(hi, y->shape, y->rank, sh);
    c.lo = lo ? (const char *)P(lo) : none;
    c.hi = hi ? (const char *)P(hi) : none + es;
    const int64_t *strides[3] = {sx, sl, sh};
    gad__iter_init(&c.it, y->shape, y->rank, 3, strides);
    gad__parallel_for(y->numel, SEL_GRAIN, clamp_range, &c);
}

const gad_be_select gad__cpu_select = {
    .compare = cpu_compare,
    .test = cpu_test,
    .where = cpu_where,
    .any = cpu_any,
    .tri = cpu_tri,
    .clamp = cpu_clamp,
};
