/* fuzz_ops.c: the op-graph fuzzer (libFuzzer entry point).
 *
 * The input is a small program for a byte-code interpreter: a 3-byte header
 * (flags, more flags, a seed), then up to MAX_STEPS instructions. Each
 * instruction is an opcode byte followed by the bytes its op reads (operands,
 * axes, shapes, values, data); a read past the end gives 0, so every input is
 * a valid program. The result of step k goes to register k; an operand byte b
 * names register (last - b % count) (0 is the latest result), and 0xFF is a
 * NULL operand. Many ops can also build a well-shaped auxiliary operand
 * ("aux": indices in range, a matching weight), so that deep valid programs
 * are common. After the steps, a scalar loss is built from the results that
 * are on the tape and the program's leaves are differentiated: gad_grad, and
 * depending on the flags gad_backward, GAD_CREATE_GRAPH, gad_hvp, gad_jvp and
 * an optimizer step.
 *
 * The invariants (a violation calls abort(), which libFuzzer reports):
 *  - no crash and no sanitizer report;
 *  - a NULL result (or a failed gad_status) comes with gad_last_error() set,
 *    its kind in [GAD_ERR_SHAPE, GAD_ERR_FORMAT] (and equal to the returned
 *    status), a non-empty op and message; a tensor result comes with no
 *    error pending and has a sane dtype, rank, shape and numel, and its data
 *    can be read;
 *  - gradients have their leaf's shape and dtype; after gad_grad the leaf
 *    slots hold the same values; gad_backward gives bit-identical values and
 *    a second gad_backward exactly doubles them;
 *  - smooth mode (flag bit 0): data clamped to [-3, 3], only smooth or
 *    piecewise-linear ops with finite derivatives, eps > 0; when every value
 *    computed on the way is finite and moderate (|v| <= 1e4), every gradient
 *    (first order, second order, hvp, jvp) is finite;
 *  - the whole program runs twice, with gad_set_num_threads(1) and (2): every
 *    result, error message and gradient is bit-identical;
 *  - each run happens inside gad_scope_begin/end and leaves no live tensor
 *    or storage behind, and no no-grad mode or scope open;
 *  - threaded mode (flag bit 4 of byte 1): the program runs at once on 2
 *    to 4 threads (bits 5-6 of byte 1 choose how many), whose first
 *    registers are that thread's snapshots (gad_detach) of constant tensors
 *    made by the main thread, all sharing their storage: every thread gets
 *    bit-identical results, and the constants keep their values. Under
 *    ThreadSanitizer this checks that ops over shared read-only inputs
 *    (views, copy-on-write, the worker pool used by several callers) race
 *    on nothing.
 *
 * Sizes are bounded (SMALL_CAP elements for ordinary tensors, BIG_CAP for
 * the "big" constructor that reaches the multithreaded kernels, OUT_CAP for
 * any op result) so that one input runs in milliseconds. */
#include "gad.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NREG 16
#define MAX_STEPS NREG
#define SMALL_CAP 4096
#define BIG_CAP (1 << 17)
#define OUT_CAP (1 << 19)
#define WORK_CAP ((int64_t)1 << 24) /* multiply-adds of one matmul */
#define MAX_LEAVES 40
#define MAX_REC 1024
#define MODERATE 1e4

/* Header flags (byte 0). */
#define F_SMOOTH 0x01u
#define F_BACKWARD 0x02u
#define F_CREATE_GRAPH 0x04u
#define F_HVP 0x08u
#define F_JVP 0x10u
#define F_OPTIM 0x20u
#define F_ANOMALY 0x40u
#define F_LOSS_LAST 0x80u
/* Header flags (byte 1). */
#define F2_NONLEAF_INPUT 0x01u
#define F2_CACHE_OFF 0x02u
#define F2_CLIP 0x04u
#define F2_SEEDED_GRAD 0x08u
#define F2_THREADED 0x10u
/* half mode (issue 29): every op reads its f32 registers as bf16 (with
 * F2_F16 and not smooth: f16) and its half result goes back to the
 * register as f32, so that the half kernels, their VJPs and the casts
 * between run under every invariant, threads included */
#define F2_HALF 0x20u
#define F2_F16 0x40u
#define NSHARED 4 /* the shared constants of threaded mode */

#define FUZZ_NAME "fuzz_ops"
#include "fuzz_fail.h"

/* ======================================================================== */
/* Input reader, records, hashing                                            */
/* ======================================================================== */

typedef struct rd {
    const uint8_t *p;
    size_t n, i;
} rd;

static unsigned u8(rd *r) { return r->i < r->n ? r->p[r->i++] : 0u; }

typedef struct rec {
    const char *label;
    int step;
    uint64_t h;
} rec;

typedef struct prog {
    rd in;
    unsigned flags, flags2;
    int smooth;
    gad_dtype_t half; /* F2_HALF: the dtype ops read f32 registers as; else GAD_F32 */
    int unsure;  /* smooth mode: a value on the way was not finite/moderate */
    int orders;  /* differentiable gradients taken mid-program (midgrad) */
    int nsteps;
    gad_tensor *reg[NREG];
    gad_tensor *leaves[MAX_LEAVES]; /* retained */
    int nleaves;
    gad_rng *rng;
    unsigned seed;
    int nograd;  /* no-grad levels the program opened */
    int skip;    /* the current op made no tensor to check */
    int aux_failed; /* an operand the harness draws itself could not be made */
    int huge;    /* a shape had a valid huge dim: memory errors can happen */
    unsigned naux; /* auxiliary tensors made so far (their seeds) */
    const char *op;
    rec recs[MAX_REC];
    int nrec;
} prog;

/* Loops over every element (hashing, value checks) are left out of the
 * coverage instrumentation: libFuzzer learns nothing from them. */
#if defined(__clang__)
#define NO_COVERAGE __attribute__((no_sanitize("coverage")))
#else
#define NO_COVERAGE
#endif

NO_COVERAGE static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v;
    h *= 0x100000001b3ULL;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 32);
}

NO_COVERAGE static uint64_t hash_bytes(uint64_t h, const void *d, size_t n) {
    const unsigned char *c = d;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, c + i, 8);
        h = mix(h, v);
    }
    uint64_t t = 0;
    for (; i < n; i++) t = t << 8 | c[i];
    return mix(h, t ^ n);
}

static uint64_t hash_str(uint64_t h, const char *s) {
    return hash_bytes(h, s, strlen(s));
}

static void record(prog *p, const char *label, uint64_t h) {
    if (p->nrec < MAX_REC) p->recs[p->nrec++] = (rec){label, p->nsteps, h};
}

/* FUZZ_OPS_TRACE=1 in the environment prints what each step made (in the
 * 1-thread run): for writing seeds and reading reproducers. */
static int trace;
static _Thread_local int tracing;

static void trace_result(int step, const char *label, gad_tensor *t, int skipped) {
    if (!tracing) return;
    fprintf(stderr, "  %2d %-14s ", step, label);
    if (skipped) {
        fputs("(no tensor)\n", stderr);
    } else if (!t) {
        const gad_error *e = gad_last_error();
        fprintf(stderr, "NULL: %s\n", e ? e->text : "(no error!)");
    } else {
        fprintf(stderr, "%s [", gad_dtype_name(gad_dtype(t)));
        for (int i = 0; i < gad_rank(t); i++)
            fprintf(stderr, i ? ",%lld" : "%lld", (long long)gad_shape(t)[i]);
        fprintf(stderr, "]%s%s\n", gad_is_leaf(t) ? " leaf" : "",
                gad_is_tracked(t) && !gad_is_leaf(t) ? " tracked" : "");
    }
}

/* ======================================================================== */
/* Checks                                                                    */
/* ======================================================================== */

/* The program being run (for check_error). */
static _Thread_local const prog *cur;

/* The pending error after a failure of `what`: it must be well formed. A
 * memory error is one only when the program made a tensor with a huge dim
 * (an empty one, whose reductions or views can ask for 2^59 elements). */
static const gad_error *check_error(const char *what) {
    const gad_error *e = check_error_recorded(what);
    if (e->kind == GAD_ERR_MEMORY && !cur->huge)
        fail("%s: memory error on a bounded program: %s", what, e->text);
    return e;
}

static uint64_t hash_error(uint64_t h, const gad_error *e) {
    h = mix(h, (uint64_t)e->kind);
    h = hash_str(h, e->op);
    return hash_str(h, e->message);
}

/* A status returned by `what`: GAD_OK with no error pending, or the kind of
 * a well-formed pending error. Returns a hash of the outcome. */
static uint64_t check_status(gad_status st, const char *what) {
    if (st == GAD_OK) {
        const gad_error *e = gad_last_error();
        if (e) fail("%s returned GAD_OK with an error pending: %s", what, e->text);
        return 1;
    }
    const gad_error *e = check_error(what);
    if (e->kind != st)
        fail("%s returned %s but recorded %s", what, gad_status_str(st),
             gad_status_str(e->kind));
    return hash_error(2, e);
}

static int is_float(gad_dtype_t d) { return d == GAD_F32 || d == GAD_F64; }
static int is_half(gad_dtype_t d) { return d == GAD_F16 || d == GAD_BF16; }

/* 1 if every element of a float tensor is finite and |v| <= bound. */
NO_COVERAGE static int values_ok(gad_tensor *t, double bound) {
    if (t && is_half(gad_dtype(t))) { /* exactly, as f32 */
        gad_no_grad_begin();
        t = gad_cast(t, GAD_F32);
        gad_no_grad_end();
        if (!t) fail("cannot widen a half tensor: %s", gad_last_error()->text);
    }
    gad_dtype_t d = gad_dtype(t);
    int64_t n = gad_numel(t);
    if (!is_float(d) || n == 0) return 1;
    gad_tensor *c = gad_contiguous(t);
    const void *data = c ? gad_data(c) : NULL;
    if (!data) fail("cannot read the values of a %s tensor", gad_dtype_name(d));
    for (int64_t i = 0; i < n; i++) {
        double v = d == GAD_F32 ? (double)((const float *)data)[i]
                                : ((const double *)data)[i];
        if (!isfinite(v) || fabs(v) > bound) return 0;
    }
    return 1;
}

/* Check a tensor result of `what` and return a hash of it (dtype, shape,
 * raw data) or of its error. */
static uint64_t check_tensor(prog *p, gad_tensor *t, const char *what) {
    uint64_t h = 0x5eed;
    if (!t) return hash_error(h, check_error(what));
    const gad_error *e = gad_last_error();
    if (e) fail("%s returned a tensor with an error pending: %s", what, e->text);
    int rank = gad_rank(t);
    gad_dtype_t dt = gad_dtype(t);
    if (rank < 0 || rank > GAD_MAX_RANK) fail("%s: rank %d", what, rank);
    if (dt != GAD_F32 && dt != GAD_F64 && dt != GAD_I64 && dt != GAD_BOOL &&
        !(p && p->half != GAD_F32 && dt == p->half))
        fail("%s: dtype %d", what, (int)dt);
    const int64_t *shape = gad_shape(t);
    if (rank > 0 && (!shape || !gad_strides(t))) fail("%s: no shape or strides", what);
    int64_t n = 1;
    int zero = 0, over = 0;
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0) fail("%s: negative dim %lld", what, (long long)shape[i]);
        if (shape[i] == 0) zero = 1;
        else if (n > (INT64_MAX / 8) / shape[i]) over = 1;
        else n *= shape[i];
    }
    if (zero) n = 0;
    else if (over) fail("%s: a tensor whose element count overflows", what);
    if (gad_numel(t) != n)
        fail("%s: numel %lld but the shape holds %lld", what,
             (long long)gad_numel(t), (long long)n);
    if (n > (int64_t)OUT_CAP * 4)
        fail("%s: %lld elements, more than the program can make", what, (long long)n);
    h = mix(h, (uint64_t)dt);
    h = mix(h, (uint64_t)rank);
    for (int i = 0; i < rank; i++) h = mix(h, (uint64_t)shape[i]);
    gad_tensor *c = gad_contiguous(t);
    if (!c) fail("%s: gad_contiguous failed: %s", what,
                 gad_last_error() ? gad_last_error()->text : "(no error)");
    if (!gad_is_contiguous(c)) fail("%s: gad_contiguous gave a strided tensor", what);
    const void *data = gad_data(c);
    if (!data && n > 0) fail("%s: gad_data is NULL", what);
    if (gad_last_error()) fail("%s: reading the result recorded an error", what);
    if (n > 0) h = hash_bytes(h, data, (size_t)n * gad_dtype_size(dt));
    for (int64_t i = 0; dt == GAD_BOOL && i < n; i++) /* a bool is 0 or 1 */
        if (((const uint8_t *)data)[i] > 1)
            fail("%s: bool element %lld holds %u", what, (long long)i,
                 ((const uint8_t *)data)[i]);
    if (p && p->smooth && !values_ok(t, MODERATE)) p->unsure = 1;
    return h;
}

/* Bit-exact equality of two tensors of the same dtype and shape, NaN equal
 * to NaN only bit for bit. */
NO_COVERAGE static int same_values(gad_tensor *a, gad_tensor *b, int twice) {
    int64_t n = gad_numel(a);
    if (gad_numel(b) != n || gad_dtype(a) != gad_dtype(b)) return 0;
    if (n == 0) return 1;
    if (is_half(gad_dtype(a))) { /* 2a rounded once (to Inf past the range), then the bits */
        uint16_t ex = gad_dtype(a) == GAD_F16 ? 0x7c00 : 0x7f80;
        if (twice) {
            gad_no_grad_begin();
            a = gad_mul_scalar(a, 2);
            gad_no_grad_end();
        }
        gad_tensor *ca = a ? gad_contiguous(a) : NULL, *cb = gad_contiguous(b);
        const uint16_t *x = ca ? gad_data(ca) : NULL, *y = cb ? gad_data(cb) : NULL;
        if (!x || !y) return 0;
        for (int64_t i = 0; i < n; i++) {
            int nx = (x[i] & ex) == ex && (x[i] & (uint16_t)~(ex | 0x8000)),
                ny = (y[i] & ex) == ex && (y[i] & (uint16_t)~(ex | 0x8000));
            if (nx && ny) continue;
            if (x[i] != y[i]) return 0;
        }
        return 1;
    }
    gad_tensor *ca = gad_contiguous(a), *cb = gad_contiguous(b);
    const void *da = gad_data(ca), *db = gad_data(cb);
    if (!da || !db) return 0;
    if (gad_dtype(a) == GAD_F32) {
        for (int64_t i = 0; i < n; i++) {
            float x = ((const float *)da)[i], y = ((const float *)db)[i];
            if (twice) x = x + x;
            if (isnan(x) && isnan(y)) continue;
            if (memcmp(&x, &y, sizeof x) != 0) return 0;
        }
    } else {
        for (int64_t i = 0; i < n; i++) {
            double x = ((const double *)da)[i], y = ((const double *)db)[i];
            if (twice) x = x + x;
            if (isnan(x) && isnan(y)) continue;
            if (memcmp(&x, &y, sizeof x) != 0) return 0;
        }
    }
    return 1;
}

NO_COVERAGE /* a and b (same dtype and shape) agree to rounding: every pair of finite
 * elements within tol * max(1, max |a|); non-finite elements are skipped.
 * Returns the index of the first disagreement, or -1. */
NO_COVERAGE static int64_t close_values(gad_tensor *a, gad_tensor *b, double tol) {
    int64_t n = gad_numel(a);
    if (n == 0) return -1;
    gad_tensor *ca = gad_contiguous(gad_cast(a, GAD_F64));
    gad_tensor *cb = gad_contiguous(gad_cast(b, GAD_F64));
    const double *x = gad_data(ca), *y = gad_data(cb);
    if (!x || !y) fail("close_values: cannot read the values");
    double scale = 1;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(x[i]) && fabs(x[i]) > scale) scale = fabs(x[i]);
    for (int64_t i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i]) && fabs(x[i] - y[i]) > tol * scale) return i;
    return -1;
}

static int all_zero(gad_tensor *t) {
    int64_t n = gad_numel(t);
    gad_tensor *c = gad_contiguous(t);
    const void *d = n ? gad_data(c) : NULL;
    for (int64_t i = 0; i < n; i++) {
        if (is_half(gad_dtype(t))) { /* +0 or -0: no bits but the sign */
            if (((const uint16_t *)d)[i] & 0x7fff) return 0;
            continue;
        }
        double v = gad_dtype(t) == GAD_F32 ? (double)((const float *)d)[i]
                                           : ((const double *)d)[i];
        if (v != 0) return 0;
    }
    return 1;
}

static int same_shape(gad_tensor *a, gad_tensor *b) {
    if (gad_rank(a) != gad_rank(b)) return 0;
    for (int i = 0; i < gad_rank(a); i++)
        if (gad_shape(a)[i] != gad_shape(b)[i]) return 0;
    return 1;
}

/* ======================================================================== */
/* Operand readers                                                           */
/* ======================================================================== */

static gad_tensor *arg(prog *p) {
    unsigned b = u8(&p->in);
    if (b == 0xFF || p->nsteps == 0) return NULL;
    gad_tensor *t = p->reg[p->nsteps - 1 - (int)(b % (unsigned)p->nsteps)];
    if (t && p->half != GAD_F32 && gad_dtype(t) == GAD_F32) t = gad_cast(t, p->half);
    return t;
}

static gad_dtype_t dtype_of(prog *p) {
    unsigned b = u8(&p->in);
    if (b == 0xFF) return GAD_DTYPE_INVALID;
    if (b == 0xFE) return (gad_dtype_t)8; /* one past the last */
    return (gad_dtype_t)(b % 3);
}

static gad_dtype_t float_dtype_of(prog *p) {
    return (u8(&p->in) & 1) ? GAD_F64 : GAD_F32;
}

static int axis_of(prog *p, int rank) {
    static const int bad[16] = {INT_MIN, INT_MAX, 8, -9, 100, -100, 9, -8,
                                4, -5, 5, -6, INT_MIN + 1, 1 << 30, 3, -4};
    unsigned b = u8(&p->in);
    if (b < 0xF0) {
        if (rank <= 0) return (b & 1) ? -1 : 0;
        int a = (int)(b % (unsigned)rank);
        return (b & 0x80) ? a - rank : a;
    }
    return bad[b & 15];
}

static const int64_t small_dims[16] = {1, 2, 3, 4, 0, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 16};
static const int64_t wide_dims[32] = {9,   10,  11,  12,  13,  15,  17,  24,
                                      31,  32,  33,  47,  48,  49,  63,  64,
                                      65,  96,  100, 127, 128, 129, 200, 255,
                                      256, 257, 333, 512, 1000, 1024, 2049, 4097};
/* Dims a shape gets now and then: invalid ones (negative, or more than
 * the INT64_MAX / 8 elements a tensor may hold), then two valid but huge
 * ones, which shape_of puts only beside a 0 (an empty tensor whose size
 * arithmetic runs near the limit). */
static const int64_t bad_dims[8] = {-1, INT64_MIN, INT64_MAX, (int64_t)1 << 62,
                                    -((int64_t)1 << 40), ((int64_t)1 << 61) + 3,
                                    INT64_MAX / 8, (int64_t)1 << 59};
#define N_INVALID_DIMS 6

static int64_t dim_of(prog *p) {
    unsigned b = u8(&p->in);
    return b < 0xE0 ? small_dims[b & 15] : wide_dims[b & 31];
}

typedef struct shp {
    int64_t d[GAD_MAX_RANK + 1];
    int rank;
    int bad; /* holds a negative or huge dim */
} shp;

/* Shrink the largest dims until the nonzero dims multiply to <= cap. */
static void cap_shape(shp *s, int64_t cap) {
    for (;;) {
        int64_t prod = 1;
        int big = -1;
        for (int i = 0; i < s->rank; i++) {
            if (s->d[i] <= 0) continue;
            if (prod > cap / s->d[i]) prod = cap + 1;
            else prod *= s->d[i];
            if (big < 0 || s->d[i] > s->d[big]) big = i;
        }
        if (prod <= cap) return;
        s->d[big] /= 2;
    }
}

/* A shape: rank 0..4 (rarely 5..9), small dims, capped; sometimes with one
 * negative or huge dim. */
static void shape_of(prog *p, shp *s, int64_t cap) {
    unsigned rb = u8(&p->in);
    int kind = (int)(rb >> 5);
    s->rank = (int)(rb % 5);
    if (kind == 7) s->rank = 5 + (int)(rb % 5);
    for (int i = 0; i < s->rank; i++) s->d[i] = dim_of(p);
    cap_shape(s, cap);
    s->bad = 0;
    if (kind == 6 && s->rank > 0 && !p->smooth) {
        unsigned b = u8(&p->in);
        int k = (int)(b % (unsigned)s->rank), which = (int)((b >> 4) & 7);
        if (which >= N_INVALID_DIMS && s->rank == 1) which = 0;
        s->d[k] = bad_dims[which];
        if (which >= N_INVALID_DIMS) {
            int z = 0;
            for (int i = 0; i < s->rank; i++) z |= s->d[i] == 0;
            if (!z) s->d[(k + 1) % s->rank] = 0;
            p->huge = 1; /* ops on it may fail to allocate */
        }
        s->bad = 1;
    }
}

/* The number of elements gad will read for shape s (0 when it must reject
 * it or when it is empty). */
static int64_t shape_numel(const shp *s) {
    if (s->rank > GAD_MAX_RANK) return 0;
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) {
        if (s->d[i] == 0) return 0;
        if (s->d[i] < 0 || s->d[i] > ((int64_t)1 << 40)) n = -1;
        else if (n > 0) n *= s->d[i];
    }
    return n < 0 ? 0 : n;
}

static void shape_from(shp *s, gad_tensor *t) {
    s->rank = t ? gad_rank(t) : 0;
    s->bad = 0;
    for (int i = 0; i < s->rank; i++) s->d[i] = gad_shape(t)[i];
}

static const double scalars[32] = {
    0, 1, -1, 2, 0.5, -0.5, 3, -3, 0.1, -2, 1e-3, 20, 21, -20, 1e30, -1e30,
    INFINITY, -INFINITY, NAN, 1e-45, 5e-324, 1e300, -0.0, 88.0, 89.0, -88.0,
    710, 1e-8, 100, 0.25, 4, 1.5};
static const double smooth_scalars[16] = {0,   1,    -1,    2,    0.5,  -0.5, 3,    -3,
                                          0.1, -2,   1.5,   0.25, -0.25, 1e-3, -1.5, 2.5};

static double scalar_of(prog *p) {
    unsigned b = u8(&p->in);
    return p->smooth ? smooth_scalars[b & 15] : scalars[b & 31];
}

static double eps_of(prog *p) {
    static const double e[8] = {1e-5, 1e-6, 1e-3, 0, 1e-12, 1, -1, NAN};
    static const double es[4] = {1e-5, 1e-3, 0.1, 1};
    unsigned b = u8(&p->in);
    return p->smooth ? es[b & 3] : e[b & 7];
}

static gad_reduction red_of(prog *p) {
    unsigned b = u8(&p->in);
    if (b == 0xFF && !p->smooth) return (gad_reduction)7;
    return (gad_reduction)(b % 3);
}

static int64_t index_of(prog *p) {
    static const int64_t v[16] = {0, 1, 2, -1, -2, 3, 5, -5, 100, -100, INT64_MAX,
                                  INT64_MIN, INT64_MIN + 1, 4, -3, 7};
    return v[u8(&p->in) & 15];
}

/* ======================================================================== */
/* Data                                                                      */
/* ======================================================================== */

static double clamp3(double v) {
    if (v != v) return 0;
    return v < -3 ? -3 : v > 3 ? 3 : v;
}

/* n float values from the input. */
static double *float_data(prog *p, int64_t n, int f32) {
    static const double specials[16] = {0, -0.0, 1, -1, INFINITY, -INFINITY, NAN, 1e-40,
                                        FLT_MAX, 1e-30, 3, -3, 0.5, 1e38, 5e-324, 2};
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) abort();
    unsigned mode = u8(&p->in) & 3;
    int64_t k = 0;
    if (mode == 0) { /* small values, one byte each */
        k = n < 32 ? n : 32;
        for (int64_t i = 0; i < k; i++) v[i] = (double)(int8_t)u8(&p->in) / 16.0;
    } else if (mode == 1) { /* raw bits */
        k = n < 8 ? n : 8;
        for (int64_t i = 0; i < k; i++) {
            unsigned char b[8];
            for (int j = 0; j < 8; j++) b[j] = (unsigned char)u8(&p->in);
            if (f32) {
                float f;
                memcpy(&f, b, 4);
                v[i] = (double)f;
            } else {
                memcpy(&v[i], b, 8);
            }
        }
    } else if (mode == 2) { /* normal draws */
        gad_rng *r = gad_rng_new(u8(&p->in));
        if (!r) abort();
        for (int64_t i = 0; i < n; i++) v[i] = gad_rng_normal(r);
        gad_rng_free(r);
        k = n;
    } else { /* special values */
        k = n < 16 ? n : 16;
        for (int64_t i = 0; i < k; i++) v[i] = specials[u8(&p->in) & 15];
    }
    for (int64_t i = k; i < n; i++) v[i] = k ? v[i % k] : 0;
    if (p->smooth)
        for (int64_t i = 0; i < n; i++) v[i] = clamp3(v[i]);
    return v;
}

static int64_t *int_data(prog *p, int64_t n) {
    static const int64_t ext[8] = {INT64_MIN, INT64_MAX, -1, 0, 1, INT64_MIN + 1,
                                   (int64_t)1 << 40, -((int64_t)1 << 40)};
    int64_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) abort();
    unsigned mode = u8(&p->in) % 3;
    if (p->smooth) mode = 0;
    int64_t k = n < 32 ? n : 32;
    for (int64_t i = 0; i < k; i++) {
        unsigned b = u8(&p->in);
        v[i] = mode == 0 ? (int64_t)(b % 6) - 1 : mode == 1 ? (int64_t)(int8_t)b : ext[b & 7];
    }
    for (int64_t i = k; i < n; i++) v[i] = k ? v[i % k] : 0;
    return v;
}

/* ======================================================================== */
/* Leaves and auxiliary operands                                             */
/* ======================================================================== */

static void add_leaf(prog *p, gad_tensor *t) {
    if (!t || !gad_is_leaf(t)) return;
    for (int i = 0; i < p->nleaves; i++)
        if (p->leaves[i] == t) return;
    if (p->nleaves < MAX_LEAVES) p->leaves[p->nleaves++] = gad_retain(t);
}

/* Maybe mark a fresh tensor as a leaf (one byte decides). */
static gad_tensor *leafy(prog *p, gad_tensor *t) {
    unsigned b = u8(&p->in);
    if (!t || !(b & 1)) return t;
    if (gad_dtype(t) == GAD_I64 && (b & 0x80) == 0) return t;
    t = gad_requires_grad(t); /* an i64 tensor: a dtype error */
    add_leaf(p, t);
    return t;
}

/* Normal values of a given shape and float dtype, scaled. */
static gad_tensor *aux_normal(prog *p, const int64_t *shape, int rank,
                              gad_dtype_t dt, double scale) {
    gad_tensor *t = gad_randn(shape, rank, 0x1000u + p->seed * 7919u + p->naux++);
    if (!t) p->aux_failed = 1; /* (a shape from an empty tensor may overflow) */
    if (scale != 1) t = gad_mul_scalar(t, scale);
    if (dt == GAD_F64 || is_half(dt)) t = gad_cast(t, dt);
    return t;
}

/* Indices of a given shape for an axis of size dim: mostly in [0, dim),
 * sometimes negative (wrapping) or out of range. */
static gad_tensor *aux_index(prog *p, const int64_t *shape, int rank, int64_t dim) {
    unsigned b = u8(&p->in) & 7;
    int64_t lo = 0, hi = dim;
    if (b == 5 && !p->smooth) lo = -dim;
    if (b == 6 && !p->smooth) lo = dim, hi = dim + 2;
    if (b == 7 && !p->smooth) lo = -dim - 2, hi = -dim;
    if (hi <= lo) hi = lo + 1;
    return gad_rng_int_tensor(p->rng, shape, rank, lo, hi);
}

/* ======================================================================== */
/* Constructors                                                              */
/* ======================================================================== */

static gad_tensor *c_from(prog *p) {
    unsigned which = u8(&p->in) % 3;
    shp s;
    shape_of(p, &s, SMALL_CAP);
    int64_t n = shape_numel(&s);
    int null_data = !p->smooth && u8(&p->in) == 0xFF;
    gad_tensor *t;
    if (which == 2) {
        int64_t *v = int_data(p, n);
        t = gad_from_i64(null_data ? NULL : v, s.d, s.rank);
        free(v);
    } else {
        double *v = float_data(p, n, which == 0);
        if (which == 1) {
            t = gad_from_f64(null_data ? NULL : v, s.d, s.rank);
        } else {
            float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
            if (!f) abort();
            for (int64_t i = 0; i < n; i++) f[i] = (float)v[i];
            t = gad_from_f32(null_data ? NULL : f, s.d, s.rank);
            free(f);
        }
        free(v);
    }
    return leafy(p, t);
}

static gad_tensor *c_full(prog *p) {
    unsigned which = u8(&p->in) & 3;
    gad_dtype_t dt = p->smooth ? float_dtype_of(p) : dtype_of(p);
    shp s;
    shape_of(p, &s, SMALL_CAP);
    gad_tensor *t;
    switch (which) {
    case 0: t = gad_zeros(s.d, s.rank, dt); break;
    case 1: t = gad_ones(s.d, s.rank, dt); break;
    case 2: t = gad_full(s.d, s.rank, dt, scalar_of(p)); break;
    default: t = gad_scalar(scalar_of(p), dt); break;
    }
    return leafy(p, t);
}

static gad_tensor *c_arange(prog *p) {
    static const double steps[16] = {1, -1, 0.5, -0.5, 0.25, 0.1, -0.1, 3,
                                     0, NAN, INFINITY, 0.01, -0.01, 1e-300, 2, 7};
    unsigned b = u8(&p->in);
    double start = (double)(int8_t)u8(&p->in) / 4, end = (double)(int8_t)u8(&p->in) / 4;
    double step = steps[b & 15];
    if (b >= 0xF0 && !p->smooth) start = 1e18, end = 1e18 + 4096;
    if (p->smooth && !(step != 0 && isfinite(step))) step = 1;
    if (p->smooth) {
        start = clamp3(start);
        end = clamp3(end);
    }
    gad_dtype_t dt = p->smooth ? float_dtype_of(p) : dtype_of(p);
    return leafy(p, gad_arange(start, end, step, dt));
}

static gad_tensor *c_linspace(prog *p) {
    double start = scalar_of(p), end = scalar_of(p);
    int64_t num = (int64_t)(u8(&p->in) % 40) - 2;
    if (p->smooth && num < 0) num = 0;
    gad_dtype_t dt = p->smooth ? float_dtype_of(p) : dtype_of(p);
    return leafy(p, gad_linspace(start, end, num, dt));
}

static gad_tensor *c_eye(prog *p) {
    int64_t n = (int64_t)(u8(&p->in) % 66) - 1;
    gad_dtype_t dt = p->smooth ? float_dtype_of(p) : dtype_of(p);
    return leafy(p, gad_eye(n, dt));
}

static gad_tensor *c_randn(prog *p) {
    shp s;
    shape_of(p, &s, SMALL_CAP);
    gad_tensor *t = gad_randn(s.d, s.rank, u8(&p->in));
    if (t && (u8(&p->in) & 1)) t = gad_cast(t, GAD_F64);
    return leafy(p, t);
}

static gad_tensor *c_rng(prog *p) {
    static const double lohi[8] = {0, 1, -1, 2, -3, 3, 0.5, NAN};
    unsigned which = u8(&p->in) % 3;
    gad_dtype_t dt = p->smooth ? float_dtype_of(p) : dtype_of(p);
    shp s;
    shape_of(p, &s, SMALL_CAP);
    unsigned b = u8(&p->in);
    double lo = lohi[b & 7], hi = lohi[(b >> 3) & 7];
    if (p->smooth) lo = clamp3(lo), hi = clamp3(hi);
    gad_tensor *t;
    if (which == 0) t = gad_rng_uniform_tensor(p->rng, s.d, s.rank, dt, lo, hi);
    else if (which == 1) t = gad_rng_normal_tensor(p->rng, s.d, s.rank, dt, lo, fabs(hi));
    else t = gad_rng_int_tensor(p->rng, s.d, s.rank, (int64_t)(b & 7) - 2,
                                (int64_t)((b >> 3) & 7) - 1);
    return leafy(p, t);
}

static gad_tensor *c_init(prog *p) {
    static const double gains[8] = {1, 0, 1.4142135623730951, 0.5, -1, NAN, INFINITY, 2};
    unsigned which = u8(&p->in) & 3;
    int64_t fi = (int64_t)(u8(&p->in) % 10) - 1, fo = (int64_t)(u8(&p->in) % 10) - 1;
    double gain = gains[u8(&p->in) & (p->smooth ? 3 : 7)];
    gad_tensor *t;
    switch (which) {
    case 0: t = gad_init_xavier_uniform(p->rng, fi, fo, gain); break;
    case 1: t = gad_init_xavier_normal(p->rng, fi, fo, gain); break;
    case 2: t = gad_init_kaiming_uniform(p->rng, fi, fo, gain); break;
    default: t = gad_init_kaiming_normal(p->rng, fi, fo, gain); break;
    }
    return leafy(p, t);
}

static gad_tensor *c_like(prog *p) {
    gad_tensor *x = arg(p);
    unsigned which = u8(&p->in) % 3;
    gad_tensor *t = which == 0 ? gad_zeros_like(x)
                    : which == 1 ? gad_full_like(x, scalar_of(p))
                                 : gad_clone(x);
    return leafy(p, t);
}

/* A tensor big enough for the multithreaded paths of the kernels. */
static gad_tensor *c_big(prog *p) {
    static const int64_t shapes[16][4] = {
        {1, 32769}, {1, 40000}, {1, 65536}, {1, 131072}, {2, 1024, 64},
        {2, 257, 130}, {2, 4097, 9}, {2, 8, 4099}, {3, 3, 129, 101},
        {3, 2, 128, 128}, {3, 64, 64, 8}, {2, 1, 33000}, {2, 33000, 1},
        {2, 16, 2049}, {2, 512, 256}, {2, 130, 1009}};
    const int64_t *s = shapes[u8(&p->in) & 15];
    unsigned b = u8(&p->in);
    gad_tensor *t = gad_randn(s + 1, (int)s[0], b);
    if (t && (b & 0x10) && !p->smooth) t = gad_mul_scalar(t, 1e3);
    if (t && (b & 0x20)) t = gad_cast(t, GAD_F64);
    if (t && (b & 0x40)) t = gad_contiguous(gad_transpose(t));
    if (t && p->smooth) t = gad_clamp(t, -3, 3);
    return leafy(p, t);
}

/* ======================================================================== */
/* Views and copies                                                          */
/* ======================================================================== */

static gad_tensor *v_reshape(prog *p) {
    gad_tensor *x = arg(p);
    unsigned b = u8(&p->in);
    shp s;
    switch ((b >> 1) & 3) {
    case 0: shape_of(p, &s, BIG_CAP); break;
    case 1: s.rank = 1, s.d[0] = -1; break;
    case 2: s.rank = 2, s.d[0] = dim_of(p), s.d[1] = -1; break;
    default:
        shape_from(&s, x);
        for (int i = 0; i < s.rank / 2; i++) { /* reverse the dims */
            int64_t t = s.d[i];
            s.d[i] = s.d[s.rank - 1 - i];
            s.d[s.rank - 1 - i] = t;
        }
        if (s.rank > 0) s.d[u8(&p->in) % (unsigned)s.rank] = -1;
        if ((b & 0x80) && s.rank > 1) s.d[0] = -1; /* maybe two -1 */
        break;
    }
    return (b & 1) ? gad_view(x, s.d, s.rank) : gad_reshape(x, s.d, s.rank);
}

static gad_tensor *v_flatten(prog *p) { return gad_flatten(arg(p)); }

static gad_tensor *v_permute(prog *p) {
    gad_tensor *x = arg(p);
    unsigned b = u8(&p->in);
    int r = x ? gad_rank(x) : 0, n = r;
    if ((b & 7) == 7 && !p->smooth) n = r + 1;
    if ((b & 7) == 6 && r > 0 && !p->smooth) n = r - 1;
    int axes[GAD_MAX_RANK + 1];
    for (int i = 0; i < n; i++) axes[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(u8(&p->in) % (unsigned)(i + 1)), t = axes[i];
        axes[i] = axes[j];
        axes[j] = t;
    }
    if (b & 8)
        for (int i = 0; i < n; i++)
            if (u8(&p->in) & 1) axes[i] -= n;
    if ((b & 0x30) == 0x30 && n > 1 && !p->smooth) axes[0] = axes[1]; /* duplicate */
    return gad_permute(x, axes, n);
}

static gad_tensor *v_transpose(prog *p) { return gad_transpose(arg(p)); }

static gad_tensor *v_swapaxes(prog *p) {
    gad_tensor *x = arg(p);
    int r = gad_rank(x);
    int a0 = axis_of(p, r), a1 = axis_of(p, r);
    return gad_swapaxes(x, a0, a1);
}

static int64_t range_val(prog *p) {
    static const int64_t v[16] = {GAD_NIL, 0, 1, 2, -1, -2, 3, 5, -5, 100, -100,
                                  INT64_MIN + 1, INT64_MAX, GAD_NIL, 1, -3};
    return v[u8(&p->in) & 15];
}

static gad_tensor *v_slice(prog *p) {
    static const int64_t steps[16] = {GAD_NIL, 1, 2, -1, -2, 3, 0, INT64_MAX,
                                      INT64_MIN + 1, -3, GAD_NIL, 1, -1, 4, 5, GAD_NIL};
    gad_tensor *x = arg(p);
    int r = x ? gad_rank(x) : 0;
    int n = (int)(u8(&p->in) % (unsigned)(r + 2));
    if (p->smooth && n > r) n = r;
    gad_range rg[GAD_MAX_RANK + 2];
    for (int i = 0; i < n; i++) {
        rg[i].start = range_val(p);
        rg[i].end = range_val(p);
        rg[i].step = steps[u8(&p->in) & 15];
        if (p->smooth && rg[i].step == 0) rg[i].step = 1;
    }
    return gad_slice(x, rg, n);
}

static gad_tensor *v_flip(prog *p) {
    gad_tensor *x = arg(p);
    int r = x ? gad_rank(x) : 0, dims[GAD_MAX_RANK + 1];
    int n = (int)(u8(&p->in) % (unsigned)(r + 2)); /* r + 1: an axis twice, or out of range */
    for (int i = 0; i < n; i++) dims[i] = axis_of(p, r);
    return gad_flip(x, dims, n);
}

static gad_tensor *v_roll(prog *p) {
    gad_tensor *x = arg(p);
    int r = x ? gad_rank(x) : 0, dims[GAD_MAX_RANK + 1];
    int64_t shifts[GAD_MAX_RANK + 1];
    int n = 1 + (int)(u8(&p->in) % (unsigned)(r + 1));
    for (int i = 0; i < n; i++) {
        shifts[i] = index_of(p); /* any sign and size, INT64_MIN too */
        dims[i] = axis_of(p, r);
    }
    unsigned b = u8(&p->in);
    return gad_roll(x, shifts, (b & 3) == 0 ? NULL : dims, (b & 3) == 0 ? 1 : n);
}

static gad_tensor *v_select(prog *p) {
    gad_tensor *x = arg(p);
    int a = axis_of(p, gad_rank(x));
    return gad_select(x, a, index_of(p));
}

static gad_tensor *v_squeeze(prog *p) {
    gad_tensor *x = arg(p);
    unsigned b = u8(&p->in);
    if (b & 1) return gad_squeeze_all(x);
    int r = gad_rank(x), a = axis_of(p, r);
    /* prefer a size-1 axis */
    if ((b & 2) && x)
        for (int i = 0; i < r; i++)
            if (gad_shape(x)[i] == 1) a = i;
    return gad_squeeze(x, a);
}

static gad_tensor *v_unsqueeze(prog *p) {
    gad_tensor *x = arg(p);
    return gad_unsqueeze(x, axis_of(p, gad_rank(x) + 1));
}

static gad_tensor *v_broadcast(prog *p) {
    gad_tensor *x = arg(p);
    unsigned b = u8(&p->in);
    shp s;
    if ((b & 3) == 3 && !p->smooth) {
        shape_of(p, &s, BIG_CAP);
    } else {
        shp xs;
        shape_from(&xs, x);
        int lead = (int)(b >> 2) % 3;
        if (xs.rank + lead > GAD_MAX_RANK) lead = 0;
        s.rank = xs.rank + lead;
        s.bad = 0;
        for (int i = 0; i < lead; i++) s.d[i] = dim_of(p);
        for (int i = 0; i < xs.rank; i++)
            s.d[lead + i] = xs.d[i] == 1 && (u8(&p->in) & 1) ? dim_of(p) : xs.d[i];
    }
    /* refuse (skip) targets that would make later ops allocate too much */
    int64_t prod = 1;
    int zero = 0, wild = 0;
    for (int i = 0; i < s.rank && i < GAD_MAX_RANK + 1; i++) {
        if (s.d[i] == 0) zero = 1;
        else if (s.d[i] < 0 || s.d[i] > ((int64_t)1 << 40)) wild = 1;
        else if (prod <= BIG_CAP) prod *= s.d[i];
    }
    if (!zero && !wild && prod > BIG_CAP) {
        p->skip = 1;
        return NULL;
    }
    return gad_broadcast_to(x, s.d, s.rank);
}

static gad_tensor *v_misc(prog *p) {
    gad_tensor *x = arg(p);
    switch (u8(&p->in) % 6) {
    case 0: return gad_detach(x);
    case 1: return gad_stop_gradient(x);
    case 2: return gad_contiguous(x);
    case 3: return gad_clone(x);
    case 4: return gad_cast(x, p->smooth ? float_dtype_of(p) : dtype_of(p));
    default: return gad_view(x, gad_shape(x), gad_rank(x) < 0 ? 0 : gad_rank(x));
    }
}

static gad_tensor *m_requires_grad(prog *p) {
    gad_tensor *x = arg(p);
    if (p->smooth && x && !is_float(gad_dtype(x))) {
        p->skip = 1;
        return NULL;
    }
    gad_tensor *t = gad_requires_grad(x);
    add_leaf(p, t);
    return t;
}

/* Write into a tensor through gad_data_mut (copy-on-write). */
static gad_tensor *m_data_mut(prog *p) {
    gad_tensor *x = arg(p);
    unsigned b = u8(&p->in);
    double v = scalar_of(p);
    if (!x) {
        p->skip = 1;
        return NULL;
    }
    int64_t n = gad_numel(x);
    void *d = gad_data_mut(x);
    if (!d) {
        if (n == 0 && !gad_last_error()) return x; /* nothing to write */
        return NULL; /* checked as a failure */
    }
    if (n > 0) {
        int64_t k = (int64_t)(b % (unsigned)(n < 256 ? n : 256));
        switch (gad_dtype(x)) {
        case GAD_F32: ((float *)d)[k] = (float)v; break;
        case GAD_F64: ((double *)d)[k] = v; break;
        case GAD_BOOL: ((uint8_t *)d)[k] = (uint8_t)(b & 1); break;
        case GAD_F16: /* any bits: NaN and Inf patterns included */
        case GAD_BF16: ((uint16_t *)d)[k] = (uint16_t)(b * 0x0101u); break;
        case GAD_I32: ((int32_t *)d)[k] = (int32_t)(b % 5) - 1; break;
        case GAD_U8: ((uint8_t *)d)[k] = (uint8_t)b; break;
        default: ((int64_t *)d)[k] = (int64_t)(b % 5) - 1; break;
        }
    }
    return x;
}

/* ======================================================================== */
/* Elementwise ops                                                           */
/* ======================================================================== */

/* The second operand of a binary op: a register, or (aux) a tensor shaped
 * to broadcast against a. */
static gad_tensor *second(prog *p, gad_tensor *a) {
    unsigned b = u8(&p->in);
    if ((b & 3) != 3 || !a) return arg(p);
    shp s;
    shape_from(&s, a);
    int drop = (int)((b >> 2) & 3);
    if (drop > s.rank) drop = s.rank;
    memmove(s.d, s.d + drop, (size_t)(s.rank - drop) * sizeof s.d[0]);
    s.rank -= drop;
    for (int i = 0; i < s.rank; i++)
        if ((b >> 4) & (1u << (i & 3))) s.d[i] = 1;
    gad_dtype_t dt = is_float(gad_dtype(a)) ? gad_dtype(a) : GAD_F32;
    return aux_normal(p, s.d, s.rank, dt, 1);
}

/* Whether a * b (both >= 0; element counts, empty tensors with huge dims
 * included) is more than OUT_CAP, without overflowing. */
static int over_cap(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) || r > OUT_CAP;
}

/* Skip a binary op whose broadcast result would be too big. */
static int too_big_bcast(gad_tensor *a, gad_tensor *b) {
    if (!a || !b) return 0;
    int ra = gad_rank(a), rb = gad_rank(b), r = ra > rb ? ra : rb;
    int64_t prod = 1;
    for (int i = 0; i < r; i++) {
        int64_t da = i < r - ra ? 1 : gad_shape(a)[i - (r - ra)];
        int64_t db = i < r - rb ? 1 : gad_shape(b)[i - (r - rb)];
        int64_t d = da == 1 ? db : da;
        if (d == 0 || (da != db && da != 1 && db != 1)) return 0;
        if (d > ((int64_t)1 << 40)) return 0; /* overflow: gad must reject it */
        if (prod <= OUT_CAP) prod *= d;
    }
    return prod > OUT_CAP;
}

static gad_tensor *e_binary(prog *p) {
    unsigned which = u8(&p->in) % 6;
    if (p->smooth && which == 3) which = 2; /* no div */
    gad_tensor *a = arg(p), *b = second(p, a);
    if (too_big_bcast(a, b)) {
        p->skip = 1;
        return NULL;
    }
    switch (which) {
    case 0: return gad_add(a, b);
    case 1: return gad_sub(a, b);
    case 2: return gad_mul(a, b);
    case 3: return gad_div(a, b);
    case 4: return gad_maximum(a, b);
    default: return gad_minimum(a, b);
    }
}

static gad_tensor *e_scalar(prog *p) {
    static const double pows[16] = {2, 0.5, 0, 1, 3, -1, -0.5, 1.5,
                                    -2, 0.25, 10, NAN, INFINITY, 1e-3, 4, -3};
    static const double spows[4] = {0, 1, 2, 3};
    unsigned which = u8(&p->in) % 5;
    gad_tensor *x = arg(p);
    switch (which) {
    case 0: return gad_mul_scalar(x, scalar_of(p));
    case 1: return gad_add_scalar(x, scalar_of(p));
    case 2: {
        unsigned b = u8(&p->in);
        return gad_pow_scalar(x, p->smooth ? spows[b & 3] : pows[b & 15]);
    }
    case 3: return gad_leaky_relu(x, p->smooth ? clamp3(scalar_of(p)) / 3 : scalar_of(p));
    default: {
        double lo = scalar_of(p), hi = scalar_of(p);
        if (p->smooth && lo > hi) {
            double t = lo;
            lo = hi;
            hi = t;
        }
        return gad_clamp(x, lo, hi);
    }
    }
}

static gad_tensor *e_unary(prog *p) {
    /* the smooth ones first: smooth mode picks among them */
    static const int smooth_n = 11;
    unsigned which = u8(&p->in);
    which = p->smooth ? which % (unsigned)smooth_n : which % 13;
    gad_tensor *x = arg(p);
    switch (which) {
    case 0: return gad_neg(x);
    case 1: return gad_square(x);
    case 2: return gad_relu(x);
    case 3: return gad_tanh(x);
    case 4: return gad_exp(x);
    case 5: return gad_abs(x);
    case 6: return gad_sign(x);
    case 7: return gad_sigmoid(x);
    case 8: return gad_silu(x);
    case 9: return gad_gelu(x);
    case 10: return gad_softplus(x);
    case 11: return gad_log(x);
    default: return gad_sqrt(x);
    }
}

/* The math family (issue 27). Smooth mode picks among the first 14, whose
 * derivatives are finite everywhere on moderate values; the others have
 * poles or domains (tan, asin, rsqrt, log1p, pow, atan2 at (0, 0), ...). */
static gad_tensor *e_math(prog *p) {
    static const int smooth_n = 14;
    static const char *const modes[3] = {"none", "tanh", "erf"};
    unsigned which = u8(&p->in);
    which = p->smooth ? which % (unsigned)smooth_n : which % 25;
    gad_tensor *x = arg(p);
    switch (which) {
    case 0: return gad_sin(x);
    case 1: return gad_cos(x);
    case 2: return gad_atan(x);
    case 3: return gad_erf(x);
    case 4: return gad_erfc(x);
    case 5: return gad_expm1(x);
    case 6: return gad_exp2(x);
    case 7: return gad_elu(x, p->smooth ? 1.0 : scalar_of(p));
    case 8: return gad_selu(x);
    case 9: return gad_mish(x);
    case 10: return gad_gelu_erf(x);
    case 11: return gad_hardsigmoid(x);
    case 12: return gad_hardswish(x);
    case 13: {
        double lo = scalar_of(p), hi = scalar_of(p);
        if (p->smooth && !(lo <= hi)) lo = -1, hi = 1;
        return gad_hardtanh(x, lo, hi);
    }
    case 14: return gad_tan(x);
    case 15: return gad_asin(x);
    case 16: return gad_acos(x);
    case 17: return gad_rsqrt(x);
    case 18: return gad_reciprocal(x);
    case 19: return gad_log1p(x);
    case 20: return gad_log2(x);
    case 21: return gad_gelu_ex(x, modes[u8(&p->in) % 3]);
    case 22:
    case 23: {
        gad_tensor *b = second(p, x);
        if (too_big_bcast(x, b)) {
            p->skip = 1;
            return NULL;
        }
        return which == 22 ? gad_pow(x, b) : gad_atan2(x, b);
    }
    default: return gad_sin(gad_mul_scalar(x, 1e30)); /* the libm lanes */
    }
}

/* ======================================================================== */
/* Reductions, softmax                                                       */
/* ======================================================================== */

static gad_tensor *r_sum(prog *p) {
    unsigned which = u8(&p->in) & 3;
    if (p->smooth && which == 3) which = 2; /* no stddev */
    gad_tensor *x = arg(p);
    int r = gad_rank(x) < 0 ? 0 : gad_rank(x);
    unsigned b = u8(&p->in);
    int n = (int)(b % (unsigned)(r + 2));
    int axes[GAD_MAX_RANK + 2];
    for (int i = 0; i < n; i++) axes[i] = axis_of(p, r);
    int keep = (int)((b >> 4) & 1);
    const int *ap = (b & 0xE0) == 0xE0 && !p->smooth ? NULL : axes;
    switch (which) {
    case 0: return gad_sum(x, ap, n, keep);
    case 1: return gad_mean(x, ap, n, keep);
    case 2: return gad_variance(x, ap, n, keep);
    default: return gad_stddev(x, ap, n, keep);
    }
}

static gad_tensor *r_all(prog *p) {
    gad_tensor *x = arg(p);
    return (u8(&p->in) & 1) ? gad_mean_all(x) : gad_sum_all(x);
}

static gad_tensor *r_axis(prog *p) {
    unsigned which = u8(&p->in) % 5;
    gad_tensor *x = arg(p);
    int a = axis_of(p, gad_rank(x));
    int keep = (int)(u8(&p->in) & 1);
    switch (which) {
    case 0: return gad_amax(x, a, keep);
    case 1: return gad_argmax(x, a, keep);
    case 2: return gad_logsumexp(x, a, keep);
    case 3: return gad_softmax(x, a);
    default: return gad_log_softmax(x, a);
    }
}

/* sort, top-k, argmin, cumsum, cumprod (of floats, i64 and bool);
 * multinomial and the logits sampler (issue 27). The draws use the program's generator, so both runs of a
 * program draw the same. */
static gad_tensor *r_sort(prog *p) {
    unsigned b = u8(&p->in), which = b % 6;
    gad_tensor *x = arg(p), *ix = NULL;
    /* the integer dtypes (PyTorch's: i64 and bool; topk, argmin of bool
     * refused) from the same byte, so that old programs keep their meaning */
    if (b / 6 % 3) x = gad_cast(x, b / 6 % 3 == 1 ? GAD_I64 : GAD_BOOL);
    int a = axis_of(p, gad_rank(x));
    int flag = (int)(u8(&p->in) & 1);
    switch (which) {
    case 0: {
        gad_tensor *v = gad_sort(x, a, flag, (u8(&p->in) & 1) ? &ix : NULL);
        if (v && ix && gad_numel(ix) != gad_numel(v)) fail("sort: indices and values differ");
        return v;
    }
    case 1: return gad_argsort(x, a, flag);
    case 2: {
        gad_tensor *v = gad_topk(x, index_of(p), a, flag, 1, &ix);
        if ((v == NULL) != (ix == NULL)) fail("topk: values without indices or back");
        return v;
    }
    case 3: return gad_argmin(x, a, flag);
    case 4: return gad_cumsum(x, a);
    default: return gad_cumprod(x, a);
    }
}

static gad_tensor *r_sample(prog *p) {
    unsigned which = u8(&p->in) % 3;
    gad_tensor *x = arg(p);
    if (which == 0) {
        int64_t n = index_of(p);
        if (n > 64) n = 64; /* bounded output */
        return gad_multinomial(x, n, (int)(u8(&p->in) & 1), p->rng);
    }
    static const double temps[8] = {1, 0, 0.5, 2, -1, NAN, INFINITY, 1e-30};
    static const double tops[8] = {0, 1, 0.5, 0.9, 1e-9, -0.5, 1.5, NAN};
    gad_sample_opts o = {temps[u8(&p->in) & 7], index_of(p), tops[u8(&p->in) & 7]};
    const gad_sample_opts *op = (u8(&p->in) & 3) == 0 ? NULL : &o;
    return which == 1 ? gad_sample_logits(x, op, p->rng) : gad_logits_filter(x, op);
}

/* ======================================================================== */
/* matmul, indexing, joining                                                 */
/* ======================================================================== */

static int64_t dim_or1(gad_tensor *t, int fromend) {
    int r = gad_rank(t);
    return r >= fromend ? gad_shape(t)[r - fromend] : 1;
}

static gad_tensor *l_matmul(prog *p) {
    gad_tensor *a = arg(p), *b;
    unsigned m = u8(&p->in);
    if ((m & 3) == 3 && a && gad_rank(a) >= 1) { /* aux: [k] or [k, n] or [batch.., k, n] */
        int64_t k = dim_or1(a, 1), s[4];
        int rank = 0;
        if (m & 4) s[rank++] = gad_rank(a) >= 3 ? gad_shape(a)[0] : 2;
        s[rank++] = k;
        if (m & 8) s[rank++] = dim_of(p);
        shp cs = {.rank = rank};
        memcpy(cs.d, s, sizeof s);
        cap_shape(&cs, BIG_CAP);
        memcpy(s, cs.d, sizeof s);
        gad_dtype_t dt = is_float(gad_dtype(a)) ? gad_dtype(a) : GAD_F32;
        b = aux_normal(p, s, rank, dt, 1);
        if (b && (m & 0x10)) b = gad_requires_grad(gad_clone(b)), add_leaf(p, b);
    } else {
        b = arg(p);
    }
    if (a && b && gad_rank(a) >= 1 && gad_rank(b) >= 1) {
        /* the output and the work, to skip products that are too big */
        int ra = gad_rank(a), rb = gad_rank(b);
        int64_t M = ra >= 2 ? gad_shape(a)[ra - 2] : 1, K = gad_shape(a)[ra - 1];
        int64_t N = rb >= 2 ? gad_shape(b)[rb - 1] : 1;
        double batch = 1;
        int r = ra > rb ? ra : rb;
        for (int i = 0; i < r - 2; i++) {
            int ia = i - (r - ra), ib = i - (r - rb);
            double da = ia >= 0 && ia < ra - 2 ? (double)gad_shape(a)[ia] : 1;
            double db = ib >= 0 && ib < rb - 2 ? (double)gad_shape(b)[ib] : 1;
            batch *= da > db ? da : db;
        }
        double out = batch * (double)M * (double)N, work = out * (double)K;
        if (out < 4e18 && work < 4e18 &&
            (out > OUT_CAP || work > (double)WORK_CAP) && out != 0) {
            p->skip = 1;
            return NULL;
        }
    }
    /* half-precision matmul (issue 29, helper hgemm): bit 0x20 runs the
     * product in bf16 (0x40: f16) and casts the result back, so the rest
     * of the program sees the dtype it had */
    if ((m & 0x20) && a && b && is_float(gad_dtype(a)) && gad_dtype(a) == gad_dtype(b)) {
        gad_dtype_t h = (m & 0x40) ? GAD_F16 : GAD_BF16, dt = gad_dtype(a);
        return gad_cast(gad_matmul(gad_cast(a, h), gad_cast(b, h)), dt);
    }
    return gad_matmul(a, b);
}

static gad_tensor *i_gather(prog *p) {
    unsigned which = u8(&p->in) % 3;
    gad_tensor *x = arg(p);
    int r = gad_rank(x) < 0 ? 0 : gad_rank(x);
    int a = axis_of(p, r);
    int an = r ? ((a % r) + r) % r : 0;
    unsigned m = u8(&p->in);
    gad_tensor *index;
    if ((m & 1) && x && r > 0) { /* aux index */
        shp s;
        shape_from(&s, x);
        int64_t dim = s.d[an];
        if (which == 2) { /* take: x's shape without the axis */
            memmove(s.d + an, s.d + an + 1, (size_t)(r - an - 1) * sizeof s.d[0]);
            s.rank--;
        } else {
            s.d[an] = dim_of(p);
            for (int i = 0; i < s.rank; i++)
                if (i != an && (u8(&p->in) & 3) == 3 && s.d[i] > 1) s.d[i]--;
        }
        cap_shape(&s, SMALL_CAP);
        index = aux_index(p, s.d, s.rank, dim);
    } else {
        index = arg(p);
    }
    if (which == 0) return gad_gather(x, a, index);
    /* take's result: index's shape with x's other axes (a register index
     * can be long and x wide) */
    if (which == 2 && x && index && r > 0 && gad_shape(x)[an] > 0 &&
        (double)gad_numel(index) * (double)(gad_numel(x) / gad_shape(x)[an]) > OUT_CAP) {
        p->skip = 1;
        return NULL;
    }
    /* index_select (a composite of take) on the same index */
    if (which == 2) return (m & 4) ? gad_index_select(x, a, index) : gad_take(x, a, index);
    gad_tensor *src;
    if ((m & 2) && index) src = aux_normal(p, gad_shape(index), gad_rank(index),
                                           gad_dtype(x) == GAD_F64 ? GAD_F64 : GAD_F32, 1);
    else src = arg(p);
    return gad_scatter_add(x, a, index, src);
}

static gad_tensor *i_join(prog *p) {
    unsigned b = u8(&p->in);
    int n = (int)(b % 10);
    if (p->smooth && n == 0) n = 1;
    gad_tensor *ts[9] = {NULL};
    if (n > 0) ts[0] = arg(p);
    int r = gad_rank(ts[0]) < 0 ? 0 : gad_rank(ts[0]);
    int a = axis_of(p, (b & 0x10) ? r + 1 : r);
    int64_t total = gad_numel(ts[0]);
    for (int i = 1; i < n; i++) {
        unsigned m = u8(&p->in);
        if ((m & 1) && ts[0]) { /* aux: same shape, another size on the axis */
            shp s;
            shape_from(&s, ts[0]);
            int an = r ? ((a % r) + r) % r : 0;
            if (r && !(b & 0x10)) {
                s.d[an] = dim_of(p);
                cap_shape(&s, BIG_CAP);
            }
            gad_dtype_t dt = gad_dtype(ts[0]);
            ts[i] = !is_float(dt) ? gad_zeros(s.d, s.rank, dt)
                                  : aux_normal(p, s.d, s.rank, dt, 1);
        } else {
            ts[i] = arg(p);
        }
        int64_t ni = gad_numel(ts[i]);
        /* saturating, so that huge (empty) tensors cannot overflow it */
        total = total > OUT_CAP || ni > OUT_CAP ? (int64_t)OUT_CAP + 1 : total + ni;
    }
    if (total > OUT_CAP) {
        p->skip = 1;
        return NULL;
    }
    const int pass_null = (b & 0xE0) == 0xE0 && !p->smooth;
    return (b & 0x10) ? gad_stack(pass_null ? NULL : ts, n, a)
                      : gad_cat(pass_null ? NULL : ts, n, a);
}

/* ======================================================================== */
/* nn layers and losses                                                      */
/* ======================================================================== */

static gad_tensor *aux_param(prog *p, const int64_t *shape, int rank, gad_dtype_t dt) {
    unsigned b = u8(&p->in);
    if ((b & 3) == 0) return arg(p);
    if ((b & 3) == 1 && !p->smooth) return NULL;
    gad_tensor *t = aux_normal(p, shape, rank, dt, 0.5);
    if (t && (b & 4)) {
        t = gad_requires_grad(gad_clone(t));
        add_leaf(p, t);
    }
    return t;
}

static gad_dtype_t fdt(gad_tensor *x) {
    return gad_dtype(x) == GAD_F64 ? GAD_F64 : GAD_F32;
}

/* A layer's operands: x from the program, a weight [in, out] and (with_b)
 * a bias [out] of x's float dtype; 0, or -1 with p->skip set where the
 * product would pass the size cap. */
static int linear_operands(prog *p, int with_b, gad_tensor **x, gad_tensor **w,
                           gad_tensor **b) {
    *x = arg(p);
    int64_t in = *x ? dim_or1(*x, 1) : 1, out = dim_of(p);
    if (in > 0 && out > BIG_CAP / in) out = BIG_CAP / in > 0 ? BIG_CAP / in : 1;
    int64_t ws[2] = {in, out};
    if (over_cap(gad_numel(*x) / (in ? in : 1), out)) {
        p->skip = 1;
        return -1;
    }
    *w = aux_param(p, ws, 2, fdt(*x));
    *b = with_b ? aux_param(p, &out, 1, fdt(*x)) : NULL;
    if (!*w) *w = arg(p);
    return 0;
}

static gad_tensor *n_linear(prog *p) {
    gad_tensor *x, *w, *b;
    return linear_operands(p, 1, &x, &w, &b) ? NULL : gad_linear(x, w, b);
}

/* gad_linear_act: the fused layer, with or without b, every activation and
 * one value that is none */
static gad_tensor *n_linear_act(prog *p) {
    unsigned m = u8(&p->in);
    gad_tensor *x, *w, *b;
    if (linear_operands(p, !(m & 8), &x, &w, &b)) return NULL;
    return gad_linear_act(x, w, b, (gad_act)(m % 8 == 7 ? 9 : m % 5));
}

static gad_tensor *n_loss(prog *p) {
    unsigned which = u8(&p->in) % 4;
    gad_tensor *x = arg(p);
    gad_reduction red = red_of(p);
    unsigned m = u8(&p->in);
    if (which == 0) {
        gad_tensor *t = (m & 1) && x ? aux_normal(p, gad_shape(x), gad_rank(x), fdt(x), 1)
                                     : arg(p);
        return gad_mse_loss(x, t, red);
    }
    gad_tensor *targets;
    if ((m & 1) && x && gad_rank(x) >= 1) {
        int64_t B = gad_shape(x)[0], C = dim_or1(x, 1);
        targets = aux_index(p, &B, 1, C);
    } else {
        targets = arg(p);
    }
    if (which == 1) return gad_nll_loss(x, targets, red);
    if (which == 2) return gad_cross_entropy(x, targets, red);
    return gad_categorical_log_prob(x, targets);
}

/* losses with PyTorch's options (issue 27): cross_entropy_ex (class
 * indices of x's shape without dim 1 or any tensor, a weight, smoothing
 * up to 1.2 (above 1: the domain error), ignore_index 0 or -100) and
 * bce_with_logits (weight and pos_weight any tensors). */
static gad_tensor *n_loss_ex(prog *p) {
    unsigned m = u8(&p->in);
    gad_tensor *x = arg(p);
    gad_reduction red = red_of(p);
    if (m & 1) {
        gad_tensor *t = (m & 2) && x ? aux_normal(p, gad_shape(x), gad_rank(x), fdt(x), 1)
                                     : arg(p);
        gad_tensor *w = (m & 4) ? arg(p) : NULL, *pw = (m & 8) ? arg(p) : NULL;
        return gad_binary_cross_entropy_with_logits(x, t, w, pw, red);
    }
    gad_tensor *t;
    if ((m & 2) && x && gad_rank(x) >= 2) {
        int64_t s[GAD_MAX_RANK];
        int k = 0;
        for (int i = 0; i < gad_rank(x); i++)
            if (i != 1) s[k++] = gad_shape(x)[i];
        t = aux_index(p, s, k, gad_shape(x)[1]);
    } else {
        t = arg(p);
    }
    gad_tensor *w = (m & 4) ? arg(p) : NULL;
    double ls = (m & 8) ? (double)(m >> 4) / 15.0 * 1.2 : 0;
    return gad_cross_entropy_ex(x, t, w, (m & 16) ? 0 : -100, red, ls);
}

static gad_tensor *n_norm(prog *p) {
    unsigned which = u8(&p->in) % 4;
    if (p->smooth && which == 3) which = 0; /* no whiten */
    gad_tensor *x = arg(p);
    double eps = eps_of(p);
    if (which == 0) {
        int64_t D = x ? dim_or1(x, 1) : 1;
        if (over_cap(D, 1)) { /* an empty x of a huge last dim: its gain would not fit */
            p->skip = 1;
            return NULL;
        }
        gad_tensor *g = aux_param(p, &D, 1, fdt(x));
        gad_tensor *b = aux_param(p, &D, 1, fdt(x));
        return gad_layer_norm(x, g, b, eps);
    }
    if (which == 1) return gad_rms_norm(x, eps);
    if (which == 2) return gad_categorical_entropy(x);
    return gad_whiten(x);
}

static gad_tensor *n_embedding(prog *p) {
    unsigned which = u8(&p->in);
    gad_tensor *w = arg(p), *idx;
    if ((which & 2) && w && gad_rank(w) >= 1) {
        shp s;
        shape_of(p, &s, 64);
        if (s.bad) s.rank = 0;
        idx = aux_index(p, s.d, s.rank, gad_shape(w)[0]);
    } else {
        idx = arg(p);
    }
    if (over_cap(gad_numel(idx), w ? dim_or1(w, 1) : 1)) {
        p->skip = 1;
        return NULL;
    }
    if (which & 4) {
        if (p->smooth) {
            p->skip = 1; /* off the tape, and not differentiable */
            return NULL;
        }
        int64_t depth = (int64_t)(u8(&p->in) % 10) - 1;
        if ((which & 0x18) == 0x18) depth = INT64_MAX;
        if (over_cap(gad_numel(idx), depth > 0 && depth < 1000 ? depth : 1)) {
            p->skip = 1;
            return NULL;
        }
        return gad_one_hot(idx, depth);
    }
    return (which & 1) ? gad_embedding_fused(w, idx) : gad_embedding(w, idx);
}

/* pooling (issue 28): max/avg 1-d and 2-d with options from the input
 * (invalid ones too: kernel 0, negative stride or padding, padding over
 * kernel / 2, dilation with avg), adaptive to a small output. */
static gad_tensor *n_pool(prog *p) {
    unsigned which = u8(&p->in), b = u8(&p->in), c = u8(&p->in);
    gad_tensor *x = arg(p);
    gad_pool_opts o = {.kernel = {(int64_t)(b & 3) + (b & 4 ? 0 : 1), (int64_t)((b >> 3) & 3) + 1},
                       .stride = {(int64_t)(c & 3) - (c & 4 ? 1 : 0), (int64_t)((c >> 3) & 3)},
                       .padding = {(int64_t)((b >> 5) & 1), (int64_t)((b >> 6) & 3) - 1},
                       .dilation = {(int64_t)((c >> 5) & 1) + 1, 1},
                       .ceil_mode = (int)((c >> 6) & 1),
                       .exclude_pad = (int)((c >> 7) & 1),
                       .divisor_override = (int64_t)(which >> 6)};
    if (over_cap(gad_numel(x), 9)) {
        p->skip = 1;
        return NULL;
    }
    int64_t oh = (int64_t)((b >> 2) % 5), ow = (int64_t)((c >> 2) % 5);
    switch (which & 7) {
    case 0: return gad_max_pool2d(x, &o, NULL);
    case 1: return gad_max_pool1d(x, &o, NULL);
    case 2: return gad_avg_pool2d(x, &o);
    case 3: return gad_avg_pool1d(x, &o);
    case 4: return gad_adaptive_max_pool2d(x, oh, ow, NULL);
    default: {
        if (over_cap(gad_numel(x), 25)) {
            p->skip = 1;
            return NULL;
        }
        return gad_adaptive_avg_pool2d(x, oh, ow);
    }
    }
}

/* shape ops for images (issue 28): pad (every mode, pads of -2..5, any
 * count), interpolate, pixel_shuffle/unshuffle, unfold and fold. */
static gad_tensor *n_image(prog *p) {
    unsigned which = u8(&p->in), b = u8(&p->in), c = u8(&p->in);
    gad_tensor *x = arg(p);
    if (over_cap(gad_numel(x), 16)) {
        p->skip = 1;
        return NULL;
    }
    switch (which & 7) {
    case 0:
    case 1: {
        int64_t pads[8];
        int np = (int)(b & 7) + (b & 8 ? 1 : 0); /* an odd count too */
        for (int i = 0; i < np && i < 8; i++) pads[i] = (int64_t)((c >> (i % 4)) % 8) - 2;
        if (np > 8) np = 8;
        int64_t grow = 1; /* the output's elements against the input's */
        for (int i = 0; x && i < np / 2 && i < gad_rank(x); i++) {
            int64_t d = gad_shape(x)[gad_rank(x) - 1 - i];
            grow *= d ? (d + pads[2 * i] + pads[2 * i + 1] + d - 1) / d + 1 : 1;
        }
        if (grow > 64 || over_cap(gad_numel(x), grow) ||
            (x && gad_numel(x) == 0 && gad_rank(x) > 0)) {
            p->skip = 1; /* an empty x of a huge dim padded: its output need not be empty */
            return NULL;
        }
        return gad_pad(x, pads, np, (gad_pad_mode)((which >> 3) & 3), (double)(c & 3));
    }
    case 2: {
        int64_t size[2] = {(int64_t)(b % 7), (int64_t)(c % 7)};
        double sf[2] = {(double)(b % 5) / 2, (double)(c % 5) / 2};
        int by_sf = (which >> 3) & 1;
        if ((!by_sf && over_cap(gad_numel(x), 49)) || (by_sf && x && gad_numel(x) == 0)) {
            p->skip = 1;
            return NULL;
        }
        return gad_interpolate(x, by_sf ? NULL : size, by_sf ? sf : NULL,
                               x && gad_rank(x) >= 3 ? gad_rank(x) - 2 : 1,
                               (gad_interp_mode)((which >> 4) % 4), (int)((which >> 6) & 1));
    }
    case 3: return gad_pixel_shuffle(x, (int64_t)(b % 4));
    case 4: return gad_pixel_unshuffle(x, (int64_t)(b % 4));
    default: {
        gad_fold_opts o = {.kernel = {(int64_t)(b & 3), (int64_t)((b >> 2) & 3) + 1},
                           .dilation = {(int64_t)((b >> 4) & 1), 1},
                           .padding = {(int64_t)((c & 3)) - (c & 4 ? 1 : 0), 0},
                           .stride = {(int64_t)((c >> 3) & 3), 1}};
        if (over_cap(gad_numel(x), 64)) {
            p->skip = 1;
            return NULL;
        }
        if ((which & 7) == 5) return gad_unfold(x, &o);
        int64_t out[2] = {(int64_t)((c >> 5) + 1), (int64_t)(which >> 5) + 1};
        return gad_fold(x, out, &o);
    }
    }
}

static gad_tensor *n_dropout(prog *p) {
    static const double ps[8] = {0, 0.5, 0.1, 0.9, 1, -0.1, NAN, 0.999};
    gad_tensor *x = arg(p);
    unsigned b = u8(&p->in);
    double pr = ps[b & (p->smooth ? 3 : 7)];
    if (p->smooth && pr > 0.5) pr = 0.5;
    gad_rng *r = (b & 8) && !p->smooth ? NULL : p->rng;
    return gad_dropout(x, pr, r, (int)((b >> 4) & 1) || p->smooth);
}

/* ======================================================================== */
/* Fused ops                                                                 */
/* ======================================================================== */

static gad_tensor *f_scan(prog *p) {
    gad_tensor *a = arg(p), *b;
    unsigned m = u8(&p->in);
    if ((m & 1) && a) b = aux_normal(p, gad_shape(a), gad_rank(a), fdt(a), 1);
    else b = arg(p);
    if (m & 2) a = gad_sigmoid(a); /* decays in (0, 1), as models use */
    return gad_gated_scan(a, b);
}

static gad_tensor *f_masked_ce(prog *p) {
    gad_tensor *logits = arg(p), *targets, *mask;
    unsigned m = u8(&p->in);
    int64_t N = gad_rank(logits) >= 1 ? gad_shape(logits)[0] : 1;
    int64_t V = gad_rank(logits) >= 2 ? gad_shape(logits)[1] : 1;
    if ((m & 1) && logits) targets = aux_index(p, &N, 1, V);
    else targets = arg(p);
    if ((m & 2) && logits && N <= SMALL_CAP) {
        static const float mv[8] = {1, 0, -1, 0.5f, 2, 0, 1, -0.25f};
        float *v = malloc((size_t)(N > 0 ? N : 1) * sizeof *v);
        if (!v) abort();
        for (int64_t i = 0; i < N; i++) v[i] = mv[u8(&p->in) & 7];
        mask = gad_from_f32(v, &N, 1);
        free(v);
    } else {
        mask = arg(p);
    }
    return gad_masked_ce(logits, targets, mask);
}

static gad_tensor *f_helix(prog *p) {
    gad_tensor *x = arg(p);
    unsigned m = u8(&p->in);
    int64_t D = gad_rank(x) >= 1 ? dim_or1(x, 1) : 1;
    if ((m & 1) && !(x && gad_rank(x) == 3)) { /* aux x [B, T, D] */
        shp s = {.rank = 3};
        for (int i = 0; i < 3; i++) s.d[i] = dim_of(p);
        cap_shape(&s, SMALL_CAP);
        D = s.d[2];
        x = D > 64 ? NULL : aux_normal(p, s.d, 3, GAD_F32, 1);
        if (x && (m & 2)) x = gad_requires_grad(gad_clone(x)), add_leaf(p, x);
    }
    if (D > 64 || gad_numel(x) > 16384) {
        p->skip = 1;
        return NULL;
    }
    const int64_t shapes[9][2] = {{D + 1, D}, {D, D}, {D, D}, {D, 2 * D}, {2 * D, D},
                                  {D, 0}, {D, 0}, {D, 0}, {D, 0}};
    gad_tensor *wt[9];
    for (int i = 0; i < 9; i++) {
        int rank = shapes[i][1] ? 2 : 1;
        wt[i] = aux_param(p, shapes[i], rank, GAD_F32);
    }
    gad_helix_weights w = {wt[0], wt[1], wt[2], wt[3], wt[4], wt[5], wt[6], wt[7], wt[8]};
    return gad_helix_block(x, (m & 0xF0) == 0xF0 && !p->smooth ? NULL : &w, eps_of(p));
}

/* ---- attention and positions (issue 27) ---- */

/* scaled_dot_product_attention: q from the program, k and v of its shape
 * (or from the program too), a mask of [Tq, Tk] or [Tk], causal, dropout
 * (off in smooth mode: each call draws a new mask). */
static gad_tensor *f_attention(prog *p) {
    gad_tensor *q = arg(p), *k, *v, *mask = NULL;
    unsigned m = u8(&p->in), m2 = u8(&p->in);
    int r = gad_rank(q);
    if ((m & 1) && q && r >= 2) { /* k/v [.., H / g, Tk, d] */
        int64_t s[GAD_MAX_RANK];
        memcpy(s, gad_shape(q), (size_t)r * sizeof *s);
        s[r - 2] = (int64_t)(m2 % 9);
        if (r >= 3 && (m & 2) && s[r - 3] % 2 == 0) s[r - 3] /= 2;
        k = aux_normal(p, s, r, fdt(q), 1);
        if (m & 4) s[r - 1] = 1 + (int64_t)(m2 >> 4);
        v = aux_normal(p, s, r, fdt(q), 1);
    } else {
        k = arg(p);
        v = arg(p);
    }
    int64_t Tq = r >= 2 ? gad_shape(q)[r - 2] : 1, Tk = gad_rank(k) >= 2 ? dim_or1(k, 2) : 1;
    if (over_cap(gad_numel(q), Tk) || over_cap(gad_numel(v), Tq)) {
        p->skip = 1;
        return NULL;
    }
    if (m & 8) { /* a float mask with -inf entries */
        int64_t ms[2] = {Tq, Tk};
        mask = (m & 16) ? aux_normal(p, ms + 1, 1, fdt(q), 1) : aux_normal(p, ms, 2, fdt(q), 1);
        if (mask && (m & 32)) mask = gad_log(gad_clamp(gad_stop_gradient(mask), 0, 1));
    } else if (m & 16) {
        mask = arg(p);
    }
    static const double ps[4] = {0, 0.25, 1, NAN};
    double dp = p->smooth ? 0 : ps[(m >> 6) & 3];
    double scale = (m2 & 8) ? 0.5 : 0;
    return gad_scaled_dot_product_attention(q, k, v, mask, (int)((m >> 5) & 1) && !(m & 8), dp,
                                            scale, (m2 & 4) && !p->smooth ? NULL : p->rng);
}

/* rope on x from the program: positions 0..T-1, given (i64 of [T]) or
 * from the program; interleaved or split halves; an odd or bad base now
 * and then. */
static gad_tensor *f_rope(prog *p) {
    gad_tensor *x = arg(p), *pos = NULL;
    unsigned m = u8(&p->in);
    int r = gad_rank(x);
    if ((m & 3) == 1 && r >= 2) {
        int64_t T = gad_shape(x)[r - 2];
        pos = aux_index(p, &T, 1, 4096);
    } else if ((m & 3) == 2) {
        pos = arg(p);
    }
    static const double bases[4] = {10000, 100, 0.5, 0};
    double base = bases[(m >> 3) & (p->smooth ? 1 : 3)];
    if ((m & 0xE0) == 0xE0 && !p->smooth) {
        if (!x || r != 2 || gad_shape(x)[1] % 2) return gad_rope(x, pos, base, (int)((m >> 2) & 1));
        return gad_sinusoidal_positions(gad_shape(x)[0], gad_shape(x)[1], 10000, fdt(x));
    }
    return gad_rope(x, pos, base, (int)((m >> 2) & 1));
}
/* ---- end of attention and positions ---- */

/* ======================================================================== */
/* Calls that return no tensor                                               */
/* ======================================================================== */

static gad_tensor *m_inspect(prog *p) {
    gad_tensor *x = arg(p);
    unsigned which = u8(&p->in) % 5;
    unsigned b = u8(&p->in);
    uint64_t h = 0;
    p->skip = 1;
    switch (which) {
    case 0: { /* print */
        char buf[256];
        size_t cap = b;
        memset(buf, 'x', sizeof buf);
        size_t len = gad_snprint(cap ? buf : NULL, cap, x);
        size_t full = gad_snprint(NULL, 0, x);
        if (len != full) fail("snprint: length %zu with cap %zu, %zu with cap 0", len, cap, full);
        if (cap) {
            if (!memchr(buf, 0, cap)) fail("snprint: no NUL within cap %zu", cap);
            size_t got = strlen(buf);
            if (got != (len < cap ? len : cap - 1))
                fail("snprint: wrote %zu chars of %zu with cap %zu", got, len, cap);
        }
        char *all = malloc(full + 1);
        if (!all) abort();
        size_t again = gad_snprint(all, full + 1, x);
        if (again != full || strlen(all) != full)
            fail("snprint: %zu/%zu chars on a second call (expected %zu)", again,
                 strlen(all), full);
        h = hash_str(7, all);
        free(all);
        if (x && gad_last_error()) fail("snprint recorded an error");
        gad_clear_error();
        break;
    }
    case 1: { /* item */
        double v = gad_item(x);
        int want_err = !x || gad_numel(x) != 1;
        if (want_err) {
            if (!isnan(v)) fail("item of %lld elements gave %g", (long long)gad_numel(x), v);
            h = hash_error(3, check_error("item"));
        } else {
            if (gad_last_error()) fail("item of one element recorded an error");
            h = hash_bytes(3, &v, sizeof v);
        }
        break;
    }
    case 2: { /* read with a capacity of numel or less */
        int64_t n = gad_numel(x);
        size_t cap = (size_t)n - ((b & 1) && n > 0 ? 1 : 0);
        if (n > OUT_CAP) break;
        void *buf = malloc((cap ? cap : 1) * 8);
        if (!buf) abort();
        gad_status st = (b & 6) == 0   ? gad_read_f32(x, buf, cap)
                        : (b & 6) == 2 ? gad_read_f64(x, buf, cap)
                                       : gad_read_i64(x, buf, cap);
        h = check_status(st, "read");
        if ((st == GAD_OK) != (x && cap == (size_t)n))
            fail("read with capacity %zu of %lld elements returned %s", cap,
                 (long long)n, gad_status_str(st));
        if (st == GAD_OK && cap)
            h = hash_bytes(h, buf, cap * ((b & 6) == 0 ? 4 : 8));
        free(buf);
        break;
    }
    case 3: { /* dim */
        int r = gad_rank(x);
        int a = axis_of(p, r);
        int64_t d = gad_dim(x, a);
        int ok = x && a >= -r && a < r;
        if (ok != (d >= 0)) fail("dim(axis %d) of rank %d gave %lld", a, r, (long long)d);
        if (ok && d != gad_shape(x)[a < 0 ? a + r : a]) fail("dim(%d) is wrong", a);
        h = ok ? (uint64_t)d : hash_error(5, check_error("dim"));
        break;
    }
    default: /* no-grad mode on or off */
        if ((b & 1) && p->nograd < 3) {
            gad_no_grad_begin();
            p->nograd++;
        } else if (p->nograd > 0) {
            gad_no_grad_end();
            p->nograd--;
        }
        h = (uint64_t)gad_grad_enabled();
        break;
    }
    record(p, "inspect", h);
    gad_clear_error();
    return NULL;
}

/* A gradient in the middle of a program: its first gradient becomes the
 * step's result, so later ops build on it (with GAD_CREATE_GRAPH, a
 * differentiable one). */
static gad_tensor *m_midgrad(prog *p) {
    gad_tensor *out = arg(p);
    unsigned b = u8(&p->in);
    gad_tensor *g[MAX_LEAVES];
    gad_status st = gad_grad_ex(out, NULL, p->leaves, p->nleaves, g,
                                (b & 1) ? GAD_CREATE_GRAPH : 0);
    record(p, "midgrad", check_status(st, "grad_ex (mid-program)"));
    /* A derivative of order n of a smooth op can grow like eps^(-n/2)
     * (rms_norm of one value is nearly a step) while every value on the
     * way stays moderate: past two orders, and the two more hvp takes,
     * a gradient may overflow, so finiteness is no longer checked. */
    if ((b & 1) && st == GAD_OK && ++p->orders > 2) p->unsure = 1;
    if (st != GAD_OK) {
        for (int i = 0; i < p->nleaves; i++)
            if (g[i]) fail("grad failed but gradient %d is not NULL", i);
        return NULL;
    }
    for (int i = 0; i < p->nleaves; i++) {
        if (!g[i]) fail("grad succeeded but gradient %d is NULL", i);
        if (!same_shape(g[i], p->leaves[i]) || gad_dtype(g[i]) != gad_dtype(p->leaves[i]))
            fail("mid-program gradient %d has the wrong shape or dtype", i);
    }
    return p->nleaves ? g[(b >> 1) % (unsigned)p->nleaves] : gad_scalar_f32(0);
}

/* convolution (issue 28): conv1d/2d/3d or conv_transpose1d/2d/3d on x,
 * with options drawn from the input (some invalid: PyTorch's errors) and a
 * weight and bias that fit x's channels (aux) or any register. */
static gad_tensor *n_conv(prog *p) {
    unsigned which = u8(&p->in), o1 = u8(&p->in), o2 = u8(&p->in);
    gad_tensor *x = arg(p);
    int nd = x && gad_rank(x) >= 3 && gad_rank(x) <= 5 ? gad_rank(x) - 2 : 1 + (int)(which % 3);
    int trans = (which >> 2) & 1;
    gad_conv_opts o = {.groups = 1 + (o1 & 1)};
    if (!trans && (o1 & 6) == 2) o.padding_mode = GAD_CONV_PAD_VALID;
    if (!trans && (o1 & 6) == 4) o.padding_mode = GAD_CONV_PAD_SAME;
    int64_t ks[3], grow = 1;
    for (int d = 0; d < nd; d++) {
        o.stride[d] = 1 + (o2 >> (2 * d)) % 3;
        o.padding[d] = (o1 >> (3 + d)) & 1;
        o.dilation[d] = 1 + ((o2 >> 6) & 1);
        o.output_padding[d] = trans ? (o1 >> 7) & 1 : 0;
        ks[d] = 1 + (int64_t)(u8(&p->in) % 3);
        grow *= 3 * ((x && gad_rank(x) == nd + 2) ? dim_or1(x, nd - d) : 1) + 8;
    }
    int64_t cin = x && gad_rank(x) >= nd + 1 ? gad_shape(x)[gad_rank(x) - nd - 1] : 1;
    int64_t cout = o.groups * (1 + (int64_t)(u8(&p->in) % 3));
    int64_t n = x && gad_rank(x) == nd + 2 ? gad_shape(x)[0] : 1;
    /* the output is at most about 3x the input per dim (transposed) */
    if (over_cap(n * (cout + cin), grow) || over_cap(grow, cin * 27)) {
        p->skip = 1;
        return NULL;
    }
    int64_t ws[5];
    ws[0] = trans ? cin : cout;
    ws[1] = trans ? cout / o.groups : (cin / o.groups > 0 ? cin / o.groups : 1);
    for (int d = 0; d < nd; d++) ws[2 + d] = ks[d];
    gad_tensor *w = aux_param(p, ws, nd + 2, fdt(x));
    gad_tensor *b = (which & 8) ? aux_param(p, &cout, 1, fdt(x)) : NULL;
    /* a weight taken from the registers brings its own channels and kernel
     * sizes: the output they give, bounded again (a transposed kernel of
     * 128 taps on 257 positions makes 383) */
    if (x && w && gad_rank(w) == nd + 2 && gad_rank(x) >= nd + 1) {
        int64_t size = trans ? gad_shape(w)[1] * o.groups : gad_shape(w)[0];
        int over = over_cap(size, n);
        size *= over ? 1 : n;
        for (int d = 0; d < nd && !over; d++) {
            int64_t L = dim_or1(x, nd - d), k = gad_shape(w)[2 + d];
            int64_t len = trans ? 3 * L + 2 * k + 2 : L + 2;
            if (!(over = over_cap(size, len))) size *= len;
        }
        if (over) {
            p->skip = 1;
            return NULL;
        }
    }
    typedef gad_tensor *(*cf)(gad_tensor *, gad_tensor *, gad_tensor *, const gad_conv_opts *);
    static const cf fns[2][3] = {{gad_conv1d, gad_conv2d, gad_conv3d},
                                 {gad_conv_transpose1d, gad_conv_transpose2d,
                                  gad_conv_transpose3d}};
    return fns[trans][nd - 1](x, w, b, &o);
}

/* ======================================================================== */
/* Comparisons and selection (issue 27)                                      */
/* ======================================================================== */

/* The comparisons, logical ops, tests and any/all: bool results, never on
 * the tape; their results feed later steps (where's and masked_fill's
 * masks, float ops that must refuse them). */
static gad_tensor *s_compare(prog *p) {
    typedef gad_tensor *(*f2)(gad_tensor *, gad_tensor *);
    typedef gad_tensor *(*f1)(gad_tensor *);
    typedef gad_tensor *(*fs)(gad_tensor *, double);
    static const f2 two[9] = {gad_eq, gad_ne, gad_lt, gad_le, gad_gt, gad_ge,
                              gad_logical_and, gad_logical_or, gad_logical_xor};
    static const fs sc[6] = {gad_eq_scalar, gad_ne_scalar, gad_lt_scalar,
                             gad_le_scalar, gad_gt_scalar, gad_ge_scalar};
    static const f1 one[6] = {gad_logical_not, gad_isnan, gad_isinf, gad_isfinite,
                              gad_any_all, gad_all_all};
    unsigned which = u8(&p->in) % 23;
    gad_tensor *a = arg(p);
    if (which < 9) {
        gad_tensor *b = second(p, a);
        if (too_big_bcast(a, b)) {
            p->skip = 1;
            return NULL;
        }
        return two[which](a, b);
    }
    if (which < 15) return sc[which - 9](a, scalar_of(p));
    if (which < 21) return one[which - 15](a);
    int r = gad_rank(a) < 0 ? 0 : gad_rank(a);
    unsigned b = u8(&p->in);
    int n = (int)(b % (unsigned)(r + 2));
    int axes[GAD_MAX_RANK + 2];
    for (int i = 0; i < n; i++) axes[i] = axis_of(p, r);
    const int *ap = (b & 0xE0) == 0xE0 ? NULL : axes;
    return which == 21 ? gad_any(a, ap, n, (int)((b >> 4) & 1))
                       : gad_all(a, ap, n, (int)((b >> 4) & 1));
}

/* where, masked_fill, tril/triu, clamp_tensor: differentiable, and fine in
 * smooth mode (finite values in, finite gradients out). The mask is a
 * comparison of a register, or any register (a dtype error unless it is
 * bool). */
static gad_tensor *s_select(prog *p) {
    unsigned which = u8(&p->in) % 5;
    gad_tensor *x = arg(p);
    switch (which) {
    case 0:
    case 1: {
        unsigned b = u8(&p->in);
        gad_tensor *m = (b & 1) ? arg(p) : gad_gt_scalar(second(p, x), 0);
        if (too_big_bcast(x, m)) {
            p->skip = 1;
            return NULL;
        }
        if (which == 1) {
            double v = scalar_of(p);
            return gad_masked_fill(x, m, p->smooth ? clamp3(v) : v);
        }
        gad_tensor *y = (b & 2) ? arg(p) : second(p, x);
        if (too_big_bcast(m, y) || too_big_bcast(x, y)) {
            p->skip = 1;
            return NULL;
        }
        return gad_where(m, x, y);
    }
    case 2:
    case 3: {
        static const int64_t diags[8] = {0, 1, -1, 2, -3, INT64_MAX, INT64_MIN, 100};
        int64_t d = diags[u8(&p->in) & 7];
        return which == 2 ? gad_tril(x, d) : gad_triu(x, d);
    }
    default: {
        unsigned b = u8(&p->in);
        gad_tensor *lo = (b & 1) ? second(p, x) : NULL;
        gad_tensor *hi = (b & 2) ? second(p, x) : NULL;
        /* mostly above lo (an integer hi stays: add_scalar takes floats) */
        if ((b & 4) && hi && is_float(gad_dtype(hi))) hi = gad_add_scalar(hi, 1);
        if (too_big_bcast(x, lo) || too_big_bcast(x, hi) || too_big_bcast(lo, hi)) {
            p->skip = 1;
            return NULL;
        }
        return gad_clamp_tensor(x, lo, hi);
    }
    }
}

/* ======================================================================== */
/* The op table                                                              */
/* ---- normalization (issue 28): batch, group and instance norm on x
 * [N, C, ...] with optional affine and running statistics (fresh ones, so
 * that the in-place update touches no register) */
static gad_tensor *n_chnorm(prog *p) {
    unsigned which = u8(&p->in), flags = u8(&p->in);
    gad_tensor *x = arg(p);
    double eps = eps_of(p), mom = (flags & 8) ? 1.0 : 0.1;
    int64_t C = x && gad_rank(x) >= 2 ? gad_shape(x)[1] : 1;
    if (over_cap(C, 4)) {
        p->skip = 1;
        return NULL;
    }
    gad_dtype_t dt = x ? fdt(x) : GAD_F32;
    gad_tensor *w = (flags & 1) ? aux_param(p, &C, 1, dt) : NULL;
    gad_tensor *b = (flags & 2) ? aux_param(p, &C, 1, dt) : NULL;
    gad_tensor *rm = NULL, *rv = NULL;
    if (flags & 4) {
        rm = aux_normal(p, &C, 1, dt, 0.5);
        rv = gad_add_scalar(gad_square(aux_normal(p, &C, 1, dt, 1)), 0.5);
    }
    int train = !(flags & 16) || !rm;
    switch (which % 3) {
    case 0: return gad_batch_norm(x, rm, rv, w, b, train, mom, eps);
    case 1: return gad_group_norm(x, (flags >> 5) ? (int64_t)(flags >> 5) : 1, w, b, eps);
    default: return gad_instance_norm(x, rm, rv, w, b, train, mom, eps);
    }
}

/* ---- layer objects with PyTorch's names (issue 29): a Linear, LayerNorm,
 * RMSNorm or self-attention module built on x's last dim in a set of its
 * own (freed here: the result's graph keeps what it needs); outside smooth
 * mode the head count may not divide the width (a domain error) */
static gad_tensor *n_module(prog *p) {
    unsigned which = u8(&p->in) % 4, b = u8(&p->in);
    gad_tensor *x = arg(p);
    int64_t d = x ? dim_or1(x, 1) : 1, out = dim_of(p);
    if (over_cap(gad_numel(x) / (d ? d : 1), out > d ? out : d) || d > 64) {
        p->skip = 1;
        return NULL;
    }
    /* attention: its composition under create_graph holds [L, L] scores */
    int64_t L = x && gad_rank(x) >= 2 ? gad_shape(x)[gad_rank(x) - 2] : 1;
    if (which == 3 && over_cap(L, L)) {
        p->skip = 1;
        return NULL;
    }
    gad_params *ps = gad_params_new();
    gad_rng *rng = gad_rng_new(b);
    gad_nn_ctx c = {ps, rng, x ? fdt(x) : GAD_F32};
    gad_module *m = NULL;
    switch (which) {
    case 0: m = gad_nn_linear(&c, "fc", d, out, b & 1); break;
    case 1: m = gad_nn_layer_norm(&c, "ln", &d, 1, p->smooth ? 1e-5 : eps_of(p), 1, b & 1); break;
    case 2: m = gad_nn_rms_norm(&c, "rn", &d, 1, (b & 2) ? NAN : 1e-6, b & 1); break;
    default: {
        int64_t h = p->smooth ? 1 : 1 + (b >> 5);
        m = gad_nn_multihead_attention(&c, "attn", d, h, 0.0, b & 1);
    }
    }
    gad_tensor *y = m ? gad_module_forward(m, x) : NULL;
    gad_module_free(m);
    gad_params_free(ps);
    gad_rng_free(rng);
    return y;
}

/* ======================================================================== */

typedef gad_tensor *(*op_fn)(prog *p);
typedef struct op_entry {
    const char *name;
    op_fn fn;
} op_entry;

/* Ops allowed in smooth mode (their smooth-mode variants are restricted in
 * the functions above: no div, log, sqrt, stddev, whiten, one_hot, i64
 * leaves; eps > 0; pow with exponents 0..3). */
static const op_entry smooth_ops[] = {
    {"from", c_from},         {"full", c_full},         {"arange", c_arange},
    {"linspace", c_linspace}, {"eye", c_eye},           {"randn", c_randn},
    {"rng", c_rng},           {"init", c_init},         {"like", c_like},
    {"big", c_big},           {"reshape", v_reshape},   {"flatten", v_flatten},
    {"permute", v_permute},   {"transpose", v_transpose}, {"swapaxes", v_swapaxes},
    {"slice", v_slice},       {"select", v_select},     {"squeeze", v_squeeze},
    {"unsqueeze", v_unsqueeze}, {"broadcast_to", v_broadcast}, {"misc", v_misc},
    {"requires_grad", m_requires_grad}, {"data_mut", m_data_mut},
    {"binary", e_binary},     {"scalar", e_scalar},     {"unary", e_unary},
    {"sum", r_sum},           {"all", r_all},           {"axis", r_axis},
    {"matmul", l_matmul},     {"gather", i_gather},     {"join", i_join},
    {"linear", n_linear},     {"loss", n_loss},         {"norm", n_norm},
    {"embedding", n_embedding}, {"dropout", n_dropout}, {"gated_scan", f_scan},
    {"masked_ce", f_masked_ce}, {"helix", f_helix},     {"inspect", m_inspect},
    {"midgrad", m_midgrad},   {"flip", v_flip},         {"roll", v_roll},
    {"compare", s_compare},   {"select", s_select},
    /* sort, sampling */
    {"sort", r_sort},         {"sample", r_sample},
    /* issue 28 */
    {"pool", n_pool},         {"image", n_image},
    /* convolution (issue 28) */
    {"conv", n_conv},
    /* attention and positions (issue 27) */
    {"attention", f_attention}, {"rope", f_rope},
    {"chnorm", n_chnorm}, /* normalization (issue 28) */
    {"math", e_math},
    /* losses with PyTorch's options (issue 27) */
    {"loss_ex", n_loss_ex},
    /* layer objects with PyTorch's names (issue 29) */
    {"module", n_module},
    /* bias and activation fused with the product (issue 31) */
    {"linear_act", n_linear_act},
};
#define N_OPS ((unsigned)(sizeof smooth_ops / sizeof smooth_ops[0]))

/* ======================================================================== */
/* The run                                                                   */
/* ======================================================================== */

static gad_tensor *build_loss(prog *p) {
    gad_tensor *loss = NULL;
    if (p->flags & F_LOSS_LAST) {
        for (int i = p->nsteps - 1; i >= 0 && !loss; i--)
            if (p->reg[i] && is_float(gad_dtype(p->reg[i])) && gad_is_tracked(p->reg[i]))
                loss = gad_sum_all(p->reg[i]);
        return loss;
    }
    for (int i = 0; i < p->nsteps; i++) {
        gad_tensor *x = p->reg[i];
        if (!x || !is_float(gad_dtype(x)) || !gad_is_tracked(x)) continue;
        gad_tensor *w = aux_normal(p, gad_shape(x), gad_rank(x), gad_dtype(x), 1);
        gad_tensor *term = gad_cast(gad_sum_all(gad_mul(x, w)), GAD_F64);
        loss = loss ? gad_add(loss, term) : term;
    }
    return loss;
}

static void check_grads(prog *p, gad_status st, gad_tensor **g, int n,
                        gad_tensor *const *like, const char *what, int finite) {
    if (tracing)
        fprintf(stderr, "     %-14s %s%s (%d results)%s\n", what, gad_status_str(st),
                st != GAD_OK && gad_last_error() ? ": " : "",
                n, p->smooth ? (p->unsure ? " [smooth, unsure]" : " [smooth]") : "");
    if (tracing && st != GAD_OK && gad_last_error())
        fprintf(stderr, "                    %s\n", gad_last_error()->text);
    record(p, what, check_status(st, what));
    gad_clear_error();
    for (int i = 0; i < n; i++) {
        if (st != GAD_OK) {
            if (g[i]) fail("%s failed but result %d is not NULL", what, i);
            continue;
        }
        if (!g[i]) fail("%s succeeded but result %d is NULL", what, i);
        if (like && (!same_shape(g[i], like[i]) || gad_dtype(g[i]) != gad_dtype(like[i])))
            fail("%s: result %d has the wrong shape or dtype", what, i);
        int unsure = p->unsure;
        record(p, what, check_tensor(p, g[i], what));
        p->unsure = unsure;
        if (finite && p->smooth && !p->unsure && !values_ok(g[i], INFINITY)) {
            char buf[512];
            gad_snprint(buf, sizeof buf, g[i]);
            fail("smooth program with finite, moderate values: %s result %d is "
                 "not finite: %s", what, i, buf);
        }
    }
}

static void random_like(prog *p, gad_tensor **v, gad_tensor *const *like, int n) {
    for (int i = 0; i < n; i++)
        v[i] = aux_normal(p, gad_shape(like[i]), gad_rank(like[i]), gad_dtype(like[i]), 1);
}

static void grad_phase(prog *p) {
    gad_tensor *loss = build_loss(p);
    if (loss) {
        record(p, "loss", check_tensor(p, loss, "loss"));
    } else if (gad_last_error()) {
        record(p, "loss", check_tensor(p, NULL, "loss"));
    }
    gad_clear_error();

    int n = p->nleaves;
    gad_tensor *in[MAX_LEAVES + 1], *g[MAX_LEAVES + 1];
    memcpy(in, p->leaves, (size_t)n * sizeof in[0]);
    int nin = n;
    if ((p->flags2 & F2_NONLEAF_INPUT) && p->nsteps > 0)
        in[nin++] = p->reg[p->nsteps - 1]; /* NULL, not a leaf, or a leaf */
    gad_status st;
    if ((p->flags2 & F2_SEEDED_GRAD) && loss) {
        gad_tensor *seed = gad_full_like(loss, 1.0);
        st = gad_grad_ex(loss, seed, in, nin, g, 0);
    } else {
        st = gad_grad(loss, in, nin, g);
    }
    check_grads(p, st, g, nin, in, "grad", 1);
    if (st != GAD_OK) return;

    /* the slots hold this call's gradients */
    for (int i = 0; i < n; i++) {
        gad_tensor *s = gad_leaf_grad(p->leaves[i]);
        if (gad_last_error()) fail("leaf_grad of a leaf failed");
        if (s ? !same_values(s, g[i], 0) : !all_zero(g[i]))
            fail("after grad, the slot of leaf %d differs from its gradient", i);
    }
    if (p->flags & F_BACKWARD) {
        gad_zero_grad(p->leaves, n);
        for (int k = 1; k <= 2; k++) {
            st = gad_backward(loss);
            record(p, "backward", check_status(st, "backward"));
            gad_clear_error();
            if (st != GAD_OK) fail("backward failed where grad succeeded");
            for (int i = 0; i < n; i++) {
                gad_tensor *s = gad_leaf_grad(p->leaves[i]);
                if (s ? !same_values(g[i], s, k == 2) : !all_zero(g[i]))
                    fail("backward #%d: the slot of leaf %d is not %s its gradient", k,
                         i, k == 2 ? "twice" : "equal to");
            }
        }
    }
    if (p->flags & F_CREATE_GRAPH) {
        gad_tensor *g1[MAX_LEAVES], *g2[MAX_LEAVES];
        st = gad_grad_ex(loss, NULL, p->leaves, n, g1, GAD_CREATE_GRAPH);
        check_grads(p, st, g1, n, p->leaves, "grad (create_graph)", 1);
        /* the differentiable gradients (fused ops take their composition)
         * have the plain ones' values, to rounding */
        /* the precision of the least precise tracked register bounds the
         * gradients': an f64 leaf's may come through f32 ops (the 0-d
         * promotion), and a half program's composition rounds every step
         * to 8 or 11 bits where the fused kernels round once */
        int f64_only = 1, half = p->half != GAD_F32; /* registers widened to f32 */
        for (int i = 0; i < p->nsteps; i++)
            if (p->reg[i] && gad_is_tracked(p->reg[i]) && gad_dtype(p->reg[i]) != GAD_F64)
                f64_only = 0;
        for (int i = 0; st == GAD_OK && i < n; i++) {
            double tol = gad_dtype(g[i]) == GAD_F64 && f64_only ? 1e-7 : half ? 0.1 : 1e-2;
            int64_t k = close_values(g[i], g1[i], tol);
            if (k >= 0) {
                double a = 0, b = 0;
                gad_tensor *fa = gad_flatten(gad_cast(g[i], GAD_F64));
                gad_tensor *fb = gad_flatten(gad_cast(g1[i], GAD_F64));
                a = gad_item(gad_select(fa, 0, k));
                b = gad_item(gad_select(fb, 0, k));
                fail("gradient %d element %lld: %.9g plain, %.9g with GAD_CREATE_GRAPH "
                     "(tolerance %g of the largest)", i, (long long)k, a, b, tol);
            }
        }
        if (st == GAD_OK) {
            gad_tensor *loss2 = NULL;
            for (int i = 0; i < n; i++) {
                gad_tensor *w = aux_normal(p, gad_shape(g1[i]), gad_rank(g1[i]),
                                           gad_dtype(g1[i]), 1);
                gad_tensor *t = gad_cast(gad_sum_all(gad_mul(g1[i], w)), GAD_F64);
                loss2 = loss2 ? gad_add(loss2, t) : t;
            }
            if (loss2) {
                record(p, "loss2", check_tensor(p, loss2, "loss2"));
                st = gad_grad(loss2, p->leaves, n, g2);
                /* fused ops may refuse a second derivative (unsupported) */
                check_grads(p, st, g2, n, p->leaves, "second-order grad", 1);
            }
            gad_clear_error();
        }
    }
    if ((p->flags & F_HVP) && n > 0) {
        gad_tensor *v[MAX_LEAVES], *hv[MAX_LEAVES];
        random_like(p, v, p->leaves, n);
        st = gad_hvp(loss, p->leaves, v, n, hv);
        check_grads(p, st, hv, n, p->leaves, "hvp", 1);
    }
    if ((p->flags & F_JVP) && n > 0 && p->nsteps > 0) {
        gad_tensor *out = p->reg[p->nsteps - 1], *v[MAX_LEAVES], *jv = NULL;
        random_like(p, v, p->leaves, n);
        st = gad_jvp(out, p->leaves, v, n, &jv);
        check_grads(p, st, &jv, 1, NULL, "jvp", 1);
        if (st == GAD_OK && (!same_shape(jv, out) || gad_dtype(jv) != gad_dtype(out)))
            fail("jvp: the result does not have the output's shape and dtype");
    }
    if ((p->flags2 & F2_CLIP) && n > 0) {
        double norm = gad_clip_grad_norm(g, n, 1.0);
        uint64_t h = hash_bytes(11, &norm, sizeof norm);
        if (isnan(norm) && gad_last_error()) h = hash_error(h, check_error("clip_grad_norm"));
        else if (gad_last_error()) fail("clip_grad_norm recorded an error but returned %g", norm);
        record(p, "clip", h);
        gad_clear_error();
    }
    if ((p->flags & F_OPTIM) && n > 0) {
        gad_optim *opt;
        unsigned b = p->seed;
        if (b & 1) {
            gad_sgd_opts o = {0.1, (b & 2) ? 0.9 : 0, (b & 6) == 6, (b & 8) ? 0.01 : 0};
            opt = gad_sgd_new(p->leaves, n, &o);
        } else {
            opt = gad_adamw_new(p->leaves, n, NULL);
        }
        if (!opt) {
            record(p, "optim_new", hash_error(13, check_error("optim_new")));
        } else {
            for (int k = 0; k < 2; k++) {
                st = gad_optim_step(opt, k ? NULL : g);
                record(p, "optim_step", check_status(st, "optim_step"));
                gad_clear_error();
            }
            for (int i = 0; i < n; i++) {
                record(p, "param", check_tensor(p, p->leaves[i], "param"));
                if (p->smooth && !p->unsure && !values_ok(p->leaves[i], INFINITY))
                    fail("an optimizer step made parameter %d non-finite", i);
            }
            int cnt = gad_optim_state(opt, NULL, NULL, 0);
            if (cnt < 0) fail("optim_state count failed");
            const char **names = calloc((size_t)cnt + 1, sizeof *names);
            gad_tensor **ts = calloc((size_t)cnt + 1, sizeof *ts);
            if (!names || !ts) abort();
            if (gad_optim_state(opt, names, ts, cnt) != cnt) fail("optim_state changed its count");
            st = gad_optim_load_state(opt, names, ts, cnt);
            record(p, "load_state", check_status(st, "optim_load_state"));
            if (st != GAD_OK) fail("optim_load_state refused the optimizer's own state");
            free(names);
            free(ts);
            gad_optim_free(opt);
        }
        gad_clear_error();
    }
}

/* Run the program. threads > 0: with that many kernel threads (and the
 * process-wide settings it asks for); 0: one of threaded mode's threads,
 * whose process-wide settings the main thread made, with the n tensors of
 * shared[] in its first registers. */
static void run_program(prog *p, const uint8_t *data, size_t size, int threads,
                        gad_tensor *const *shared, int nshared) {
    memset(p, 0, sizeof *p);
    cur = p;
    p->in = (rd){data, size, 0};
    p->flags = u8(&p->in);
    p->flags2 = u8(&p->in);
    p->seed = u8(&p->in);
    p->smooth = (int)(p->flags & F_SMOOTH);
    p->half = !(p->flags2 & F2_HALF)                 ? GAD_F32
              : (p->flags2 & F2_F16) && !p->smooth ? GAD_F16
                                                     : GAD_BF16;
    tracing = trace && (threads == 1 || (threads == 0 && nshared < 0));
    if (tracing)
        fprintf(stderr, "program: flags %02x %02x seed %u%s%s%s\n", p->flags, p->flags2, p->seed,
                p->smooth ? " (smooth)" : "", p->half != GAD_F32 ? " half " : "",
                p->half != GAD_F32 ? gad_dtype_name(p->half) : "");
    if (threads > 0) gad_set_num_threads(threads);
    gad_clear_error();
    gad_set_cache_limit((p->flags2 & F2_CACHE_OFF) ? 0 : ((size_t)256 << 20));
    int anomaly = threads > 0 ? gad_set_anomaly((p->flags & F_ANOMALY) != 0) : 0;
    p->rng = gad_rng_new(p->seed);
    if (!p->rng) abort();

    gad_scope_begin();
    if (nshared < 0) nshared = -nshared; /* (-n: the thread that traces) */
    for (int i = 0; i < nshared; i++) p->reg[p->nsteps++] = shared[i];
    while (p->nsteps < MAX_STEPS && p->in.i < p->in.n) {
        unsigned opc = u8(&p->in) % N_OPS;
        const op_entry *e = &smooth_ops[opc];
        p->skip = 0;
        p->aux_failed = 0;
        p->op = e->name;
        gad_tensor *t = e->fn(p);
        /* An optional operand the harness failed to draw (an attention mask,
         * running statistics) would leave its error pending beside a result
         * made without it: that step tests nothing, so it is skipped. */
        if (p->aux_failed) p->skip = 1;
        trace_result(p->nsteps, e->name, t, p->skip);
        if (!p->skip) record(p, e->name, check_tensor(p, t, e->name));
        else t = NULL;
        gad_clear_error();
        if (t && p->half != GAD_F32 && gad_dtype(t) == p->half) {
            t = gad_cast(t, GAD_F32); /* differentiable: the gradient comes back in half */
            if (!t) record(p, "widen", check_tensor(p, NULL, "widen"));
            gad_clear_error();
        }
        p->reg[p->nsteps++] = t;
    }
    while (p->nograd > 0) {
        gad_no_grad_end();
        p->nograd--;
    }
    if (!gad_grad_enabled()) fail("no-grad mode left on");
    grad_phase(p);
    gad_clear_error();
    if (gad_scope_depth() != 1) fail("scope depth %d inside the program", gad_scope_depth());
    gad_scope_end();
    if (gad_scope_depth() != 0) fail("scope depth %d after the program", gad_scope_depth());
    for (int i = 0; i < p->nleaves; i++) gad_release(p->leaves[i]);
    gad_rng_free(p->rng);
    if (threads > 0) gad_set_anomaly(anomaly);
    gad_clear_error();
}

static prog runs[2];

/* ------------------------------------------------------- threaded mode */

#define MAX_THREADS 4
static prog truns[MAX_THREADS];

typedef struct thread_job {
    const uint8_t *data;
    size_t size;
    prog *p;
    gad_tensor *snap[NSHARED];
} thread_job;

static void *thread_main(void *arg) {
    thread_job *j = arg;
    run_program(j->p, j->data, j->size, 0, j->snap, j->p == &truns[0] ? -NSHARED : NSHARED);
    return NULL;
}

/* Hash of every element of t (a constant of threaded mode). */
static uint64_t hash_values(gad_tensor *t) {
    double v[12];
    int64_t n = gad_numel(t);
    if (n > 12 || gad_read_f64(t, v, 12) != GAD_OK) fail("shared constant unreadable");
    uint64_t h = 0;
    for (int64_t i = 0; i < n; i++) {
        uint64_t bits;
        memcpy(&bits, &v[i], sizeof bits);
        h = mix(h, bits);
    }
    return h;
}

static void run_threaded(const uint8_t *data, size_t size) {
    int nt = 2 + (int)(((size > 1 ? data[1] : 0) >> 5) % 3);
    unsigned seed = size > 2 ? data[2] : 0;
    gad_set_num_threads(2); /* the workers are shared by the callers */
    int anomaly = gad_set_anomaly(size > 0 && (data[0] & F_ANOMALY));
    gad_rng *r = gad_rng_new(seed ^ 0x5au);
    if (!r) abort();
    gad_tensor *c[NSHARED] = {
        gad_rng_normal_tensor(r, (int64_t[]){4}, 1, GAD_F32, 0, 1),
        gad_rng_uniform_tensor(r, (int64_t[]){2, 3}, 2, GAD_F64, -2, 2),
        gad_rng_uniform_tensor(r, (int64_t[]){3, 4}, 2, GAD_F32, -1, 1),
        gad_from_i64((const int64_t[]){0, 1, 1}, (int64_t[]){3}, 1),
    };
    gad_rng_free(r);
    uint64_t before[NSHARED];
    for (int i = 0; i < NSHARED; i++) {
        if (!c[i]) fail("threaded mode: a shared constant could not be made");
        before[i] = hash_values(c[i]);
    }
    thread_job jobs[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    for (int t = 0; t < nt; t++) {
        jobs[t] = (thread_job){data, size, &truns[t], {NULL}};
        for (int i = 0; i < NSHARED; i++)
            if (!(jobs[t].snap[i] = gad_detach(c[i]))) fail("threaded mode: gad_detach failed");
    }
    for (int t = 0; t < nt; t++)
        if (pthread_create(&th[t], NULL, thread_main, &jobs[t]) != 0) fail("pthread_create");
    for (int t = 0; t < nt; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < nt; t++)
        for (int i = 0; i < NSHARED; i++) gad_release(jobs[t].snap[i]);
    for (int i = 0; i < NSHARED; i++) {
        if (hash_values(c[i]) != before[i])
            fail("threaded mode: shared constant %d changed", i);
        gad_release(c[i]);
    }
    gad_set_anomaly(anomaly);
    for (int t = 1; t < nt; t++) {
        const prog *a = &truns[0], *b = &truns[t];
        if (a->nrec != b->nrec)
            fail("threaded mode: thread 0 made %d records, thread %d %d", a->nrec, t, b->nrec);
        for (int i = 0; i < a->nrec; i++)
            if (a->recs[i].h != b->recs[i].h || a->recs[i].label != b->recs[i].label)
                fail("threaded mode: thread %d differs from thread 0 in '%s' at step %d "
                     "(record %d)", t, a->recs[i].label, a->recs[i].step, i);
    }
}

/* Under ASan and TSan, an allocation too large to make returns NULL (gad
 * reports a memory error) instead of ending the run: programs on empty
 * tensors with huge dims may legitimately ask for 2^59 elements. */
/* They run before the sanitizer is initialized: no instrumentation (TSan's
 * function-entry hook crashed the libFuzzer build there). */
#if defined(__clang__) && __clang_major__ >= 14
#define NO_SANITIZER_HOOKS __attribute__((disable_sanitizer_instrumentation))
#else
#define NO_SANITIZER_HOOKS
#endif
const char *__asan_default_options(void);
NO_SANITIZER_HOOKS const char *__asan_default_options(void) {
    return "allocator_may_return_null=1";
}
const char *__tsan_default_options(void);
NO_SANITIZER_HOOKS const char *__tsan_default_options(void) {
    return "allocator_may_return_null=1";
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    /* workers that spin while idle would steal the other core */
    setenv("GAD_SPIN_US", "0", 0);
    trace = getenv("FUZZ_OPS_TRACE") != NULL;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gad_mem_stats m0, m1;
    gad_mem_stats_get(&m0);
    if (size > 1 && (data[1] & F2_THREADED)) {
        run_threaded(data, size);
        gad_mem_stats_get(&m1);
        if (m1.live_tensors != m0.live_tensors || m1.live_storages != m0.live_storages)
            fail("threaded mode leak: %lld tensors and %lld storages alive after the "
                 "program (%lld and %lld before)", (long long)m1.live_tensors,
                 (long long)m1.live_storages, (long long)m0.live_tensors,
                 (long long)m0.live_storages);
        return 0;
    }
    for (int k = 0; k < 2; k++) {
        run_program(&runs[k], data, size, k + 1, NULL, 0);
        gad_mem_stats_get(&m1);
        if (m1.live_tensors != m0.live_tensors || m1.live_storages != m0.live_storages)
            fail("leak: %lld tensors and %lld storages alive after the program "
                 "(%lld and %lld before)", (long long)m1.live_tensors,
                 (long long)m1.live_storages, (long long)m0.live_tensors,
                 (long long)m0.live_storages);
    }
    const prog *a = &runs[0], *b = &runs[1];
    if (a->nrec != b->nrec)
        fail("1 thread made %d records, 2 threads %d", a->nrec, b->nrec);
    for (int i = 0; i < a->nrec; i++)
        if (a->recs[i].h != b->recs[i].h || a->recs[i].label != b->recs[i].label)
            fail("thread count changes the result of '%s' at step %d (record %d)",
                 a->recs[i].label, a->recs[i].step, i);
    return 0;
}
