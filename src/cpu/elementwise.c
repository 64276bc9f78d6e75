/* elementwise.c: unary, binary and gradient elementwise kernels over any
 * strides, broadcasting by zero strides (SPEC §3.1, §3.2). The loops are
 * written for the compiler to vectorize; each kernel is compiled for
 * AVX-512 and AVX2 as well as the baseline and picked at load time
 * (GAD_CLONES). f32 exp and tanh come from vmath.h, f64 from libm. The
 * kernels are elementwise_kern.h's: the f32 ones of all rows but the math
 * family's are compiled here, the others in elementwise_cold.c. */
#define EW_EMIT_CORE_f32(...) __VA_ARGS__
#define EW_EMIT_CORE_f64(...)
#define EW_EMIT_MATH_f32(...)
#define EW_EMIT_MATH_f64(...)
#define EW_TABLE_STORAGE static
#define EW_UNARY_TABLE core_unary
#define EW_BINARY_TABLE core_binary
#define EW_GRAD_TABLE core_grad
#include "cpu/elementwise_kern.h"
#include "iter.h"

static const bool unary_light[GAD_UK_COUNT_] = {
#define UNARY(ID, name, args, pwords, save, fwd, cost, ...) [GAD_UK_##ID] = IS_LIGHT_##cost,
#define UKERNEL(ID, fwd, cost) [GAD_UK_##ID] = IS_LIGHT_##cost,
#include "backend/elementwise.def"
};

static const bool grad_light[GAD_GK_COUNT_] = {
#define UNARY(ID, name, args, pwords, save, fwd, cost, vjp, grad, gcost, ...)  \
    GAD_EW_##vjp([GAD_GK_##ID] = IS_LIGHT_##gcost,)
#include "backend/elementwise.def"
};

/* The kernel of row k in the dtype: this file's or elementwise_cold.c's. */
static inline ukern unary_kernel(gad_ukernel k, bool f64) {
    ukern f = core_unary[k][f64];
    return f ? f : gad__ew_cold_unary[k][f64];
}
static inline bkern binary_kernel(gad_bkernel k, bool f64) {
    bkern f = core_binary[k][f64];
    return f ? f : gad__ew_cold_binary[k][f64];
}
static inline bkern grad_kernel(gad_gkernel k, bool f64) {
    bkern f = core_grad[k][f64];
    return f ? f : gad__ew_cold_grad[k][f64];
}

/* ---------------------------------------------------------------- drivers */

/* Element ranges of an output in row-major order, walked over an iterator
 * whose operands are the inputs. */
typedef struct ew_ctx {
    gad_iter it;
    const char *in[2];
    char *out;
    size_t es;
    ukern uk;
    bkern bk;
    gad_vkernel vk; /* replaces uk where the input is contiguous */
    gad_sbkernel sb; /* replaces a streamed bk where both inputs are contiguous */
    const gad_uparams *p;
    bool stream; /* write the output with streaming stores */
    int half;    /* GAD_F16 or GAD_BF16: 2-byte operands, f32 kernels; else 0 */
} ew_ctx;

/* Outputs of at least this many bytes are written with streaming stores
 * (stream.c): far larger than the L2 of the cores that write them, they
 * would be evicted before anyone reads them back, and skipping the
 * read-for-ownership saves a quarter of c = a + b's memory traffic. */
#define EW_STREAM_BYTES ((int64_t)16 << 20)
/* Streamed outputs are computed a tile at a time into L1, then stored. A
 * kernel bound by arithmetic (exp, tanh, pow) then stalls on each tile's
 * burst of stores, where storing as it goes would hide them: those, the
 * HEAVY ones of elementwise.def's cost and gcost fields, keep ordinary
 * stores unless written by hand (gad_vkernel). Binary kernels, div's
 * included, all stream. */
#define EW_TILE 1024

/* The hand-written kernel of (k, dtype), if this CPU runs one. */
static gad_vkernel ew_vkernel(gad_ukernel k, int dtype) {
    return k == GAD_UK_GELU && dtype == GAD_F32 ? gad__vk_gelu_f32() : NULL;
}

static void ew_call(const ew_ctx *c, int64_t len, const char *x0, int64_t s0,
                    const char *x1, int64_t s1, char *y) {
    if (c->uk) c->uk(len, x0, s0, y, c->p);
    else c->bk(len, x0, s0, x1, s1, y, c->p);
}

static void ew_call_stream(const ew_ctx *c, int64_t len, const char *x0, int64_t s0,
                           const char *x1, int64_t s1, char *y) {
    _Alignas(64) char tile[EW_TILE];
    const int64_t es = (int64_t)c->es, per = EW_TILE / es;
    /* The first tile ends where a cache line of y does, so that every
     * later tile starts on one and streams whole lines. */
    int64_t k = (int64_t)((-(uintptr_t)y & 63) / (uintptr_t)es);
    if (k == 0) k = per;
    for (int64_t i = 0; i < len; i += k, k = per) {
        if (k > len - i) k = len - i;
        ew_call(c, k, x0 + i * s0 * es, s0, x1 ? x1 + i * s1 * es : NULL, s1, tile);
        gad__stream_store(y + i * es, tile, (size_t)(k * es));
    }
}

/* A hand-written kernel reads contiguous input: strided input is gathered
 * a tile at a time first, so that a result never depends on the layout. */
static void ew_call_vk(const ew_ctx *c, int64_t len, const float *x, int64_t sx, float *y) {
    if (sx == 1) {
        c->vk(len, x, y, c->stream);
        return;
    }
    _Alignas(64) float tile[EW_TILE / sizeof(float)];
    const int64_t per = EW_TILE / (int64_t)sizeof(float);
    for (int64_t i = 0; i < len; i += per) {
        int64_t k = len - i < per ? len - i : per;
        for (int64_t j = 0; j < k; j++) tile[j] = x[(i + j) * sx];
        c->vk(k, tile, y + i, c->stream);
    }
}

/* ------------------------------------------------------------ f16, bf16
 * Half operands go through the f32 kernels a tile at a time: each input
 * tile is widened (exactly) into an f32 buffer on the stack, the kernel
 * runs on it, and its results are rounded once (to nearest even, half.h's
 * bits) into the output. Nothing of the tensors' size is allocated, so the
 * memory traffic stays that of 2-byte data. A result's bits are those of
 * the f32 op on the widened inputs, rounded. */
#define EW_HTILE 1024

#define half_widen gad__half_widen
#define half_narrow gad__half_narrow

/* One input tile of k elements from x at stride s: a broadcast input
 * (s == 0) is widened once and read at stride 0 (*fs), as the kernel
 * would read it. */
static inline void half_tile_in(int dt, int64_t k, const char *x, int64_t s, float *buf,
                                int64_t *fs) {
    if (s == 0) {
        half_widen(dt, 1, (const uint16_t *)x, 0, buf);
        *fs = 0;
    } else {
        half_widen(dt, k, (const uint16_t *)x, s, buf);
        *fs = 1;
    }
}

static void ew_call_half(const ew_ctx *c, int64_t len, const char *x0, int64_t s0,
                         const char *x1, int64_t s1, char *y) {
    _Alignas(64) float a[EW_HTILE], b[EW_HTILE], r[EW_HTILE];
    _Alignas(64) uint16_t h[EW_HTILE];
    const int dt = c->half;
    uint16_t *yh = (uint16_t *)y;
    for (int64_t i = 0; i < len; i += EW_HTILE) {
        int64_t k = len - i < EW_HTILE ? len - i : EW_HTILE, fa, fb;
        if (c->vk) { /* a hand-written kernel reads contiguous input */
            half_widen(dt, k, (const uint16_t *)x0 + i * s0, s0, a);
            c->vk(k, a, r, false);
        } else {
            half_tile_in(dt, k, x0 + i * s0 * 2, s0, a, &fa);
            if (c->uk) {
                c->uk(k, a, fa, r, c->p);
            } else {
                half_tile_in(dt, k, x1 + i * s1 * 2, s1, b, &fb);
                c->bk(k, a, fa, b, fb, r, c->p);
            }
        }
        if (c->stream) {
            half_narrow(dt, k, r, h, 1);
            gad__stream_store(yh + i, h, (size_t)k * 2);
        } else {
            half_narrow(dt, k, r, yh + i, 1);
        }
    }
}

static void ew_range(void *vctx, int64_t lo, int64_t hi) {
    ew_ctx *c = vctx;
    const gad_iter *it = &c->it;
    int64_t inner = it->inner, nd = it->nd;
    int64_t idx[GAD_MAX_RANK], off[GAD_ITER_MAXOPS];
    int64_t o = lo / inner, j = lo % inner, pos = lo;
    gad__iter_seek(it, o, idx, off);
    int64_t s0 = it->strides[0][nd - 1], s1 = it->nops > 1 ? it->strides[1][nd - 1] : 0;
    while (pos < hi) {
        int64_t len = inner - j < hi - pos ? inner - j : hi - pos;
        const char *x0 = c->in[0] + (off[0] + j * s0) * (int64_t)c->es; /* may step back */
        const char *x1 = c->bk ? c->in[1] + (off[1] + j * s1) * (int64_t)c->es : NULL;
        char *y = c->out + (size_t)pos * c->es;
        if (c->half)
            ew_call_half(c, len, x0, s0, x1, s1, y);
        else if (c->vk)
            ew_call_vk(c, len, (const float *)x0, s0, (float *)y);
        else if (c->sb && s0 == 1 && s1 == 1)
            c->sb(len, (const float *)x0, (const float *)x1, (float *)y);
        else
            (c->stream ? ew_call_stream : ew_call)(c, len, x0, s0, x1, s1, y);
        pos += len;
        j = 0;
        gad__iter_next(it, idx, off);
    }
    if (c->stream) gad__stream_fence(); /* before the threads join */
}

/* Below this many elements per thread, extra threads cost more than they
 * save. */
#define EW_GRAIN 16384

static const gad_uparams no_params = {0, 0};

GAD_HOT void gad__k_unary(gad_ukernel k, const gad_tensor *x, gad_tensor *y,
                  const gad_uparams *p) {
    if (x->numel == 0) return;
    ew_ctx c;
    c.half = gad__is_half(x->dtype) ? x->dtype : 0;
    c.uk = unary_kernel(k, x->dtype == GAD_F64);
    c.bk = NULL;
    c.p = p ? p : &no_params;
    c.es = gad__dsize(x->dtype);
    c.in[0] = gad__ptr(x);
    c.out = gad__ptr(y);
    c.vk = ew_vkernel(k, c.half ? GAD_F32 : x->dtype);
    c.sb = NULL;
    c.stream = x->numel * (int64_t)c.es >= EW_STREAM_BYTES && (unary_light[k] || c.vk);
    if (x->contig && x->numel < 2 * EW_GRAIN) { /* the small fast path */
        if (c.half)
            ew_call_half(&c, x->numel, c.in[0], 1, NULL, 0, c.out);
        else if (c.vk) ew_call_vk(&c, x->numel, (const float *)c.in[0], 1, (float *)c.out);
        else c.uk(x->numel, c.in[0], 1, c.out, c.p);
        return;
    }
    const int64_t *strides[1] = {x->strides};
    gad__iter_init(&c.it, x->shape, x->rank, 1, strides);
    gad__parallel_for_ew(x->numel, EW_GRAIN, ew_range, &c);
}

void gad__ew_unary_span(gad_ukernel k, bool f64, int64_t n, const void *x, void *y,
                        const gad_uparams *p) {
    gad_vkernel vk = ew_vkernel(k, f64 ? GAD_F64 : GAD_F32);
    if (vk) vk(n, x, y, false);
    else unary_kernel(k, f64)(n, x, 1, y, p ? p : &no_params);
}

void gad__ew_grad_span(gad_gkernel k, bool f64, int64_t n, const void *gy, const void *v,
                       void *out, const gad_uparams *p) {
    grad_kernel(k, f64)(n, gy, 1, v, 1, out, p ? p : &no_params);
}

/* sbk: the binary row whose streamed f32 kernel may replace bk (stream.c),
 * or -1 for none; looked up only for outputs that stream. */
GAD_HOT static void run_binary(bkern bk, int sbk, bool light, const gad_tensor *a,
                               const gad_tensor *b, gad_tensor *y, const gad_uparams *p) {
    if (y->numel == 0) return;
    int half = gad__is_half(y->dtype) ? y->dtype : 0;
    if (!half && a->contig && b->contig && a->numel == y->numel && b->numel == y->numel &&
        y->numel < 2 * EW_GRAIN) { /* the small fast path */
        bk(y->numel, gad__ptr(a), 1, gad__ptr(b), 1, gad__ptr(y), p ? p : &no_params);
        return;
    }
    ew_ctx c;
    c.half = half;
    c.uk = NULL;
    c.bk = bk;
    c.p = p ? p : &no_params;
    c.es = gad__dsize(y->dtype);
    c.in[0] = gad__ptr(a);
    c.in[1] = gad__ptr(b);
    c.out = gad__ptr(y);
    c.vk = NULL;
    c.stream = y->numel * (int64_t)c.es >= EW_STREAM_BYTES && light;
    c.sb = c.stream && sbk >= 0 && y->dtype == GAD_F32
               ? gad__stream_binary_f32((gad_bkernel)sbk) : NULL;
    int64_t sa[GAD_MAX_RANK], sb[GAD_MAX_RANK];
    gad__broadcast_strides(a, y->shape, y->rank, sa);
    gad__broadcast_strides(b, y->shape, y->rank, sb);
    const int64_t *strides[2] = {sa, sb};
    gad__iter_init(&c.it, y->shape, y->rank, 2, strides);
    gad__parallel_for_ew(y->numel, EW_GRAIN, ew_range, &c);
}

GAD_HOT void gad__k_binary(gad_bkernel k, const gad_tensor *a, const gad_tensor *b,
                   gad_tensor *y) {
    run_binary(binary_kernel(k, y->dtype == GAD_F64), (int)k, true, a, b, y, NULL);
}

GAD_HOT void gad__k_grad(gad_gkernel k, const gad_tensor *gy, const gad_tensor *v, gad_tensor *out,
                 const gad_uparams *p) {
    run_binary(grad_kernel(k, out->dtype == GAD_F64), -1, grad_light[k], gy, v, out, p);
}
