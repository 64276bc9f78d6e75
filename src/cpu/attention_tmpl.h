/* attention_tmpl.h: scaled dot-product attention's forward and backward
 * and the rotary embedding, written once for an element type T with suffix
 * SFX (included by attention.c for float and double).
 *
 * The FlashAttention-2 formulation (Dao, 2023): the forward walks the keys
 * a block of BCF at a time for a block of BR queries, keeping each row's
 * running max m and sum l (the online softmax) and rescaling the output
 * rows as m grows; it saves only lse = m + log l per row. The backward
 * recomputes P = exp(S - lse) block by block ([BRB, BC]). Neither holds
 * more than a block of scores per thread. The block products go through
 * gad's own GEMM (one thread each, inside the pool's region). */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(CAT(name, _), SFX)

#if SFX_IS_F32
#define GEMM gad__sgemm_builtin
#define EXP(x) gad__expf(x)
#else
#define GEMM gad__dgemm_builtin
#define EXP(x) exp(x)
#endif

typedef struct {
    const gad_attn_geom *g;
    const T *q, *k, *v, *o, *lse, *go;
    T *out, *lse_out, *dq, *dk, *dv;
    const gad_tensor *mask;
    int64_t nqb; /* query blocks per head */
    atomic_int fail;
} FN(attn_ctx);

/* S[r][c] (nr x nc, row stride ld) gets the mask of rows i0.., columns
 * j0.. of head bh, and -inf above the causal diagonal. */
static void FN(apply_mask)(const FN(attn_ctx) * c, int64_t bh, int64_t i0, int64_t nr,
                           int64_t j0, int64_t nc, T *S, int64_t ld) {
    const gad_tensor *m = c->mask;
    if (m) {
        int64_t rs = m->strides[m->rank - 2], cs = m->strides[m->rank - 1];
        int64_t off = gad__attn_mask_base(m, bh) + i0 * rs + j0 * cs;
        if (c->g->mask_bool) {
            const uint8_t *mb = (const uint8_t *)gad__ptr(m) + off;
            for (int64_t r = 0; r < nr; r++)
                for (int64_t j = 0; j < nc; j++)
                    if (!mb[r * rs + j * cs]) S[r * ld + j] = (T)-INFINITY;
        } else {
            const T *mf = (const T *)gad__ptr(m) + off;
            for (int64_t r = 0; r < nr; r++)
                for (int64_t j = 0; j < nc; j++) S[r * ld + j] += mf[r * rs + j * cs];
        }
    }
    if (c->g->causal)
        for (int64_t r = 0; r < nr; r++) {
            int64_t from = i0 + r - j0 + 1; /* first masked column */
            for (int64_t j = from < 0 ? 0 : from; j < nc; j++) S[r * ld + j] = (T)-INFINITY;
        }
}

/* P (nr x nc, row stride ld) *= the dropout factors of rows i0.., columns
 * j0.. */
static void FN(apply_dropout)(const gad_attn_geom *g, int64_t bh, int64_t i0, int64_t nr,
                              int64_t j0, int64_t nc, T *P, int64_t ld) {
    T keep = (T)(1.0 / (1.0 - g->dropout_p));
    uint32_t thr = gad__attn_drop_threshold(g->dropout_p);
    for (int64_t r = 0; r < nr; r++) {
        T *p = P + r * ld;
        for (int64_t j = 0; j < nc; j += 4) {
            uint32_t u[4];
            gad__philox_at(g->seed, bh, i0 + r, j0 + j, u);
            for (int64_t e = 0; e < 4 && j + e < nc; e++) p[j + e] *= u[e] >= thr ? keep : 0;
        }
    }
}

/* Lanes of the row reductions below: kept apart so that the compiler
 * vectorises them without reordering a sum (one partial per lane). */
#define LANES 16 /* the reductions below are written for 16 */
#if BCF % LANES
#error "attention: BCF must be a multiple of LANES"
#endif

/* max(m0, s[0..n)) over the numbers (a NaN is skipped: exp_sum then
 * makes the row's sum, and so its output, NaN, as PyTorch's); NaN when
 * the row holds a NaN and nothing above -inf, so that the row is not
 * taken for masked. n is a multiple of LANES (the forward pads a row's
 * block with -inf), so that the lanes stay one vector; they meet in a
 * tree (max is exact in any order): a chain of LANES dependent maxes per
 * row and block had cost as much as the exps. */
static inline T FN(row_max)(const T *s, int64_t n, T m0) {
    T mv[LANES];
    for (int e = 0; e < LANES; e++) mv[e] = m0;
    for (int64_t j = 0; j < n; j += LANES)
        for (int e = 0; e < LANES; e++) mv[e] = s[j + e] > mv[e] ? s[j + e] : mv[e];
    /* fixed trip counts, so that each level is one vector operation */
    for (int e = 0; e < 8; e++) mv[e] = mv[e + 8] > mv[e] ? mv[e + 8] : mv[e];
    for (int e = 0; e < 4; e++) mv[e] = mv[e + 4] > mv[e] ? mv[e + 4] : mv[e];
    for (int e = 0; e < 2; e++) mv[e] = mv[e + 2] > mv[e] ? mv[e + 2] : mv[e];
    T m = mv[1] > mv[0] ? mv[1] : mv[0];
    if (m == (T)-INFINITY)
        for (int64_t j = 0; j < n; j++)
            if (s[j] != s[j]) return s[j];
    return m;
}

/* s[j] = exp(s[j] - m) (0 for a masked -inf); la[e] = la[e] alpha + the
 * sum of lane e's values. The row's sum stays in LANES partials across
 * its key blocks and meets once, at the end (lane_sum). n is a multiple
 * of LANES. */
static inline void FN(exp_sum)(T *restrict s, int64_t n, T m, T alpha, T *restrict la) {
    for (int e = 0; e < LANES; e++) la[e] *= alpha;
    for (int64_t j = 0; j < n; j += LANES)
        for (int e = 0; e < LANES; e++) {
            T x = s[j + e], v = x == (T)-INFINITY ? 0 : EXP(x - m);
            s[j + e] = v;
            la[e] += v;
        }
}

/* The sum of a row's LANES partials, pairwise. */
static inline T FN(lane_sum)(T *la) {
    for (int e = 0; e < 8; e++) la[e] += la[e + 8];
    for (int e = 0; e < 4; e++) la[e] += la[e + 4];
    for (int e = 0; e < 2; e++) la[e] += la[e + 2];
    return la[0] + la[1];
}

/* The backward's P row: p[j] = exp(p[j] - lse), 0 where p[j] or lse is
 * -inf (a masked key, a row that sees none). */
static inline void FN(exp_rows)(T *restrict p, int64_t n, T lse) {
    if (lse == (T)-INFINITY) {
        memset(p, 0, (size_t)n * sizeof(T));
        return;
    }
    for (int64_t j = 0; j < n; j++) p[j] = p[j] == (T)-INFINITY ? 0 : EXP(p[j] - lse);
}

/* exp_rows, and dp[j] = scale p[j] (dp[j] - Di) (dS) in the same pass (a
 * NaN in dp stays NaN where p is 0, as it did in two passes). */
static inline void FN(exp_ds)(T *restrict p, T *restrict dp, int64_t n, T lse, T Di, T scale) {
    for (int64_t j = 0; j < n; j++) {
        T v = p[j] == (T)-INFINITY || lse == (T)-INFINITY ? 0 : EXP(p[j] - lse);
        p[j] = v;
        dp[j] = scale * v * (dp[j] - Di);
    }
}

/* a . b over n, in LANES partials that meet pairwise. */
static inline T FN(row_dot)(const T *a, const T *b, int64_t n) {
    T acc[LANES] = {0};
    int64_t j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int e = 0; e < LANES; e++) acc[e] += a[j + e] * b[j + e];
    T at = 0;
    for (; j < n; j++) at += a[j] * b[j];
    return FN(lane_sum)(acc) + at;
}

/* The row stride of a transposed head of Tn keys: a multiple of 16
 * elements that is not one of 4 KiB (rows 4 KiB apart fall in the same L1
 * sets, and the GEMM then packs instead of reading them as they are). */
static inline int64_t FN(attn_ldt)(int64_t Tn) {
    int64_t l = ((Tn + 15) & ~(int64_t)15) + 16;
    return (l * (int64_t)sizeof(T)) % 4096 == 0 ? l + 16 : l;
}

/* A packing buffer for this thread's block products, lent to its GEMMs
 * (gemm.h) so that they neither allocate nor free one per call; its size
 * in *bytes (0: none needed). NULL with *bytes > 0: no memory. */
static void *FN(lend_gemm_scratch)(const gad_attn_geom *g, size_t *bytes) {
    const int64_t d = g->d, dv = g->dv, Tk = FN(attn_ldt)(g->Tk);
    const int64_t shapes[][7] = {/* ta, tb, M, N, K, lda, ldb */
                                 {0, 0, BR, BCF, d, d, Tk},   {0, 0, BR, dv, BCF, BCF, dv},
                                 {0, 0, BRB, BC, d, d, Tk},   {0, 0, BRB, BC, dv, dv, Tk},
                                 {1, 0, BC, dv, BRB, BC, dv}, {0, 0, BRB, d, BC, BC, d},
                                 {1, 0, BC, d, BRB, BC, d}};
    size_t n = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        const int64_t *c = shapes[i];
        size_t b = gad__gemm_scratch_bytes(!SFX_IS_F32, (int)c[0], (int)c[1], c[2], c[3], c[4],
                                           c[5], c[6]);
        n = b > n ? b : n;
    }
    *bytes = n;
    void *p = n ? gad__alloc(n) : NULL;
    if (p) gad__gemm_lend_scratch(p, n);
    return p;
}

static void FN(unlend_gemm_scratch)(void *p, size_t bytes) {
    if (!p) return;
    gad__gemm_lend_scratch(NULL, 0);
    gad__free(p, bytes);
}

/* xt [n, T] = x [T, n]^T (one head's keys or values), so that the block
 * products q k^T and dO v^T read a plain [K, N] operand, which the GEMM
 * takes as it is, instead of packing a transposed one element by element
 * at every call. 16 x 16 tiles; rows ldt apart (gad__attn_ldt). */
static void FN(transpose_head)(const T *x, int64_t Tn, int64_t n, int64_t ldt, T *xt) {
    for (int64_t j0 = 0; j0 < Tn; j0 += 16)
        for (int64_t e0 = 0; e0 < n; e0 += 16) {
            int64_t j1 = j0 + 16 < Tn ? j0 + 16 : Tn, e1 = e0 + 16 < n ? e0 + 16 : n;
            for (int64_t e = e0; e < e1; e++)
                for (int64_t j = j0; j < j1; j++) xt[e * ldt + j] = x[j * n + e];
        }
}

GAD_CLONES static void FN(attn_fwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(attn_ctx) *c = vc;
    const gad_attn_geom *g = c->g;
    int64_t d = g->d, dv = g->dv, G = g->Hq / g->Hk, kt_head = -1, ldt = FN(attn_ldt)(g->Tk);
    size_t bytes = (size_t)(BR * BCF + BR * (3 + LANES) + ldt * d) * sizeof(T);
    T *S = gad__alloc(bytes);
    if (!S) {
        atomic_store(&c->fail, 1);
        return;
    }
    size_t gbytes;
    void *gbuf = FN(lend_gemm_scratch)(g, &gbytes);
    if (gbytes && !gbuf) {
        atomic_store(&c->fail, 1);
        gad__free(S, bytes);
        return;
    }
    /* mx, l: each row's running max and its sum in LANES partials; mn, al:
     * its new max and exp(old - new) in a block; Kt: [d, Tk], head
     * kt_head's */
    T *mx = S + BR * BCF, *mn = mx + BR, *al = mn + BR, *l = al + BR, *Kt = l + BR * LANES;
    for (int64_t t = lo; t < hi; t++) {
        int64_t bh = t / c->nqb, i0 = (t % c->nqb) * BR;
        int64_t nr = g->Tq - i0 < BR ? g->Tq - i0 : BR;
        int64_t bk = (bh / g->Hq) * g->Hk + (bh % g->Hq) / G;
        const T *Q = c->q + (bh * g->Tq + i0) * d;
        const T *V = c->v + bk * g->Tk * dv;
        if (bk != kt_head) { /* consecutive tasks share a head: once per head */
            FN(transpose_head)(c->k + bk * g->Tk * d, g->Tk, d, ldt, Kt);
            kt_head = bk;
        }
        T *O = c->out + (bh * g->Tq + i0) * dv;
        memset(O, 0, (size_t)(nr * dv) * sizeof(T));
        for (int64_t r = 0; r < nr; r++) mx[r] = (T)-INFINITY;
        memset(l, 0, (size_t)(nr * LANES) * sizeof(T));
        int64_t kend = g->causal && i0 + nr < g->Tk ? i0 + nr : g->Tk;
        for (int64_t j0 = 0; j0 < kend; j0 += BCF) {
            int64_t nc = kend - j0 < BCF ? kend - j0 : BCF;
            /* causal: rows r0.. only; those before see none of these keys */
            int64_t r0 = g->causal && j0 > i0 ? j0 - i0 : 0, nb = nr - r0;
            T *Sr = S + r0 * BCF;
            if (GEMM(0, 0, nb, nc, d, (T)g->scale, Q + r0 * d, d, Kt + j0, ldt, 0, Sr, BCF)) {
                atomic_store(&c->fail, 1);
                break;
            }
            FN(apply_mask)(c, bh, i0 + r0, nb, j0, nc, Sr, BCF);
            int64_t ncp = (nc + LANES - 1) / LANES * LANES; /* <= BCF */
            if (ncp > nc) /* keys past the end: masked */
                for (int64_t r = r0; r < nr; r++)
                    for (int64_t j = nc; j < ncp; j++) S[r * BCF + j] = (T)-INFINITY;
            /* the online softmax by passes over the block's rows, each
             * row independent of the last, rather than row by row */
            for (int64_t r = r0; r < nr; r++) mn[r] = FN(row_max)(S + r * BCF, ncp, mx[r]);
            for (int64_t r = r0; r < nr; r++) /* 1 while every key so far is masked */
                al[r] = mn[r] == (T)-INFINITY ? 1 : EXP(mx[r] - mn[r]);
            for (int64_t r = r0; r < nr; r++) { /* exp(-inf) = 0: masked keys */
                FN(exp_sum)(S + r * BCF, ncp, mn[r], al[r], l + r * LANES);
                mx[r] = mn[r];
            }
            for (int64_t r = r0; r < nr; r++)
                if (al[r] != 1) {
                    T *o = O + r * dv, a = al[r];
                    for (int64_t e = 0; e < dv; e++) o[e] *= a;
                }
            if (g->dropout_p > 0) FN(apply_dropout)(g, bh, i0 + r0, nb, j0, nc, Sr, BCF);
            if (GEMM(0, 0, nb, dv, nc, 1, Sr, BCF, V + j0 * dv, dv, 1, O + r0 * dv, dv)) {
                atomic_store(&c->fail, 1);
                break;
            }
        }
        T *L = c->lse_out + bh * g->Tq + i0;
        for (int64_t r = 0; r < nr; r++) {
            T lr = FN(lane_sum)(l + r * LANES);
            if (lr == 0) {
                L[r] = (T)-INFINITY;
                memset(O + r * dv, 0, (size_t)dv * sizeof(T));
                continue;
            }
            L[r] = mx[r] + (T)log(lr);
            T inv = 1 / lr, *o = O + r * dv;
            for (int64_t e = 0; e < dv; e++) o[e] *= inv;
        }
    }
    FN(unlend_gemm_scratch)(gbuf, gbytes);
    gad__free(S, bytes);
}

int FN(gad__attn_fwd)(const gad_attn_geom *g, const T *q, const T *k, const T *v,
                      const gad_tensor *mask, T *out, T *lse) {
    FN(attn_ctx) c = {.g = g, .q = q, .k = k, .v = v, .mask = mask, .out = out, .lse_out = lse};
    c.nqb = (g->Tq + BR - 1) / BR;
    atomic_init(&c.fail, 0);
    gad__parallel_for(g->B * g->Hq * c.nqb, 1, FN(attn_fwd_range), &c);
    return atomic_load(&c.fail) ? -1 : 0;
}

/* One (batch, k/v head) per task: it owns that head's dk and dv and the dq
 * of the query heads that read it, so no two tasks write the same row. */
GAD_CLONES static void FN(attn_bwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(attn_ctx) *c = vc;
    const gad_attn_geom *g = c->g;
    int64_t d = g->d, dv = g->dv, G = g->Hq / g->Hk, Tq = g->Tq, Tk = g->Tk;
    int64_t ldt = FN(attn_ldt)(Tk);
    int drop = g->dropout_p > 0;
    size_t bytes = (size_t)((2 + drop) * BRB * BC + Tq + ldt * (d + dv)) * sizeof(T);
    T *P = gad__alloc(bytes);
    if (!P) {
        atomic_store(&c->fail, 1);
        return;
    }
    size_t gbytes;
    void *gbuf = FN(lend_gemm_scratch)(g, &gbytes);
    if (gbytes && !gbuf) {
        atomic_store(&c->fail, 1);
        gad__free(P, bytes);
        return;
    }
    T *dP = P + BRB * BC, *Pd = drop ? dP + BRB * BC : P, *D = dP + (1 + drop) * BRB * BC;
    T *Kt = D + Tq, *Vt = Kt + ldt * d; /* [d, Tk] and [dv, Tk], rows ldt apart */
    for (int64_t t = lo; t < hi; t++) {
        const T *K = c->k + t * Tk * d, *V = c->v + t * Tk * dv;
        T *dK = c->dk + t * Tk * d, *dV = c->dv + t * Tk * dv;
        memset(dK, 0, (size_t)(Tk * d) * sizeof(T));
        memset(dV, 0, (size_t)(Tk * dv) * sizeof(T));
        FN(transpose_head)(K, Tk, d, ldt, Kt);
        FN(transpose_head)(V, Tk, dv, ldt, Vt);
        for (int64_t h = 0; h < G; h++) {
            int64_t bh = (t / g->Hk) * g->Hq + (t % g->Hk) * G + h;
            const T *Q = c->q + bh * Tq * d, *O = c->o + bh * Tq * dv;
            const T *dO = c->go + bh * Tq * dv, *L = c->lse + bh * Tq;
            T *dQ = c->dq + bh * Tq * d;
            memset(dQ, 0, (size_t)(Tq * d) * sizeof(T));
            for (int64_t i = 0; i < Tq; i++) /* D_i = dO_i . O_i */
                D[i] = FN(row_dot)(dO + i * dv, O + i * dv, dv);
            for (int64_t j0 = 0; j0 < Tk; j0 += BC) {
                int64_t nc = Tk - j0 < BC ? Tk - j0 : BC;
                /* causal: rows before j0 see none of these keys (blocks
                 * start at j0, not at a multiple of BRB, so that none of
                 * them is computed) */
                int64_t ifirst = g->causal ? j0 : 0;
                for (int64_t i0 = ifirst; i0 < Tq; i0 += BRB) {
                    int64_t nr = Tq - i0 < BRB ? Tq - i0 : BRB;
                    if (GEMM(0, 0, nr, nc, d, (T)g->scale, Q + i0 * d, d, Kt + j0, ldt, 0, P,
                             BC) ||
                        GEMM(0, 0, nr, nc, dv, 1, dO + i0 * dv, dv, Vt + j0, ldt, 0, dP, BC)) {
                        atomic_store(&c->fail, 1);
                        goto out;
                    }
                    FN(apply_mask)(c, bh, i0, nr, j0, nc, P, BC);
                    if (drop) {
                        for (int64_t r = 0; r < nr; r++)
                            FN(exp_rows)(P + r * BC, nc, L[i0 + r]);
                        /* Pd = P Z; dP = dP Z */
                        for (int64_t r = 0; r < nr; r++)
                            for (int64_t j = 0; j < nc; j++) Pd[r * BC + j] = P[r * BC + j];
                        FN(apply_dropout)(g, bh, i0, nr, j0, nc, Pd, BC);
                        FN(apply_dropout)(g, bh, i0, nr, j0, nc, dP, BC);
                        for (int64_t r = 0; r < nr; r++) { /* dS = scale P (dP - D) */
                            T Di = D[i0 + r], *p = P + r * BC, *dp = dP + r * BC;
                            for (int64_t j = 0; j < nc; j++)
                                dp[j] = (T)g->scale * p[j] * (dp[j] - Di);
                        }
                    } else { /* both in one pass over the block */
                        for (int64_t r = 0; r < nr; r++)
                            FN(exp_ds)(P + r * BC, dP + r * BC, nc, L[i0 + r], D[i0 + r],
                                       (T)g->scale);
                    }
                    if (GEMM(1, 0, nc, dv, nr, 1, Pd, BC, dO + i0 * dv, dv, 1, dV + j0 * dv,
                             dv) ||
                        GEMM(0, 0, nr, d, nc, 1, dP, BC, K + j0 * d, d, 1, dQ + i0 * d, d) ||
                        GEMM(1, 0, nc, d, nr, 1, dP, BC, Q + i0 * d, d, 1, dK + j0 * d, d)) {
                        atomic_store(&c->fail, 1);
                        goto out;
                    }
                }
            }
        }
    }
out:
    FN(unlend_gemm_scratch)(gbuf, gbytes);
    gad__free(P, bytes);
}

int FN(gad__attn_bwd)(const gad_attn_geom *g, const T *q, const T *k, const T *v,
                      const gad_tensor *mask, const T *o, const T *lse, const T *go, T *dq,
                      T *dk, T *dv) {
    FN(attn_ctx) c = {.g = g, .q = q, .k = k, .v = v, .mask = mask, .o = o, .lse = lse,
                      .go = go, .dq = dq, .dk = dk, .dv = dv};
    atomic_init(&c.fail, 0);
    gad__parallel_for(g->B * g->Hk, 1, FN(attn_bwd_range), &c);
    return atomic_load(&c.fail) ? -1 : 0;
}

/* ------------------------------------------------------------------ rope */

typedef struct {
    const T *x;
    T *y;
    const T *cs; /* [P][half][2]: cos, sin */
    const int64_t *shape, *pstr;
    int rank; /* of the rows' index (x's rank - 1) */
    int64_t d, half;
    int interleaved;
} FN(rope_ctx);

GAD_CLONES static void FN(rope_range)(void *vc, int64_t lo, int64_t hi) {
    FN(rope_ctx) *c = vc;
    int64_t half = c->half, d = c->d;
    for (int64_t r = lo; r < hi; r++) {
        int64_t rem = r, pi = 0;
        for (int a = c->rank - 1; a >= 0; a--) {
            pi += (rem % c->shape[a]) * c->pstr[a];
            rem /= c->shape[a];
        }
        const T *x = c->x + r * d, *cs = c->cs + pi * 2 * half;
        T *y = c->y + r * d;
        int64_t s1 = c->interleaved ? 2 : 1, off = c->interleaved ? 1 : half;
        for (int64_t i = 0; i < half; i++) {
            T a = x[i * s1], b = x[i * s1 + off], co = cs[2 * i], si = cs[2 * i + 1];
            y[i * s1] = a * co - b * si;
            y[i * s1 + off] = a * si + b * co;
        }
    }
}

void FN(gad__rope)(const T *x, T *y, const T *cs, const int64_t *shape, const int64_t *pstr,
                   int rank, int64_t rows, int64_t d, int interleaved) {
    FN(rope_ctx) c = {.x = x, .y = y, .cs = cs, .shape = shape, .pstr = pstr, .rank = rank,
                      .d = d, .half = d / 2, .interleaved = interleaved};
    gad__parallel_for(rows, 4096 / (d + 1) + 1, FN(rope_range), &c);
}

#undef GEMM
#undef EXP
#undef LANES
#undef FN
#undef CAT
#undef CAT_
