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

static inline void put(gad_tensor *t, int64_t i, double v) {
    if (t->dtype == GAD_F32) ((float *)gad__ptr(t))[i] = (float)v;
    else ((double *)gad__ptr(t))[i] = v;
}

static inline void swap2(double *a, double *e, int64_t i, int64_t j) {
    double t = a[i];
    a[i] = a[j];
    a[j] = t;
    if (e) {
        t = e[i];
        e[i] = e[j];
        e[j] = t;
    }
}

/* Partition a[lo, hi) (and e beside it, when given) around pivot v into
 * [lo, *gt) > v, [*gt, *eq) == v, [*eq, hi) < v (Dijkstra's three-way
 * partition). */
static void part3(double *a, double *e, int64_t lo, int64_t hi, double v, int64_t *gt,
                  int64_t *eq) {
    int64_t i = lo, g = lo, l = hi;
    while (i < l) {
        if (a[i] > v) swap2(a, e, i++, g++);
        else if (a[i] < v) swap2(a, e, i, --l);
        else i++;
    }
    *gt = g;
    *eq = l;
}

static double median3(const double *a, int64_t lo, int64_t hi) {
    double x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi - 1];
    if ((x <= y && y <= z) || (z <= y && y <= x)) return y;
    if ((y <= x && x <= z) || (z <= x && x <= y)) return x;
    return z;
}

/* The k-th largest of a[0, n) (1 <= k <= n; a reordered): quickselect. */
static double kth_largest(double *a, int64_t n, int64_t k) {
    int64_t lo = 0, hi = n;
    for (;;) {
        double v = median3(a, lo, hi);
        int64_t gt, eq;
        part3(a, NULL, lo, hi, v, &gt, &eq);
        if (k <= gt - lo) hi = gt;
        else if (k <= eq - lo) return v;
        else {
            k -= eq - lo;
            lo = eq;
        }
    }
}

/* The smallest value t of a[0, n) (weights e, a and e reordered) such that
 * the weights of the values >= t reach target: a selection that recurses
 * into the side holding the boundary, O(n) expected. */
static double mass_threshold(double *a, double *e, int64_t n, double target) {
    int64_t lo = 0, hi = n;
    double above = 0; /* weight of the values larger than a[lo, hi) */
    while (hi > lo) {
        double v = median3(a, lo, hi), wg = 0, we = 0;
        int64_t gt, eq;
        part3(a, e, lo, hi, v, &gt, &eq);
        for (int64_t i = lo; i < gt; i++) wg += e[i];
        for (int64_t i = gt; i < eq; i++) we += e[i];
        if (gt > lo && above + wg >= target) hi = gt;
        else if (above + wg + we >= target) return v;
        else {
            above += wg + we;
            lo = eq;
        }
    }
    return -INFINITY; /* rounding kept the target out of reach: keep all */
}

static void lf_range(void *vc, int64_t lo, int64_t hi) {
    lf_ctx *c = vc;
    int64_t V = c->V;
    size_t bytes = (size_t)(3 * V) * sizeof(double);
    double *s = gad__alloc(bytes ? bytes : 1);
    if (!s) {
        __atomic_store_n(&c->fail, 1, __ATOMIC_RELAXED);
        return;
    }
    double *w = s + V, *e = w + V;
    for (int64_t r = lo; r < hi; r++) {
        int nan = 0;
        for (int64_t j = 0; j < V; j++) {
            s[j] = at(c->x, r * V + j) / c->t;
            nan |= isnan(s[j]);
        }
        double thr = -INFINITY; /* keep the values >= thr (and NaN) */
        if (c->k > 0 && c->k < V) {
            for (int64_t j = 0; j < V; j++) w[j] = isnan(s[j]) ? INFINITY : s[j];
            thr = kth_largest(w, V, c->k);
        }
        if (c->p < 1 && !nan) { /* over the values top_k kept */
            int64_t m = 0;
            double mx = -INFINITY;
            for (int64_t j = 0; j < V; j++)
                if (s[j] >= thr) {
                    w[m++] = s[j];
                    if (s[j] > mx) mx = s[j];
                }
            if (mx > -INFINITY) {
                double z = 0;
                for (int64_t i = 0; i < m; i++) z += e[i] = exp(w[i] - mx);
                double t = mass_threshold(w, e, m, c->p * z);
                if (t > thr) thr = t;
            }
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
