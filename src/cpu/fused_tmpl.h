/* fused_tmpl.h: the fused kernels, written once for an element type T with
 * suffix SFX (included by fused.c for float and double). Each loop nest is
 * split over threads by independent rows or channels, never across a sum,
 * so results do not depend on the thread count. */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(CAT(name, _), SFX)

/* ------------------------------------------------------------ gated scan */

typedef struct {
    const T *a, *b, *h, *gh;
    T *out, *ga, *gb;
    int64_t T_, D, chunks; /* channel chunks per sequence */
} FN(scan_ctx);

#define SCAN_CHUNK 64

GAD_CLONES static void FN(scan_fwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(scan_ctx) *c = vc;
    for (int64_t w = lo; w < hi; w++) {
        int64_t bi = w / c->chunks, d0 = (w % c->chunks) * SCAN_CHUNK;
        int64_t d1 = d0 + SCAN_CHUNK < c->D ? d0 + SCAN_CHUNK : c->D;
        size_t base = (size_t)(bi * c->T_ * c->D);
        T prev[SCAN_CHUNK] = {0};
        for (int64_t t = 0; t < c->T_; t++) {
            size_t row = base + (size_t)(t * c->D);
            const T *a = c->a + row, *b = c->b + row;
            T *h = c->out + row;
            for (int64_t d = d0; d < d1; d++) {
                T v = a[d] * prev[d - d0] + b[d];
                h[d] = v;
                prev[d - d0] = v;
            }
        }
    }
}

void FN(gad__scan_fwd)(const T *a, const T *b, T *h, int64_t B, int64_t T_, int64_t D) {
    FN(scan_ctx) c = {.a = a, .b = b, .out = h, .T_ = T_, .D = D,
                      .chunks = (D + SCAN_CHUNK - 1) / SCAN_CHUNK};
    gad__parallel_for(B * c.chunks, 256 / (T_ + 1) + 1, FN(scan_fwd_range), &c);
}

GAD_CLONES static void FN(scan_bwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(scan_ctx) *c = vc;
    for (int64_t w = lo; w < hi; w++) {
        int64_t bi = w / c->chunks, d0 = (w % c->chunks) * SCAN_CHUNK;
        int64_t d1 = d0 + SCAN_CHUNK < c->D ? d0 + SCAN_CHUNK : c->D;
        size_t base = (size_t)(bi * c->T_ * c->D);
        T carry[SCAN_CHUNK] = {0}; /* a_{t+1} G_{t+1} */
        for (int64_t t = c->T_ - 1; t >= 0; t--) {
            size_t row = base + (size_t)(t * c->D);
            const T *a = c->a + row, *gh = c->gh + row;
            const T *hp = t > 0 ? c->h + row - c->D : NULL;
            for (int64_t d = d0; d < d1; d++) {
                T G = gh[d] + carry[d - d0];
                if (c->gb) c->gb[row + d] = G;
                if (c->ga) c->ga[row + d] = hp ? G * hp[d] : (T)0;
                carry[d - d0] = a[d] * G;
            }
        }
    }
}

void FN(gad__scan_bwd)(const T *a, const T *h, const T *gh, T *ga, T *gb, int64_t B,
                       int64_t T_, int64_t D) {
    FN(scan_ctx) c = {.a = a, .h = h, .gh = gh, .ga = ga, .gb = gb, .T_ = T_, .D = D,
                      .chunks = (D + SCAN_CHUNK - 1) / SCAN_CHUNK};
    gad__parallel_for(B * c.chunks, 256 / (T_ + 1) + 1, FN(scan_bwd_range), &c);
}

/* --------------------------------------------------------------- rms norm */

typedef struct {
    const T *x, *g;
    T *y;
    int64_t n;
    double eps;
} FN(rms_ctx);

/* sum_j a[j] b[j] (b NULL: sum_j a[j]^2; c non-NULL: a[j] b[j] c[j]) in
 * double, with 16 independent accumulators so that the loop vectorizes;
 * the order depends on n only. */
static inline double FN(dot)(const T *a, const T *b, const T *c, int64_t n) {
    /* the accumulators start as the first 16 terms (zeroing them, gcc's
     * rep stos, cost as much as a row of 256) */
    double s[16];
    int64_t j = 0;
    if (n < 16) {
        for (int k = 0; k < 16; k++) s[k] = 0;
    } else {
        for (int k = 0; k < 16; k++) { /* 0 + the term: the same bits, -0 included */
            double v = (double)a[k] * (double)(b ? b[k] : a[k]);
            s[k] = 0.0 + (c ? v * (double)c[k] : v);
        }
        j = 16;
    }
    for (; j + 16 <= n; j += 16)
        for (int k = 0; k < 16; k++) {
            double v = (double)a[j + k] * (double)(b ? b[j + k] : a[j + k]);
            s[k] += c ? v * (double)c[j + k] : v;
        }
    double t = 0;
    for (; j < n; j++) {
        double v = (double)a[j] * (double)(b ? b[j] : a[j]);
        t += c ? v * (double)c[j] : v;
    }
    for (int w = 8; w >= 1; w /= 2)
        for (int k = 0; k < w; k++) s[k] += s[k + w];
    return s[0] + t;
}

/* 1 / sqrt(mean(x^2) + eps) of one row, accumulated in double */
static inline double FN(rms_inv)(const T *x, int64_t n, double eps) {
    return 1.0 / sqrt(FN(dot)(x, NULL, NULL, n) / (double)n + eps);
}

GAD_CLONES static void FN(rms_fwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(rms_ctx) *c = vc;
    for (int64_t r = lo; r < hi; r++) {
        const T *x = c->x + r * c->n;
        T *y = c->y + r * c->n;
        T inv = (T)FN(rms_inv)(x, c->n, c->eps);
        for (int64_t j = 0; j < c->n; j++) y[j] = x[j] * inv;
    }
}

void FN(gad__rms_fwd)(const T *x, T *y, int64_t rows, int64_t n, double eps) {
    FN(rms_ctx) c = {.x = x, .y = y, .n = n, .eps = eps};
    gad__parallel_for(rows, 4096 / (n + 1) + 1, FN(rms_fwd_range), &c);
}

GAD_CLONES static void FN(rms_bwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(rms_ctx) *c = vc;
    for (int64_t r = lo; r < hi; r++) {
        const T *x = c->x + r * c->n, *g = c->g + r * c->n;
        T *dx = c->y + r * c->n;
        double inv = FN(rms_inv)(x, c->n, c->eps), dot = FN(dot)(x, g, NULL, c->n);
        T a = (T)inv, b = (T)(inv * inv * inv * dot / (double)c->n);
        for (int64_t j = 0; j < c->n; j++) dx[j] = g[j] * a - x[j] * b;
    }
}

void FN(gad__rms_bwd)(const T *x, const T *g, T *dx, int64_t rows, int64_t n, double eps) {
    FN(rms_ctx) c = {.x = x, .g = g, .y = dx, .n = n, .eps = eps};
    gad__parallel_for(rows, 4096 / (n + 1) + 1, FN(rms_bwd_range), &c);
}

/* ------------------------------------------------------ masked cross-entropy */

/* e^v in T: vmath.h's vectorizable version for f32 */
#if SFX_IS_F32
static inline T FN(expt)(T v) { return gad__expf(v); }
#else
static inline T FN(expt)(T v) { return exp(v); }
#endif

typedef struct {
    const T *logits, *mask, *probs;
    const int64_t *targets;
    T *out;
    int64_t V;
    double scale;
    double *row_loss;
} FN(mce_ctx);

GAD_CLONES static void FN(mce_fwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(mce_ctx) *c = vc;
    for (int64_t i = lo; i < hi; i++) {
        const T *z = c->logits + i * c->V;
        T *p = c->out + i * c->V;
        T m = -INFINITY;
        for (int64_t j = 0; j < c->V; j++)
            if (z[j] > m) m = z[j];
        if (m == -INFINITY) m = 0;
        double s = 0;
        for (int64_t j = 0; j < c->V; j++) {
            T e = FN(expt)(z[j] - m);
            p[j] = e;
            s += e;
        }
        T inv = (T)(1.0 / s);
        for (int64_t j = 0; j < c->V; j++) p[j] *= inv;
        double mi = (double)c->mask[i], li = 0;
        if (mi != 0) {
            int64_t t = c->targets[i];
            double pt = (double)p[t];
            if (pt < 1e-30) pt = 1e-30;
            if (pt > 1) pt = 1;
            li = -mi * log(pt);
        }
        c->row_loss[i] = li;
    }
}

int FN(gad__mce_fwd)(const T *logits, const int64_t *targets, const T *mask, T *probs,
                     int64_t N, int64_t V, double *loss) {
    double count = 0, sum = 0;
    for (int64_t i = 0; i < N; i++) count += fabs((double)mask[i]);
    double *rl = gad__alloc((size_t)(N ? N : 1) * sizeof *rl);
    if (!rl) return -1;
    FN(mce_ctx) c = {.logits = logits, .mask = mask, .targets = targets, .out = probs,
                     .V = V, .row_loss = rl};
    gad__parallel_for(N, 4096 / (V + 1) + 1, FN(mce_fwd_range), &c);
    for (int64_t i = 0; i < N; i++) sum += rl[i]; /* in row order */
    gad__free(rl, (size_t)(N ? N : 1) * sizeof *rl);
    *loss = count == 0 ? 0.0 : sum / count;
    return 0;
}

GAD_CLONES static void FN(mce_bwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(mce_ctx) *c = vc;
    for (int64_t i = lo; i < hi; i++) {
        const T *p = c->probs + i * c->V;
        T *d = c->out + i * c->V;
        double mi = (double)c->mask[i];
        if (mi == 0) {
            for (int64_t j = 0; j < c->V; j++) d[j] = 0; /* exactly zero */
            continue;
        }
        T s = (T)(mi * c->scale);
        for (int64_t j = 0; j < c->V; j++) d[j] = p[j] * s;
        d[c->targets[i]] -= s;
    }
}

void FN(gad__mce_bwd)(const T *probs, const int64_t *targets, const T *mask, double scale,
                      T *dlogits, int64_t N, int64_t V) {
    FN(mce_ctx) c = {.probs = probs, .mask = mask, .targets = targets, .out = dlogits,
                     .V = V, .scale = scale};
    gad__parallel_for(N, 4096 / (V + 1) + 1, FN(mce_bwd_range), &c);
}

/* -------------------------------------------------------------- embedding */

typedef struct {
    const T *table, *gy;
    const int64_t *idx;
    T *out;
    int64_t R, D;
} FN(emb_ctx);

static void FN(emb_fwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(emb_ctx) *c = vc;
    for (int64_t r = lo; r < hi; r++)
        memcpy(c->out + r * c->D, c->table + c->idx[r] * c->D, (size_t)c->D * sizeof(T));
}

void FN(gad__emb_fwd)(const T *table, const int64_t *idx, T *y, int64_t R, int64_t D) {
    FN(emb_ctx) c = {.table = table, .idx = idx, .out = y, .R = R, .D = D};
    gad__parallel_for(R, 4096 / (D + 1) + 1, FN(emb_fwd_range), &c);
}

/* Threads own column ranges, so rows that share an index never race and
 * each gradient row sums in index order. */
static void FN(emb_bwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(emb_ctx) *c = vc;
    for (int64_t r = 0; r < c->R; r++) {
        const T *g = c->gy + r * c->D;
        T *t = c->out + c->idx[r] * c->D;
        for (int64_t j = lo; j < hi; j++) t[j] += g[j];
    }
}

void FN(gad__emb_bwd)(const int64_t *idx, const T *gy, T *gt, int64_t R, int64_t D) {
    FN(emb_ctx) c = {.gy = gy, .idx = idx, .out = gt, .R = R, .D = D};
    gad__parallel_for(D, R > 64 ? 16 : D, FN(emb_bwd_range), &c);
}

/* ------------------------------------------------------------ HELIX block */

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
