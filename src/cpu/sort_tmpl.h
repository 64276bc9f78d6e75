/* sort_tmpl.h: the sort family's kernels written once for an element type T
 * with suffix SFX (included by sort.c for float and double through stamp.h,
 * and for int64_t and bool through stamp_int.h). Values become unsigned
 * keys whose integer order is PyTorch's order of the values (NaN after
 * +inf, -0 equal to +0; integers exactly), which a stable LSD radix sort
 * then orders with their positions (Knuth, TAOCP vol. 3, 5.2.5). Rows (one
 * slice along the axis each) are split over threads; a row is never split,
 * so that the result does not depend on the thread count. */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(CAT(name, _), SFX)

#if SFX_IS_INT
typedef SFX_UNSIGNED FN(key);
#define IS_NAN(v) 0 /* integers have none */
#elif SFX_IS_F32
typedef uint32_t FN(key);
#define IS_NAN(v) ((v) != (v))
#else
typedef uint64_t FN(key);
#define IS_NAN(v) ((v) != (v))
#endif
#define KT FN(key)
#define KBITS ((int)(8 * sizeof(KT)))

#if SFX_IS_INT
/* The key of an integer: its bits with the sign bit flipped (two's
 * complement order made unsigned order); a bool (0 or 1) is its own key. */
static inline KT FN(key_of)(T v) {
    return (KT)((KT)v ^ (SFX_SIGNED ? (KT)1 << (KBITS - 1) : 0));
}
#else
/* The key of v: sign-magnitude bits made monotone (negatives inverted, the
 * sign bit set on the rest), -0 read as +0 and every NaN the largest key.
 * Branch-free, so that loops over a row vectorise. */
static inline KT FN(key_of)(T v) {
    const KT sign = (KT)1 << (KBITS - 1);
    KT u;
    memcpy(&u, &v, sizeof u);
    u = u == sign ? 0 : u;
    KT k = (u & sign) ? (KT)~u : (KT)(u | sign);
    return v != v ? (KT)~(KT)0 : k;
}
#endif

#if SFX_IS_F32 || SFX_IS_INT
/* f32 rows of fewer than 2^32 elements (and integer rows whose keys span
 * less than 2^32): the key in the high half of a 64-bit word and the
 * position in the low half, so that a pass of the radix sort moves 8 bytes
 * per element instead of 12 (integers: 16); the passes read the key's 4
 * bytes only (equal keys keep their order: LSD passes are stable), and a
 * byte that never differs costs its count only.
 * Returns the sorted words (a or t). */
static uint64_t *FN(sort_packed)(uint64_t *a, uint64_t *t, int64_t n) {
    if (n <= 48) { /* insertion: whole words, positions rising within a key */
        for (int64_t i = 1; i < n; i++) {
            uint64_t v = a[i];
            int64_t j = i - 1;
            while (j >= 0 && a[j] > v) {
                a[j + 1] = a[j];
                j--;
            }
            a[j + 1] = v;
        }
        return a;
    }
    int64_t cnt[4][256];
    memset(cnt, 0, sizeof cnt);
    for (int64_t i = 0; i < n; i++) {
        uint32_t k = (uint32_t)(a[i] >> 32);
        cnt[0][k & 255]++;
        cnt[1][(k >> 8) & 255]++;
        cnt[2][(k >> 16) & 255]++;
        cnt[3][k >> 24]++;
    }
    for (int b = 0; b < 4; b++) {
        int64_t *c = cnt[b];
        int sh = 32 + 8 * b;
        if (c[(a[0] >> sh) & 255] == n) continue; /* one digit: nothing moves */
        int64_t s = 0;
        for (int d = 0; d < 256; d++) {
            int64_t x = c[d];
            c[d] = s;
            s += x;
        }
        for (int64_t i = 0; i < n; i++) t[c[(a[i] >> sh) & 255]++] = a[i];
        uint64_t *x = a;
        a = t;
        t = x;
    }
    return a;
}
#endif

/* Sort the pairs (k[i], ix[i]) by key, stably; the sorted pairs end in the
 * arrays returned through *ko, *io (k/ix or the scratch tk/ti). */
static void FN(sort_pairs)(KT *k, int64_t *ix, KT *tk, int64_t *ti, int64_t n, KT **ko,
                           int64_t **io) {
    if (n <= 48) { /* insertion sort: stable, and the radix passes cost more */
        for (int64_t i = 1; i < n; i++) {
            KT kv = k[i];
            int64_t iv = ix[i], j = i - 1;
            while (j >= 0 && k[j] > kv) {
                k[j + 1] = k[j];
                ix[j + 1] = ix[j];
                j--;
            }
            k[j + 1] = kv;
            ix[j + 1] = iv;
        }
        *ko = k;
        *io = ix;
        return;
    }
    enum { NB = sizeof(KT) };
    int64_t cnt[NB][256];
    memset(cnt, 0, sizeof cnt);
    for (int64_t i = 0; i < n; i++) {
        KT v = k[i];
        for (int b = 0; b < NB; b++) cnt[b][(v >> (8 * b)) & 255]++;
    }
    for (int b = 0; b < NB; b++) {
        int64_t *c = cnt[b];
        if (c[(k[0] >> (8 * b)) & 255] == n) continue; /* one digit: nothing moves */
        int64_t s = 0;
        for (int d = 0; d < 256; d++) {
            int64_t t = c[d];
            c[d] = s;
            s += t;
        }
        for (int64_t i = 0; i < n; i++) {
            int64_t p = c[(k[i] >> (8 * b)) & 255]++;
            tk[p] = k[i];
            ti[p] = ix[i];
        }
        KT *sk = k;
        k = tk;
        tk = sk;
        int64_t *si = ix;
        ix = ti;
        ti = si;
    }
    *ko = k;
    *io = ix;
}

typedef struct {
    const T *x;
    T *v;
    int64_t *ix;
    int64_t outer, n, inner, k;
    int desc; /* sort: descending; topk: largest */
    int fail;
} FN(sort_ctx);

/* Scratch of one range of rows: keys and positions, twice. */
static void *FN(scratch)(int64_t n, size_t *bytes) {
    *bytes = (size_t)n * 2 * (sizeof(KT) + sizeof(int64_t));
    return gad__alloc(*bytes ? *bytes : 1);
}

GAD_CLONES static void FN(sort_range)(void *vc, int64_t lo, int64_t hi) {
    FN(sort_ctx) *c = vc;
    int64_t n = c->n, in = c->inner;
    size_t bytes;
    char *mem = FN(scratch)(n, &bytes);
    if (!mem) {
        __atomic_store_n(&c->fail, 1, __ATOMIC_RELAXED);
        return;
    }
    int64_t *ix = (int64_t *)mem, *ti = ix + n;
    KT *k = (KT *)(ti + n), *tk = k + n;
    KT flip = c->desc ? (KT)~(KT)0 : 0;
    for (int64_t p = lo; p < hi; p++) {
        int64_t o = p / in, j = p % in;
        const T *x = c->x + o * n * in + j;
        KT *ks;
        int64_t *is;
#if SFX_IS_F32
        if (n <= (int64_t)UINT32_MAX) { /* the scratch holds 2n words */
            uint64_t *a = (uint64_t *)mem, *t = a + n;
            for (int64_t i = 0; i < n; i++)
                a[i] = (uint64_t)(FN(key_of)(x[i * in]) ^ flip) << 32 | (uint64_t)i;
            uint64_t *sd = FN(sort_packed)(a, t, n);
            int64_t *oi = c->ix + o * n * in + j;
            T *ov = c->v ? c->v + o * n * in + j : NULL;
            for (int64_t i = 0; i < n; i++) {
                int64_t q = (int64_t)(uint32_t)sd[i];
                oi[i * in] = q;
            }
            if (ov) /* the value back from its key, not a gather from x (a
                     * cache miss per element on large rows); zeros and NaN,
                     * whose keys lost the sign or the payload, from x */
                for (int64_t i = 0; i < n; i++) {
                    uint32_t kk = (uint32_t)(sd[i] >> 32) ^ (uint32_t)flip;
                    uint32_t u = (kk & 0x80000000u) ? kk & 0x7fffffffu : ~kk;
                    T v;
                    memcpy(&v, &u, sizeof v);
                    ov[i * in] = v == 0 || v != v ? x[(int64_t)(uint32_t)sd[i] * in] : v;
                }
            continue;
        }
#endif
        for (int64_t i = 0; i < n; i++) {
            k[i] = FN(key_of)(x[i * in]) ^ flip;
            ix[i] = i;
        }
#if SFX_IS_INT
        /* keys taken from the row's least key: ids, counts and masks span
         * less than 2^32, which packs key and position in one word (the
         * scratch holds 2n words: 2n (8 + sizeof(KT)) bytes) */
        KT kmin = k[0], kmax = k[0];
        for (int64_t i = 1; i < n; i++) {
            kmin = k[i] < kmin ? k[i] : kmin;
            kmax = k[i] > kmax ? k[i] : kmax;
        }
        if (n > 0 && n <= (int64_t)UINT32_MAX && ((uint64_t)(KT)(kmax - kmin) >> 32) == 0) {
            uint64_t *a = (uint64_t *)mem, *t = a + n;
            for (int64_t i = 0; i < n; i++) /* a and t lie before k in the scratch */
                a[i] = (uint64_t)(KT)(k[i] - kmin) << 32 | (uint64_t)i;
            uint64_t *sd = FN(sort_packed)(a, t, n);
            int64_t *oi = c->ix + o * n * in + j;
            T *ov = c->v ? c->v + o * n * in + j : NULL;
            for (int64_t i = 0; i < n; i++) oi[i * in] = (int64_t)(uint32_t)sd[i];
            if (ov) /* the value back from its key (exact for integers) */
                for (int64_t i = 0; i < n; i++) {
                    KT kk = (KT)((KT)((KT)(sd[i] >> 32) + kmin) ^ flip);
                    ov[i * in] =
                        (T)(SFX_SIGNED ? (KT)(kk ^ ((KT)1 << (KBITS - 1))) : kk);
                }
            continue;
        }
#endif
        FN(sort_pairs)(k, ix, tk, ti, n, &ks, &is);
        (void)ks;
        int64_t *oi = c->ix + o * n * in + j;
        for (int64_t i = 0; i < n; i++) oi[i * in] = is[i];
        if (c->v) {
            T *ov = c->v + o * n * in + j;
            for (int64_t i = 0; i < n; i++) ov[i * in] = x[is[i] * in];
        }
    }
    gad__free(mem, bytes);
}

static int FN(sort_rows)(const T *x, T *v, int64_t *ix, int64_t outer, int64_t n, int64_t inner,
                  int desc) {
    FN(sort_ctx) c = {.x = x, .v = v, .ix = ix, .outer = outer, .n = n, .inner = inner,
                      .desc = desc};
    if (n > 0) gad__parallel_for(outer * inner, 16384 / (n + 1) + 1, FN(sort_range), &c);
    return c.fail ? -1 : 0;
}

/* (key, position) pairs ordered by key, then position: a max-heap of the k
 * best seen so far, its root the worst of them. */
static inline int FN(worse)(KT ka, int64_t ia, KT kb, int64_t ib) {
    return ka > kb || (ka == kb && ia > ib);
}

static void FN(sift_down)(KT *hk, int64_t *hi_, int64_t m, int64_t r) {
    KT kv = hk[r];
    int64_t iv = hi_[r];
    for (;;) {
        int64_t ch = 2 * r + 1;
        if (ch >= m) break;
        if (ch + 1 < m && FN(worse)(hk[ch + 1], hi_[ch + 1], hk[ch], hi_[ch])) ch++;
        if (!FN(worse)(hk[ch], hi_[ch], kv, iv)) break;
        hk[r] = hk[ch];
        hi_[r] = hi_[ch];
        r = ch;
    }
    hk[r] = kv;
    hi_[r] = iv;
}

GAD_CLONES static void FN(topk_range)(void *vc, int64_t lo, int64_t hi) {
    FN(sort_ctx) *c = vc;
    int64_t n = c->n, in = c->inner, K = c->k;
    /* a heap when k is small against n: one compare per element; else a
     * full sort of the row */
    int heap = K * 16 <= n;
    size_t bytes;
    char *mem = FN(scratch)(heap ? K : n, &bytes);
    if (!mem) {
        __atomic_store_n(&c->fail, 1, __ATOMIC_RELAXED);
        return;
    }
    int64_t m = heap ? K : n;
    int64_t *ix = (int64_t *)mem, *ti = ix + m;
    KT *k = (KT *)(ti + m), *tk = k + m;
    KT flip = c->desc ? (KT)~(KT)0 : 0;
    for (int64_t p = lo; p < hi; p++) {
        int64_t o = p / in, j = p % in;
        const T *x = c->x + o * n * in + j;
        KT *ks;
        int64_t *is;
        if (heap) {
            for (int64_t i = 0; i < K; i++) {
                k[i] = FN(key_of)(x[i * in]) ^ flip;
                ix[i] = i;
            }
            for (int64_t r = K / 2 - 1; r >= 0; r--) FN(sift_down)(k, ix, K, r);
            KT top = k[0];
            /* blocks of keys computed together (vectorised, the minimum
             * beside them); most blocks hold nothing better than the root */
            enum { BLK = 64 };
            KT kb[BLK];
            for (int64_t i0 = K; i0 < n; i0 += BLK) {
                int64_t nb = n - i0 < BLK ? n - i0 : BLK;
                KT mn = (KT)~(KT)0;
                const T *xb = x + i0 * in;
                if (in == 1)
                    for (int64_t b = 0; b < nb; b++) {
                        kb[b] = FN(key_of)(xb[b]) ^ flip;
                        mn = kb[b] < mn ? kb[b] : mn;
                    }
                else
                    for (int64_t b = 0; b < nb; b++) {
                        kb[b] = FN(key_of)(xb[b * in]) ^ flip;
                        mn = kb[b] < mn ? kb[b] : mn;
                    }
                if (mn >= top) continue;
                for (int64_t b = 0; b < nb; b++)
                    if (kb[b] < top) { /* a later equal key is worse: its position is higher */
                        k[0] = kb[b];
                        ix[0] = i0 + b;
                        FN(sift_down)(k, ix, K, 0);
                        top = k[0];
                    }
            }
            for (int64_t e = K - 1; e > 0; e--) { /* heap sort: best first */
                KT tkv = k[0];
                int64_t tiv = ix[0];
                k[0] = k[e];
                ix[0] = ix[e];
                k[e] = tkv;
                ix[e] = tiv;
                FN(sift_down)(k, ix, e, 0);
            }
            is = ix;
        } else {
            for (int64_t i = 0; i < n; i++) {
                k[i] = FN(key_of)(x[i * in]) ^ flip;
                ix[i] = i;
            }
            FN(sort_pairs)(k, ix, tk, ti, n, &ks, &is);
        }
        int64_t *oi = c->ix + o * K * in + j;
        T *ov = c->v + o * K * in + j;
        for (int64_t i = 0; i < K; i++) {
            oi[i * in] = is[i];
            ov[i * in] = x[is[i] * in];
        }
    }
    gad__free(mem, bytes);
}

static int FN(topk_rows)(const T *x, T *v, int64_t *ix, int64_t outer, int64_t n, int64_t inner,
                  int64_t k, int largest) {
    FN(sort_ctx) c = {.x = x, .v = v, .ix = ix, .outer = outer, .n = n, .inner = inner,
                      .k = k, .desc = largest};
    if (n > 0 && k > 0)
        gad__parallel_for(outer * inner, 16384 / (n + 1) + 1, FN(topk_range), &c);
    return c.fail ? -1 : 0;
}

/* The first minimum (largest: maximum) of each row, or its first NaN. */
GAD_CLONES static void FN(argmin_range)(void *vc, int64_t lo, int64_t hi) {
    FN(sort_ctx) *c = vc;
    int64_t n = c->n, in = c->inner;
    int largest = c->desc;
    for (int64_t p = lo; p < hi; p++) {
        int64_t o = p / in, j = p % in;
        const T *x = c->x + o * n * in + j;
        T m = x[0];
        int64_t best = 0;
        if (!IS_NAN(m))
            for (int64_t i = 1; i < n; i++) {
                T v = x[i * in];
                if (IS_NAN(v)) { /* the first NaN wins */
                    best = i;
                    break;
                }
                if (largest ? v > m : v < m) {
                    m = v;
                    best = i;
                }
            }
        c->ix[p] = best;
    }
}

static void FN(argmin_rows)(const T *x, int64_t *y, int64_t outer, int64_t n, int64_t inner,
                            int largest) {
    FN(sort_ctx) c = {.x = x, .ix = y, .outer = outer, .n = n, .inner = inner, .desc = largest};
    gad__parallel_for(outer * inner, 65536 / (n + 1) + 1, FN(argmin_range), &c);
}

#undef IS_NAN
#undef KT
#undef KBITS
#undef FN
#undef CAT
#undef CAT_
