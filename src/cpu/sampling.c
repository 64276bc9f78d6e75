/* sampling.c: the CPU's sampling family (backend/sampling.h): multinomial
 * draws from rows of weights and the temperature / top-k / top-p filter of
 * logits, and the sub-table the CPU's table points to. Each row draws from
 * its own splitmix64 stream (Steele, Lea and Flood 2014, "Fast splittable
 * pseudorandom number generators") started at the key and the row number,
 * so rows run on any thread and a key gives the same draws. */
#include "backend/sampling.h"
#include "cpu/cpu.h"
#include "cpu/fused.h"

#include <math.h>
#include <stdlib.h>

static inline double at(const gad_tensor *t, int64_t i) {
    return t->dtype == GAD_F32 ? (double)((const float *)gad__ptr(t))[i]
                               : ((const double *)gad__ptr(t))[i];
}

static inline uint64_t mix_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* uniform in (0, 1], 53 bits */
static inline double uniform01(uint64_t *s) {
    return (double)((mix_next(s) >> 11) + 1) * (1.0 / 9007199254740992.0);
}

/* ------------------------------------------------------------ multinomial */

typedef struct {
    const gad_tensor *w;
    int64_t *out;
    int64_t K, n;
    uint64_t key;
    int replacement, fail;
} mn_ctx;

typedef struct {
    double k;
    int64_t i;
} keyed;

static int keyed_cmp(const void *a, const void *b) {
    const keyed *x = a, *y = b;
    if (x->k != y->k) return x->k < y->k ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static void mn_range(void *vc, int64_t lo, int64_t hi) {
    mn_ctx *c = vc;
    int64_t K = c->K, n = c->n;
    size_t bytes = (size_t)K * (c->replacement ? sizeof(double) : sizeof(keyed));
    void *mem = gad__alloc(bytes ? bytes : 1);
    if (!mem) {
        __atomic_store_n(&c->fail, 1, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t r = lo; r < hi; r++) {
        uint64_t s = c->key ^ ((uint64_t)r * 0xD1B54A32D192ED03ULL);
        int64_t *out = c->out + r * n;
        if (c->replacement) {
            /* inverse of the cumulative weights, by bisection */
            double *cdf = mem, tot = 0;
            int64_t last = 0;
            for (int64_t j = 0; j < K; j++) {
                double w = at(c->w, r * K + j);
                tot += w;
                cdf[j] = tot;
                if (w > 0) last = j;
            }
            for (int64_t d = 0; d < n; d++) {
                double u = (1.0 - uniform01(&s)) * tot; /* [0, tot) */
                int64_t a = 0, b = K;                   /* first cdf > u */
                while (a < b) {
                    int64_t m = a + (b - a) / 2;
                    if (cdf[m] > u) b = m;
                    else a = m + 1;
                }
                out[d] = a < K ? a : last; /* a rounded u at tot: the last category */
            }
        } else {
            /* Exponential races: key E_j / w_j with E_j ~ Exp(1); the n
             * smallest, in order, are n draws without replacement
             * (Efraimidis and Spirakis 2006, "Weighted random sampling with
             * a reservoir", in its exponential form). A zero weight's key is
             * +inf: drawn only once the positive ones are used up, lowest
             * position first (PyTorch draws them too, in an order it leaves
             * open). */
            keyed *kk = mem;
            for (int64_t j = 0; j < K; j++) {
                double w = at(c->w, r * K + j), e = -log(uniform01(&s));
                kk[j] = (keyed){w > 0 ? e / w : INFINITY, j};
            }
            if (n <= 8) { /* n passes beat a sort of K */
                for (int64_t d = 0; d < n; d++) {
                    int64_t b = -1;
                    for (int64_t j = 0; j < K; j++)
                        if (kk[j].i >= 0 && (b < 0 || kk[j].k < kk[b].k)) b = j;
                    out[d] = b;
                    kk[b].i = -1;
                }
            } else {
                qsort(kk, (size_t)K, sizeof *kk, keyed_cmp);
                for (int64_t d = 0; d < n; d++) out[d] = kk[d].i;
            }
        }
    }
    gad__free(mem, bytes ? bytes : 1);
}

static int cpu_multinomial(const char *op, const gad_tensor *w, int64_t n, int replacement,
                           uint64_t key, gad_tensor *out) {
    int64_t R = w->rank == 2 ? w->shape[0] : 1, K = w->shape[w->rank - 1];
    for (int64_t r = 0; r < R; r++) { /* the weights first, row-major */
        double tot = 0;
        for (int64_t j = 0; j < K; j++) {
            double v = at(w, r * K + j);
            if (!(v >= 0) || isinf(v)) {
                gad__err(GAD_ERR_DOMAIN, op,
                         "weight %g at row %lld, column %lld: weights must be finite and >= 0",
                         isnan(v) ? NAN : v, (long long)r, (long long)j); /* "nan", not "-nan" */
                return -1;
            }
            tot += v;
        }
        if (!(tot > 0)) {
            gad__err(GAD_ERR_DOMAIN, op, "row %lld of %lld weights sums to 0", (long long)r,
                     (long long)K);
            return -1;
        }
        if (!isfinite(tot)) {
            gad__err(GAD_ERR_DOMAIN, op, "row %lld sums to %g (weights too large)", (long long)r,
                     tot);
            return -1;
        }
    }
    mn_ctx c = {.w = w, .out = gad__ptr(out), .K = K, .n = n, .key = key,
                .replacement = replacement};
    if (n > 0) gad__parallel_for(R, 65536 / (K * (replacement ? 1 : 2) + n + 1) + 1, mn_range, &c);
    if (c.fail) {
        gad__err(GAD_ERR_MEMORY, op, "no scratch memory for rows of %lld", (long long)K);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------- logits filter */

typedef struct {
    const gad_tensor *x;
    gad_tensor *y;
    int64_t V, k;
    double t, p;
    int fail;
} lf_ctx;

/* descending, NaN first (the largest, as in top-k) */
static int desc_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    if (isnan(x) || isnan(y)) return isnan(y) - isnan(x);
    return (x < y) - (x > y);
}

static inline void put(gad_tensor *t, int64_t i, double v) {
    if (t->dtype == GAD_F32) ((float *)gad__ptr(t))[i] = (float)v;
    else ((double *)gad__ptr(t))[i] = v;
}

static void lf_range(void *vc, int64_t lo, int64_t hi) {
    lf_ctx *c = vc;
    int64_t V = c->V;
    size_t bytes = (size_t)V * sizeof(double);
    double *s = gad__alloc(bytes ? bytes : 1);
    if (!s) {
        __atomic_store_n(&c->fail, 1, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t r = lo; r < hi; r++) {
        for (int64_t j = 0; j < V; j++) s[j] = at(c->x, r * V + j) / c->t;
        double thr = -INFINITY; /* keep the values >= thr (and NaN) */
        int filter = (c->k > 0 && c->k < V) || c->p < 1;
        if (filter) {
            /* the row's values, largest first; with top_k only the first k
             * matter, the rest are dropped */
            double *d = s + 0;
            double *srt = gad__alloc(bytes ? bytes : 1);
            if (!srt) {
                __atomic_store_n(&c->fail, 1, __ATOMIC_RELAXED);
                break;
            }
            memcpy(srt, d, bytes);
            qsort(srt, (size_t)V, sizeof *srt, desc_cmp);
            int64_t m = V; /* kept: srt[0..m) (ties with the last kept included) */
            if (c->k > 0 && c->k < V) {
                thr = srt[c->k - 1];
                while (m > c->k && !(srt[m - 1] >= thr)) m--;
            }
            if (c->p < 1 && srt[0] > -INFINITY && !isnan(srt[0])) {
                double z = 0, cum = 0;
                for (int64_t i = 0; i < m; i++) z += exp(srt[i] - srt[0]);
                for (int64_t i = 0; i < m; i++) {
                    cum += exp(srt[i] - srt[0]) / z;
                    if (cum >= c->p) {
                        if (srt[i] > thr) thr = srt[i];
                        break;
                    }
                }
            }
            gad__free(srt, bytes ? bytes : 1);
        }
        for (int64_t j = 0; j < V; j++) put(c->y, r * V + j, s[j] < thr ? -INFINITY : s[j]);
    }
    gad__free(s, bytes ? bytes : 1);
}

static int cpu_logits_filter(const char *op, const gad_tensor *x, double temperature,
                             int64_t top_k, double top_p, gad_tensor *y) {
    int64_t R = x->rank == 2 ? x->shape[0] : 1, V = x->shape[x->rank - 1];
    lf_ctx c = {.x = x, .y = y, .V = V, .k = top_k, .t = temperature, .p = top_p};
    if (R * V > 0) gad__parallel_for(R, 1, lf_range, &c);
    if (c.fail) {
        gad__err(GAD_ERR_MEMORY, op, "no scratch memory for rows of %lld", (long long)V);
        return -1;
    }
    return 0;
}

const gad_be_sampling gad__cpu_sampling = {.multinomial = cpu_multinomial,
                                           .logits_filter = cpu_logits_filter};
