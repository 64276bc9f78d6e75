/* norm_tmpl.h: batch norm's kernels (backend/norm.h), written once for an
 * element type T with suffix SFX (included by norm.c for float and double).
 * x is [N, C, S]; channel c's values are N rows of S, one per sample. The
 * reductions run over threads by channel, never across a sum, so results do
 * not depend on the thread count; their sums are in double with 16
 * independent accumulators, so that the loops vectorize without
 * reassociating (the order depends on the sizes only). */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(CAT(name, _), SFX)

typedef struct {
    const T *x, *g, *mean, *invstd, *w, *b;
    T *y, *omean, *oinv, *rm, *rv, *dx, *dw, *db;
    int64_t N, C, S;
    double momentum, eps;
    int batch;
} FN(norm_ctx);

/* s1 += sum_j (a[j] - k), s2 += sum_j (a[j] - k)^2 (b NULL), or s1 +=
 * sum_j b[j], s2 += sum_j b[j] (a[j] - k) (b given). */
#if SFX_IS_F32
/* f32: chunks of 256 values in a 16-lane float vector (GCC's generic
 * vectors: one register on AVX-512, two on AVX2), each lane adding 16
 * shifted values, the chunk's lanes then added in double; converting every
 * value to double instead does not vectorize well. The error stays that of
 * a 32-term float sum per chunk. */
#ifndef GAD_NORM_V16
#define GAD_NORM_V16
typedef float gad_norm_v16 __attribute__((vector_size(64)));
#endif
#define SUMS_CHUNK(LOAD_E)                                                     \
    for (; j + 256 <= n; j += 256) {                                           \
        gad_norm_v16 p = {0}, q = {0};                                         \
        for (int u = 0; u < 256; u += 16) {                                    \
            gad_norm_v16 d, e;                                                 \
            memcpy(&d, a + j + u, sizeof d);                                   \
            d -= kv;                                                           \
            LOAD_E;                                                            \
            p += e;                                                            \
            q += e * d;                                                        \
        }                                                                      \
        for (int w = 8; w >= 1; w /= 2)                                        \
            for (int i = 0; i < w; i++) p[i] += p[i + w], q[i] += q[i + w];    \
        t1 += (double)p[0];                                                    \
        t2 += (double)q[0];                                                    \
    }
static inline __attribute__((always_inline)) void FN(sums)(const T *a, const T *b, T k, int64_t n,
                                                         double *s1, double *s2) {
    double t1 = 0, t2 = 0;
    int64_t j = 0;
    gad_norm_v16 kv = (gad_norm_v16){0} + k;
    if (b) {
        SUMS_CHUNK(memcpy(&e, b + j + u, sizeof e))
    } else {
        SUMS_CHUNK(e = d)
    }
    for (; j < n; j++) {
        double d = (double)a[j] - (double)k, e = b ? (double)b[j] : d;
        t1 += e;
        t2 += e * d;
    }
    *s1 += t1;
    *s2 += t2;
}
#undef SUMS_CHUNK
#else
/* always inlined: the target clones of its callers vectorize it for their ISA */
static inline __attribute__((always_inline)) void FN(sums)(const T *a, const T *b, T k, int64_t n,
                                                         double *s1, double *s2) {
    double p[16] = {0}, q[16] = {0};
    int64_t j = 0;
    for (; j + 16 <= n; j += 16)
        for (int i = 0; i < 16; i++) {
            double d = (double)a[j + i] - (double)k;
            double e = b ? (double)b[j + i] : d;
            p[i] += e;
            q[i] += e * d;
        }
    double t1 = 0, t2 = 0;
    for (; j < n; j++) {
        double d = (double)a[j] - (double)k, e = b ? (double)b[j] : d;
        t1 += e;
        t2 += e * d;
    }
    for (int w = 8; w >= 1; w /= 2)
        for (int i = 0; i < w; i++) p[i] += p[i + w], q[i] += q[i + w];
    *s1 += p[0] + t1;
    *s2 += q[0] + t2;
}
#endif

/* statistics of channels [lo, hi): shifted by the channel's first value,
 * which keeps the sum of squares from cancelling when |mean| >> std */
GAD_CLONES static void FN(norm_stats_range)(void *vc, int64_t lo, int64_t hi) {
    FN(norm_ctx) *c = vc;
    int64_t M = c->N * c->S;
    for (int64_t ch = lo; ch < hi; ch++) {
        T k = c->x[ch * c->S];
        double s1 = 0, s2 = 0;
        for (int64_t n = 0; n < c->N; n++)
            FN(sums)(c->x + (n * c->C + ch) * c->S, NULL, k, c->S, &s1, &s2);
        double d = s1 / (double)M, mean = (double)k + d;
        double var = s2 / (double)M - d * d;
        if (var < 0) var = 0;
        c->omean[ch] = (T)mean;
        c->oinv[ch] = (T)(1.0 / sqrt(var + c->eps));
        if (c->rm) {
            double m = c->momentum, unb = M > 1 ? var * (double)M / (double)(M - 1) : var;
            c->rm[ch] = (T)((1 - m) * (double)c->rm[ch] + m * mean);
            c->rv[ch] = (T)((1 - m) * (double)c->rv[ch] + m * unb);
        }
    }
}

void FN(gad__norm_stats)(const T *x, T *mean, T *invstd, T *rm, T *rv, int64_t N, int64_t C,
                         int64_t S, double momentum, double eps) {
    FN(norm_ctx) c = {.x = x, .omean = mean, .oinv = invstd, .rm = rm, .rv = rv, .N = N,
                      .C = C, .S = S, .momentum = momentum, .eps = eps};
    if (N * S == 0) return;
    gad__parallel_for(C, 16384 / (N * S) + 1, FN(norm_stats_range), &c);
}

/* rows [lo, hi) of N*C: y = (x - mean) a + b, a = invstd w (x - mean
 * first: folding the mean into the offset would cancel for |mean| >> std) */
GAD_CLONES static void FN(norm_fwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(norm_ctx) *c = vc;
    for (int64_t r = lo; r < hi; r++) {
        int64_t ch = r % c->C;
        T a = c->invstd[ch] * (c->w ? c->w[ch] : (T)1), m = c->mean[ch];
        T d = c->b ? c->b[ch] : (T)0;
        const T *x = c->x + r * c->S;
        T *y = c->y + r * c->S;
        for (int64_t j = 0; j < c->S; j++) y[j] = (x[j] - m) * a + d;
    }
}

void FN(gad__norm_fwd)(const T *x, const T *mean, const T *invstd, const T *w, const T *b, T *y,
                       int64_t N, int64_t C, int64_t S) {
    FN(norm_ctx) c = {.x = x, .mean = mean, .invstd = invstd, .w = w, .b = b, .y = y,
                      .N = N, .C = C, .S = S};
    gad__parallel_for(N * C, 16384 / (S + 1) + 1, FN(norm_fwd_range), &c);
}

/* per channel: dw = sum g xhat = invstd sum g (x - mean), db = sum g */
GAD_CLONES static void FN(norm_bsum_range)(void *vc, int64_t lo, int64_t hi) {
    FN(norm_ctx) *c = vc;
    for (int64_t ch = lo; ch < hi; ch++) {
        double sg = 0, sgx = 0;
        for (int64_t n = 0; n < c->N; n++) {
            int64_t o = (n * c->C + ch) * c->S;
            FN(sums)(c->x + o, c->g + o, c->mean[ch], c->S, &sg, &sgx);
        }
        c->dw[ch] = (T)(sgx * (double)c->invstd[ch]);
        c->db[ch] = (T)sg;
    }
}

/* dx = a g with a = w invstd for constant statistics; for the batch's,
 * a (g - db/M - xhat dw/M) = g a + (x - mean) k1 + k0 (Ioffe and Szegedy 2015,
 * section 3, written per channel) */
GAD_CLONES static void FN(norm_dx_range)(void *vc, int64_t lo, int64_t hi) {
    FN(norm_ctx) *c = vc;
    double M = (double)(c->N * c->S);
    for (int64_t r = lo; r < hi; r++) {
        int64_t ch = r % c->C;
        double inv = (double)c->invstd[ch], ad = inv * (c->w ? (double)c->w[ch] : 1.0);
        T a = (T)ad;
        const T *x = c->x + r * c->S, *g = c->g + r * c->S;
        T *dx = c->dx + r * c->S;
        if (c->batch) {
            T k1 = (T)(-ad * inv * (double)c->dw[ch] / M), k0 = (T)(-ad * (double)c->db[ch] / M);
            T m = c->mean[ch];
            for (int64_t j = 0; j < c->S; j++) dx[j] = g[j] * a + (x[j] - m) * k1 + k0;
        } else {
            for (int64_t j = 0; j < c->S; j++) dx[j] = g[j] * a;
        }
    }
}

/* dw, db: always given (scratch when their gradients are not wanted) */
void FN(gad__norm_bwd)(const T *x, const T *g, const T *mean, const T *invstd, const T *w,
                       int batch, T *dx, T *dw, T *db, int64_t N, int64_t C, int64_t S) {
    FN(norm_ctx) c = {.x = x, .g = g, .mean = mean, .invstd = invstd, .w = w, .dx = dx,
                      .dw = dw, .db = db, .N = N, .C = C, .S = S, .batch = batch};
    if (N * S == 0) {
        for (int64_t ch = 0; ch < C; ch++) dw[ch] = db[ch] = 0;
        return;
    }
    gad__parallel_for(C, 16384 / (N * S) + 1, FN(norm_bsum_range), &c);
    if (dx) gad__parallel_for(N * C, 16384 / (S + 1) + 1, FN(norm_dx_range), &c);
}

/* ---- group norm (instance norm: G = C). x is [N, C, S] with C = G Cg, so
 * that group (n, g)'s M = Cg S values are contiguous (block r = n G + g).
 * One task per block: its statistics and its second pass read it while it
 * is still in cache, and each block's sums are one thread's, in an order
 * that depends on the sizes only, so results do not depend on the thread
 * count. */
typedef struct {
    const T *x, *g, *w, *b, *mean, *invstd;
    T *y, *omean, *oinv, *rm, *rv, *dx;
    double *part; /* bwd: per (n, c), sum g xhat and sum g; NULL: not wanted */
    int64_t C, G, Cg, S;
    double momentum, eps;
} FN(gn_ctx);

/* blocks [lo, hi): mean and invstd shifted by the block's first value (as
 * norm_stats_range), then y = (x - mean) a + b[c], a = invstd w[c] */
GAD_CLONES static void FN(gn_fwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(gn_ctx) *c = vc;
    int64_t S = c->S, M = c->Cg * S;
    for (int64_t r = lo; r < hi; r++) {
        const T *x = c->x + r * M;
        T *y = c->y + r * M;
        T k = x[0];
        double s1 = 0, s2 = 0;
        FN(sums)(x, NULL, k, M, &s1, &s2);
        double d = s1 / (double)M, mean = (double)k + d;
        double var = s2 / (double)M - d * d;
        if (var < 0) var = 0;
        double inv = 1.0 / sqrt(var + c->eps);
        c->omean[r] = (T)mean;
        c->oinv[r] = (T)inv;
        if (c->rm) {
            double m = c->momentum, unb = M > 1 ? var * (double)M / (double)(M - 1) : var;
            c->rm[r] = (T)((1 - m) * (double)c->rm[r] + m * mean);
            c->rv[r] = (T)((1 - m) * (double)c->rv[r] + m * unb);
        }
        T mt = (T)mean;
        int64_t c0 = (r % c->G) * c->Cg;
        for (int64_t i = 0; i < c->Cg; i++) {
            int64_t ch = c0 + i;
            T a = (T)(inv * (c->w ? (double)c->w[ch] : 1.0)), o = c->b ? c->b[ch] : (T)0;
            const T *xr = x + i * S;
            T *yr = y + i * S;
            for (int64_t j = 0; j < S; j++) yr[j] = (xr[j] - mt) * a + o;
        }
    }
}

void FN(gad__gn_fwd)(const T *x, const T *w, const T *b, T *y, T *mean, T *invstd, T *rm, T *rv,
                     int64_t N, int64_t C, int64_t G, int64_t S, double momentum, double eps) {
    int64_t Cg = C / G, M = Cg * S;
    if (M == 0) { /* no values: NaN statistics */
        for (int64_t r = 0; r < N * G; r++) mean[r] = invstd[r] = (T)NAN;
        return;
    }
    FN(gn_ctx) c = {.x = x, .w = w, .b = b, .y = y, .omean = mean, .oinv = invstd, .rm = rm,
                    .rv = rv, .C = C, .G = G, .Cg = Cg, .S = S, .momentum = momentum,
                    .eps = eps};
    gad__parallel_for(N * G, 16384 / M + 1, FN(gn_fwd_range), &c);
}

/* blocks [lo, hi): per channel sg = sum g, sgx = sum g (x - mean); with
 * xhat = (x - mean) invstd and dxhat = g w[c], dx = invstd (dxhat -
 * mean(dxhat) - xhat mean(dxhat xhat)) over the block (Wu and He 2018,
 * "Group Normalization", the batch norm backward of Ioffe and Szegedy 2015
 * per group) = g a + (x - mean) k1 + k0, with a = invstd w[c], B = sum_c
 * w[c] sg, A = sum_c w[c] sgx, k0 = -invstd B / M, k1 = -invstd^3 A / M */
GAD_CLONES static void FN(gn_bwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(gn_ctx) *c = vc;
    int64_t S = c->S, Cg = c->Cg, M = Cg * S;
    for (int64_t r = lo; r < hi; r++) {
        const T *x = c->x + r * M, *g = c->g + r * M;
        T mt = c->mean[r];
        double inv = (double)c->invstd[r], A = 0, B = 0;
        int64_t c0 = (r % c->G) * Cg, n = r / c->G;
        for (int64_t i = 0; i < Cg; i++) {
            double sg = 0, sgx = 0, wc = c->w ? (double)c->w[c0 + i] : 1.0;
            FN(sums)(x + i * S, g + i * S, mt, S, &sg, &sgx);
            if (c->part) {
                double *p = c->part + 2 * (n * c->C + c0 + i);
                p[0] = sgx * inv;
                p[1] = sg;
            }
            A += wc * sgx;
            B += wc * sg;
        }
        if (!c->dx) continue;
        T k1 = (T)(-inv * inv * inv * A / (double)M), k0 = (T)(-inv * B / (double)M);
        for (int64_t i = 0; i < Cg; i++) {
            T a = (T)(inv * (c->w ? (double)c->w[c0 + i] : 1.0));
            const T *xr = x + i * S, *gr = g + i * S;
            T *dx = c->dx + r * M + i * S;
            for (int64_t j = 0; j < S; j++) dx[j] = gr[j] * a + (xr[j] - mt) * k1 + k0;
        }
    }
}

/* dx, dw, db: each NULL when not wanted; dw and db are the blocks' sums
 * added over n in order. Returns -1 when its scratch cannot be allocated. */
int FN(gad__gn_bwd)(const T *x, const T *g, const T *mean, const T *invstd, const T *w, T *dx,
                    T *dw, T *db, int64_t N, int64_t C, int64_t G, int64_t S) {
    int64_t Cg = C / G, M = Cg * S;
    if (M == 0 || N == 0) { /* dx is empty */
        for (int64_t ch = 0; ch < C; ch++) {
            if (dw) dw[ch] = 0;
            if (db) db[ch] = 0;
        }
        return 0;
    }
    size_t bytes = (size_t)(N * C) * 2 * sizeof(double);
    double *part = dw || db ? gad__alloc(bytes) : NULL;
    if ((dw || db) && !part) return -1;
    FN(gn_ctx) c = {.x = x, .g = g, .mean = mean, .invstd = invstd, .w = w, .dx = dx,
                    .part = part, .C = C, .G = G, .Cg = Cg, .S = S};
    gad__parallel_for(N * G, 16384 / M + 1, FN(gn_bwd_range), &c);
    if (part) {
        for (int64_t ch = 0; ch < C; ch++) {
            double sw = 0, sb = 0;
            for (int64_t n = 0; n < N; n++) {
                sw += part[2 * (n * C + ch)];
                sb += part[2 * (n * C + ch) + 1];
            }
            if (dw) dw[ch] = (T)sw;
            if (db) db[ch] = (T)sb;
        }
        gad__free(part, bytes);
    }
    return 0;
}

#undef FN
#undef CAT
#undef CAT_
