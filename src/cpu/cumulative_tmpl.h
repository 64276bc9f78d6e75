/* cumulative_tmpl.h: the cumulative family's kernels written once for an
 * element type T with suffix SFX (included by cumulative.c for float and
 * double through stamp.h, and for int64_t and bool through stamp_int.h).
 * x is seen as [outer, n, inner] around the axis; a unit of work is one
 * outer index and up to CUM_LANES neighbouring inner positions, whose
 * running values stay in registers (ACC: double, for f32 too, as PyTorch's
 * CPU kernels accumulate; for integers uint64_t, which wraps as PyTorch's
 * int64 does, without signed overflow) while the axis is walked, so the
 * inner loop runs over contiguous lanes. Units are split over threads,
 * never a running value: the result does not depend on the thread count.
 * The output YT is T for floats and int64_t for integers (PyTorch's cumsum
 * and cumprod of bool and int64 give int64). */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(CAT(name, _), SFX)

#if SFX_IS_INT
#define ACC uint64_t
#define YT int64_t
#else
#define ACC double
#define YT T
#endif

#define CUM_LANES 64

typedef struct {
    const T *x, *gy;
    YT *y;
    int64_t n, inner, chunks;
    int reverse;
} FN(cum_ctx);

/* unit w: its first element and its lanes */
static inline int64_t FN(unit)(const FN(cum_ctx) *c, int64_t w, int64_t *lanes) {
    int64_t o = w / c->chunks, j0 = (w % c->chunks) * CUM_LANES;
    *lanes = c->inner - j0 < CUM_LANES ? c->inner - j0 : CUM_LANES;
    return o * c->n * c->inner + j0;
}

GAD_CLONES static void FN(cumsum_range)(void *vc, int64_t lo, int64_t hi) {
    FN(cum_ctx) *c = vc;
    int64_t n = c->n, in = c->inner;
    if (in == 1) { /* along the last dim: one running value in a register */
        for (int64_t w = lo; w < hi; w++) {
            const T *x = c->x + w * n;
            YT *y = c->y + w * n;
            ACC acc = 0;
            if (c->reverse)
                for (int64_t i = n - 1; i >= 0; i--) y[i] = (YT)(acc += (ACC)x[i]);
            else
                for (int64_t i = 0; i < n; i++) y[i] = (YT)(acc += (ACC)x[i]);
        }
        return;
    }
    for (int64_t w = lo; w < hi; w++) {
        int64_t L, base = FN(unit)(c, w, &L);
        ACC acc[CUM_LANES] = {0};
        for (int64_t t = 0; t < n; t++) {
            int64_t i = c->reverse ? n - 1 - t : t;
            const T *x = c->x + base + i * in;
            YT *y = c->y + base + i * in;
            for (int64_t l = 0; l < L; l++) {
                acc[l] += (ACC)x[l];
                y[l] = (YT)acc[l];
            }
        }
    }
}

GAD_CLONES static void FN(cumprod_range)(void *vc, int64_t lo, int64_t hi) {
    FN(cum_ctx) *c = vc;
    int64_t n = c->n, in = c->inner;
    if (in == 1) {
        for (int64_t w = lo; w < hi; w++) {
            const T *x = c->x + w * n;
            YT *y = c->y + w * n;
            ACC acc = 1;
            for (int64_t i = 0; i < n; i++) y[i] = (YT)(acc *= (ACC)x[i]);
        }
        return;
    }
    for (int64_t w = lo; w < hi; w++) {
        int64_t L, base = FN(unit)(c, w, &L);
        ACC acc[CUM_LANES];
        for (int64_t l = 0; l < CUM_LANES; l++) acc[l] = 1;
        for (int64_t i = 0; i < n; i++) {
            const T *x = c->x + base + i * in;
            YT *y = c->y + base + i * in;
            for (int64_t l = 0; l < L; l++) {
                acc[l] *= (ACC)x[l];
                y[l] = (YT)acc[l];
            }
        }
    }
}

#if !SFX_IS_INT
/* gx_k = E_k S_k (cumulative.h): E forward into gx, then S backward. */
GAD_CLONES static void FN(cumprod_bwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(cum_ctx) *c = vc;
    int64_t n = c->n, in = c->inner;
    for (int64_t w = lo; w < hi; w++) {
        int64_t L, base = FN(unit)(c, w, &L);
        double acc[CUM_LANES];
        for (int64_t l = 0; l < CUM_LANES; l++) acc[l] = 1;
        for (int64_t i = 0; i < n; i++) {
            const T *x = c->x + base + i * in;
            T *g = c->y + base + i * in;
            for (int64_t l = 0; l < L; l++) {
                g[l] = (T)acc[l];
                acc[l] *= (double)x[l];
            }
        }
        for (int64_t l = 0; l < CUM_LANES; l++) acc[l] = 0;
        for (int64_t i = n - 1; i >= 0; i--) {
            const T *gy = c->gy + base + i * in;
            const T *xn = i + 1 < n ? c->x + base + (i + 1) * in : NULL;
            T *g = c->y + base + i * in;
            for (int64_t l = 0; l < L; l++) {
                acc[l] = (double)gy[l] + (xn ? (double)xn[l] * acc[l] : 0.0);
                g[l] = (T)((double)g[l] * acc[l]);
            }
        }
    }
}

#endif

static void FN(cum_run)(FN(cum_ctx) *c, int64_t outer, void (*fn)(void *, int64_t, int64_t)) {
    c->chunks = (c->inner + CUM_LANES - 1) / CUM_LANES;
    int64_t per = c->n * (c->inner < CUM_LANES ? c->inner : CUM_LANES);
    if (outer * c->chunks > 0 && c->n > 0)
        gad__parallel_for(outer * c->chunks, 65536 / (per + 1) + 1, fn, c);
}

static void FN(cumsum_rows)(const T *x, YT *y, int64_t outer, int64_t n, int64_t inner,
                            int reverse) {
    FN(cum_ctx) c = {.x = x, .y = y, .n = n, .inner = inner, .reverse = reverse};
    FN(cum_run)(&c, outer, FN(cumsum_range));
}

static void FN(cumprod_rows)(const T *x, YT *y, int64_t outer, int64_t n, int64_t inner) {
    FN(cum_ctx) c = {.x = x, .y = y, .n = n, .inner = inner};
    FN(cum_run)(&c, outer, FN(cumprod_range));
}

#if !SFX_IS_INT
static void FN(cumprod_bwd_rows)(const T *x, const T *gy, T *gx, int64_t outer, int64_t n,
                                 int64_t inner) {
    FN(cum_ctx) c = {.x = x, .gy = gy, .y = gx, .n = n, .inner = inner};
    FN(cum_run)(&c, outer, FN(cumprod_bwd_range));
}
#endif

#undef CUM_LANES
#undef ACC
#undef YT
#undef FN
#undef CAT
#undef CAT_
