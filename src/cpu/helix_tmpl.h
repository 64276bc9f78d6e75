/* helix_tmpl.h: the HELIX block's forward and backward (docs/helix.md),
 * written once for an element type T with suffix SFX (included by helix.c
 * for float and double). Loops are split over threads by independent rows or
 * channels, never across a sum, so results do not depend on the thread
 * count. */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(CAT(name, _), SFX)

#include "cpu/row_tmpl.h"

#if SFX_IS_F32
#define GEMM gad__sgemm
#else
#define GEMM gad__dgemm
#endif

/* the same sigmoid as the elementwise kernels use (vmath.h for f32), so
 * that the block and its composition agree to rounding */
#if SFX_IS_F32
static inline T FN(sigm)(T v) { return gad__sigmoidf(v); }
#else
static inline T FN(sigm)(T v) { return (T)1 / ((T)1 + exp(-v)); }
#endif

typedef struct {
    T *buf;
    gad_storage *st;
} FN(tmp);

static T *FN(tmp_new)(FN(tmp) *t, int64_t n) {
    t->st = gad__storage_new((size_t)(n ? n : 1) * sizeof(T));
    t->buf = t->st ? gad__storage_data(t->st) : NULL;
    return t->buf;
}

/* Column sums of a [M, n] product p * q (q may be NULL for p alone) into
 * out[n]. Threads own blocks of columns and walk all rows in order, so each
 * sum has the same order whatever the thread count, and rows are read
 * contiguously. */
typedef struct {
    const T *p, *q;
    T *out;
    int64_t M, n;
} FN(colsum_ctx);

#define COLSUM_TILE 64

GAD_CLONES static void FN(colsum_range)(void *vc, int64_t lo, int64_t hi) {
    FN(colsum_ctx) *c = vc;
    double acc[COLSUM_TILE];
    for (int64_t j0 = lo * COLSUM_TILE; j0 < hi * COLSUM_TILE && j0 < c->n; j0 += COLSUM_TILE) {
        int64_t w = c->n - j0 < COLSUM_TILE ? c->n - j0 : COLSUM_TILE;
        for (int64_t j = 0; j < w; j++) acc[j] = 0;
        for (int64_t m = 0; m < c->M; m++) {
            const T *p = c->p + m * c->n + j0;
            if (c->q) {
                const T *q = c->q + m * c->n + j0;
                for (int64_t j = 0; j < w; j++) acc[j] += (double)p[j] * (double)q[j];
            } else {
                for (int64_t j = 0; j < w; j++) acc[j] += (double)p[j];
            }
        }
        for (int64_t j = 0; j < w; j++) c->out[j0 + j] = (T)acc[j];
    }
}

static void FN(colsum)(const T *p, const T *q, T *out, int64_t M, int64_t n) {
    FN(colsum_ctx) c = {p, q, out, M, n};
    gad__parallel_for((n + COLSUM_TILE - 1) / COLSUM_TILE, 1, FN(colsum_range), &c);
}

/* silu'(z) = s (1 + z (1 - s)), s = sigmoid(z) */
static inline T FN(dsilu)(T z) {
    T s = FN(sigm)(z);
    return s * ((T)1 + z * ((T)1 - s));
}

/* ---- row passes of the block: each a loop over rows [lo, hi) of [M, D]
 * (or [M, 2D]) buffers, run in parallel; the fusion keeps the number of
 * passes over memory small. */
#ifndef GAD_HX_PASSES
#define GAD_HX_PASSES
enum {
    HX_XN,       /* o = rms(x) * g (and rn = rms(x) when rn != NULL) */
    HX_GATE,     /* o = sigmoid(o + bias) */
    HX_S2,       /* o = silu(h * g2) */
    HX_RES_NORM, /* out1 = t + x (in place in t); o = rms(out1) * g3 */
    HX_SILU2,    /* o = silu(f1) on [M, 2D] */
    HX_OUT,      /* y = out1 + f2 * g4 */
    HX_DM,       /* o = gy * g4 */
    HX_DPRE,     /* o *= silu'(f1) on [M, 2D] */
    HX_RMS_BWD,  /* o = rms_bwd(x, g * gain) + add (add may be NULL) */
    HX_GHG,      /* o *= silu'(h * g2) */
    HX_DH,       /* o *= g2 */
    HX_GUA       /* o *= a (1 - a) */
};
#endif

typedef struct {
    int pass;
    int64_t D;
    double eps;
    const T *x, *h, *g, *gain, *add, *bias;
    T *o, *rn;
} FN(pass_ctx);

GAD_CLONES static void FN(pass_range)(void *vc, int64_t lo, int64_t hi) {
    FN(pass_ctx) *c = vc;
    int64_t D = c->D, W = (c->pass == HX_SILU2 || c->pass == HX_DPRE) ? 2 * D : D;
    for (int64_t m = lo; m < hi; m++) {
        T *o = c->o + m * W;
        const T *x = c->x ? c->x + m * W : NULL;
        switch (c->pass) {
        case HX_XN: {
            T r = (T)FN(rms_inv)(x, D, c->eps);
            T *rn = c->rn ? c->rn + m * D : NULL;
            for (int64_t d = 0; d < D; d++) o[d] = x[d] * r * c->gain[d];
            if (rn)
                for (int64_t d = 0; d < D; d++) rn[d] = x[d] * r;
            break;
        }
        case HX_GATE:
            for (int64_t d = 0; d < D; d++) o[d] = FN(sigm)(o[d] + c->bias[d]);
            break;
        case HX_S2:
            for (int64_t d = 0; d < D; d++) {
                T v = x[d] * c->gain[d];
                o[d] = v * FN(sigm)(v);
            }
            break;
        case HX_RES_NORM: {
            T *t = (T *)c->h + m * D; /* the GEMM's output becomes out1 */
            for (int64_t d = 0; d < D; d++) t[d] += x[d];
            T r = (T)FN(rms_inv)(t, D, c->eps);
            for (int64_t d = 0; d < D; d++) o[d] = t[d] * r * c->gain[d];
            break;
        }
        case HX_SILU2:
            for (int64_t d = 0; d < W; d++) o[d] = x[d] * FN(sigm)(x[d]);
            break;
        case HX_OUT:
            for (int64_t d = 0; d < D; d++) o[d] = c->h[m * D + d] + x[d] * c->gain[d];
            break;
        case HX_DM:
            for (int64_t d = 0; d < D; d++) o[d] = x[d] * c->gain[d];
            break;
        case HX_DPRE:
            for (int64_t d = 0; d < W; d++) o[d] *= FN(dsilu)(x[d]);
            break;
        case HX_RMS_BWD: {
            /* g * gain is the upstream gradient of rms(x) */
            const T *g = c->g + m * D;
            double inv = FN(rms_inv)(x, D, c->eps), dot = FN(dot)(x, g, c->gain, D);
            T a = (T)inv, b = (T)(inv * inv * inv * dot / (double)D);
            const T *add = c->add ? c->add + m * D : NULL;
            for (int64_t d = 0; d < D; d++) {
                T v = g[d] * c->gain[d] * a - x[d] * b;
                o[d] = add ? v + add[d] : v;
            }
            break;
        }
        case HX_GHG:
            for (int64_t d = 0; d < D; d++) o[d] *= FN(dsilu)(x[d] * c->gain[d]);
            break;
        case HX_DH:
            for (int64_t d = 0; d < D; d++) o[d] *= c->gain[d];
            break;
        case HX_GUA:
            for (int64_t d = 0; d < D; d++) o[d] *= x[d] * ((T)1 - x[d]);
            break;
        }
    }
}

static void FN(pass)(int pass, int64_t M, int64_t D, FN(pass_ctx) c) {
    c.pass = pass;
    c.D = D;
    gad__parallel_for(M, 16384 / (D + 1) + 1, FN(pass_range), &c);
}

int FN(gad__helix_fwd)(const T *x, const void *wv, const void *sv, T *y, int64_t B,
                       int64_t T_, int64_t D, double eps) {
    const GAD_HELIX_PTRS(T) *w = wv;
    const GAD_HELIX_SAVED(T) *s = sv;
    int64_t M = B * T_, MD = M * D, D2 = 2 * D;
    FN(tmp) t1, t2, t3;
    memset(&t3, 0, sizeof t3);
    T *xn = FN(tmp_new)(&t1, MD), *ub = FN(tmp_new)(&t2, MD);
    int rc = -1;
    if (!xn || !ub || !FN(tmp_new)(&t3, M * D2)) goto out;
    T *sf1 = t3.buf;
    /* 1-4: xn = rms(x) g1; a = sigmoid(xn @ wa[:D] + wa[D]) */
    FN(pass)(HX_XN, M, D, (FN(pass_ctx)){.x = x, .gain = w->g1, .o = xn, .eps = eps});
    if (GEMM(0, 0, M, D, D, 1, xn, D, w->wa, D, 0, s->a, D)) goto out;
    FN(pass)(HX_GATE, M, D, (FN(pass_ctx)){.bias = w->wa + D * D, .o = s->a});
    /* 5-6: h = scan(a, xn @ wb) */
    if (GEMM(0, 0, M, D, D, 1, xn, D, w->wb, D, 0, ub, D)) goto out;
    FN(gad__scan_fwd)(s->a, ub, s->h, B, T_, D);
    /* 7-9: s2 = silu(h g2); out1 = x + s2 @ wo; xn2 = rms(out1) g3 */
    FN(pass)(HX_S2, M, D, (FN(pass_ctx)){.x = s->h, .gain = w->g2, .o = s->s2});
    if (GEMM(0, 0, M, D, D, 1, s->s2, D, w->wo, D, 0, s->out1, D)) goto out;
    FN(pass)(HX_RES_NORM, M, D,
             (FN(pass_ctx)){.x = x, .h = s->out1, .gain = w->g3, .o = s->xn2, .eps = eps});
    /* 10-11: f2 = silu(xn2 @ wf1) @ wf2; y = out1 + f2 g4 */
    if (GEMM(0, 0, M, D2, D, 1, s->xn2, D, w->wf1, D2, 0, s->f1, D2)) goto out;
    FN(pass)(HX_SILU2, M, D, (FN(pass_ctx)){.x = s->f1, .o = sf1});
    if (GEMM(0, 0, M, D, D2, 1, sf1, D2, w->wf2, D, 0, s->f2, D)) goto out;
    FN(pass)(HX_OUT, M, D, (FN(pass_ctx)){.x = s->f2, .h = s->out1, .gain = w->g4, .o = y});
    rc = 0;
out:
    gad__storage_release(t1.st);
    gad__storage_release(t2.st);
    gad__storage_release(t3.st);
    return rc;
}

int FN(gad__helix_bwd)(const T *x, const void *wv, const void *sv, const T *gy,
                       const void *gv, int64_t B, int64_t T_, int64_t D, double eps) {
    const GAD_HELIX_PTRS(T) *w = wv;
    const GAD_HELIX_SAVED(T) *s = sv;
    const GAD_HELIX_GRADS(T) *g = gv;
    int64_t M = B * T_, MD = M * D, D2 = 2 * D;
    enum { NT = 7 };
    FN(tmp) t[NT];
    memset(t, 0, sizeof t);
    T *dm = FN(tmp_new)(&t[0], MD), *sf1 = FN(tmp_new)(&t[1], M * D2);
    T *dpre = FN(tmp_new)(&t[2], M * D2), *dxn2 = FN(tmp_new)(&t[3], MD);
    T *dout1 = FN(tmp_new)(&t[4], MD), *gh = FN(tmp_new)(&t[5], MD);
    T *gb = FN(tmp_new)(&t[6], MD);
    int rc = -1;
    for (int i = 0; i < NT; i++)
        if (!t[i].buf) goto out;
    T *rn = sf1, *xn = dpre, *gua = dxn2; /* buffers reused once free */
    /* FFN: gg4; dm = gy g4; gwf2 = silu(f1)^T dm; d_pre = (dm @ wf2^T) silu'(f1) */
    if (g->g4) FN(colsum)(gy, s->f2, g->g4, M, D);
    FN(pass)(HX_DM, M, D, (FN(pass_ctx)){.x = gy, .gain = w->g4, .o = dm});
    FN(pass)(HX_SILU2, M, D, (FN(pass_ctx)){.x = s->f1, .o = sf1});
    if (g->wf2 && GEMM(1, 0, D2, D, M, 1, sf1, D2, dm, D, 0, g->wf2, D)) goto out;
    if (GEMM(0, 1, M, D2, D, 1, dm, D, w->wf2, D, 0, dpre, D2)) goto out;
    FN(pass)(HX_DPRE, M, D, (FN(pass_ctx)){.x = s->f1, .o = dpre});
    /* xn2 = rms(out1) g3 recomputed into dm (and rn = rms(out1) when gg3 is
     * needed); gwf1 = xn2^T d_pre; dxn2 = d_pre @ wf1^T */
    T *xn2 = dm;
    FN(pass)(HX_XN, M, D,
             (FN(pass_ctx)){.x = s->out1, .gain = w->g3, .o = xn2, .rn = g->g3 ? rn : NULL, .eps = eps});
    if (g->wf1 && GEMM(1, 0, D, D2, M, 1, xn2, D, dpre, D2, 0, g->wf1, D2)) goto out;
    if (GEMM(0, 1, M, D, D2, 1, dpre, D2, w->wf1, D2, 0, dxn2, D)) goto out;
    /* second norm: gg3 = sum dxn2 rms(out1); dout1 = rms_bwd(out1, dxn2 g3) + gy */
    if (g->g3) FN(colsum)(dxn2, rn, g->g3, M, D);
    FN(pass)(HX_RMS_BWD, M, D,
             (FN(pass_ctx)){.x = s->out1, .g = dxn2, .gain = w->g3, .add = gy, .o = dout1, .eps = eps});
    /* scan output: gwo = s2^T dout1 with s2 = silu(h g2) recomputed into dm;
     * ghg = (dout1 @ wo^T) silu'(h g2); gg2; dh */
    if (g->wo) {
        T *s2 = dm;
        FN(pass)(HX_S2, M, D, (FN(pass_ctx)){.x = s->h, .gain = w->g2, .o = s2});
        if (GEMM(1, 0, D, D, M, 1, s2, D, dout1, D, 0, g->wo, D)) goto out;
    }
    if (GEMM(0, 1, M, D, D, 1, dout1, D, w->wo, D, 0, gh, D)) goto out;
    FN(pass)(HX_GHG, M, D, (FN(pass_ctx)){.x = s->h, .gain = w->g2, .o = gh});
    if (g->g2) FN(colsum)(gh, s->h, g->g2, M, D);
    FN(pass)(HX_DH, M, D, (FN(pass_ctx)){.gain = w->g2, .o = gh});
    /* the scan: (ga, gb); gua = ga a (1 - a) */
    FN(gad__scan_bwd)(s->a, s->h, gh, gua, gb, B, T_, D);
    FN(pass)(HX_GUA, M, D, (FN(pass_ctx)){.x = s->a, .o = gua});
    /* xn = rms(x) g1 (recomputed; rn = rms(x)); gwa = [xn, 1]^T gua; gwb */
    FN(pass)(HX_XN, M, D, (FN(pass_ctx)){.x = x, .gain = w->g1, .o = xn, .rn = rn, .eps = eps});
    if (g->wa) {
        if (GEMM(1, 0, D, D, M, 1, xn, D, gua, D, 0, g->wa, D)) goto out;
        FN(colsum)(gua, NULL, g->wa + D * D, M, D); /* the bias row */
    }
    if (g->wb && GEMM(1, 0, D, D, M, 1, xn, D, gb, D, 0, g->wb, D)) goto out;
    /* dxn1 = gua @ wa[:D]^T + gb @ wb^T (into gh); gg1; dx */
    T *dxn1 = gh;
    if (GEMM(0, 1, M, D, D, 1, gua, D, w->wa, D, 0, dxn1, D)) goto out;
    if (GEMM(0, 1, M, D, D, 1, gb, D, w->wb, D, 1, dxn1, D)) goto out;
    if (g->g1) FN(colsum)(dxn1, rn, g->g1, M, D);
    if (g->x)
        FN(pass)(HX_RMS_BWD, M, D,
                 (FN(pass_ctx)){.x = x, .g = dxn1, .gain = w->g1, .add = dout1, .o = g->x, .eps = eps});
    rc = 0;
out:
    for (int i = 0; i < NT; i++) gad__storage_release(t[i].st);
    return rc;
}

#undef GEMM
#undef FN
#undef CAT
#undef CAT_
