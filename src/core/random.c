/* random.c: g's bit-exact randn (SPEC §1.8) and the seedable generator
 * object (SPEC D10). */
#include "gad_int.h"
#include "half.h"

#include <math.h>

/* ------------------------------------------------------------------ randn
 * xorshift64* (Marsaglia 2003, "Xorshift RNGs"; the * variant from Vigna
 * 2016) with state = seed | 1; each draw is (state >> 11) / 2^53. Pairs
 * become normals by Box-Muller in double, emitting r cos(theta) then
 * r sin(theta). */

static inline double xs64_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    x *= 0x2545F4914F6CDD1DULL; /* g keeps the product as the next state */
    *s = x;
    return (double)(x >> 11) / 9007199254740992.0; /* 2^53 */
}

gad_tensor *gad_randn(const int64_t *shape, int rank, uint64_t seed) {
    gad_tensor *t = gad__tensor_new("randn", GAD_DEV_HOST, GAD_F32, shape, rank);
    if (!t) return NULL;
    float *p = gad__ptr(t);
    uint64_t s = seed | 1;
    const double two_pi = 6.283185307179586;
    for (int64_t i = 0; i < t->numel; i += 2) {
        double u1 = xs64_next(&s), u2 = xs64_next(&s);
        if (u1 < 1e-12) u1 = 1e-12;
        double r = sqrt(-2.0 * log(u1)), th = two_pi * u2;
        p[i] = (float)(r * cos(th));
        if (i + 1 < t->numel) p[i + 1] = (float)(r * sin(th));
    }
    return gad__own_on_default("randn", t);
}

/* --------------------------------------------------------------- gad_rng
 * xoshiro256** (Blackman & Vigna 2018, "Scrambled linear pseudorandom
 * number generators"), its state filled by splitmix64 from the seed. */

struct gad_rng {
    uint64_t s[4];
    double spare;
    int has_spare;
};

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void gad_rng_seed(gad_rng *rng, uint64_t seed) {
    if (!rng) return;
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) rng->s[i] = splitmix64(&x);
    rng->has_spare = 0;
}

gad_rng *gad_rng_new(uint64_t seed) {
    gad_rng *r = gad__alloc(sizeof *r);
    if (!r) return gad__err(GAD_ERR_MEMORY, "rng_new", "cannot allocate");
    gad_rng_seed(r, seed);
    return r;
}

void gad_rng_free(gad_rng *rng) { gad__free(rng, sizeof *rng); }

uint64_t gad_rng_next(gad_rng *r) {
    if (!r) return 0;
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double gad_rng_uniform(gad_rng *r) {
    return (double)(gad_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

double gad_rng_normal(gad_rng *r) {
    if (!r) return 0;
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    double u1, u2;
    do u1 = gad_rng_uniform(r); while (u1 <= 0.0);
    u2 = gad_rng_uniform(r);
    double rad = sqrt(-2.0 * log(u1)), th = 6.283185307179586 * u2;
    r->spare = rad * sin(th);
    r->has_spare = 1;
    return rad * cos(th);
}

int64_t gad_rng_int(gad_rng *r, int64_t lo, int64_t hi) {
    if (!r || hi <= lo) return lo;
    uint64_t range = (uint64_t)hi - (uint64_t)lo;
    /* Rejection: accept x only below the largest multiple of range that
     * fits in 2^64, so that x % range has no bias. */
    uint64_t rem = (UINT64_MAX % range + 1) % range; /* 2^64 mod range */
    uint64_t limit = UINT64_MAX - rem;
    uint64_t x;
    do x = gad_rng_next(r); while (x > limit);
    return (int64_t)((uint64_t)lo + x % range);
}

/* kind 0: uniform [a, b); kind 1: normal (mean a, std b). */
static gad_tensor *rng_tensor(const char *op, gad_rng *r, const int64_t *shape,
                              int rank, gad_dtype_t dtype, int kind, double a,
                              double b) {
    if (!r) return gad__err(GAD_ERR_DOMAIN, op, "generator is NULL");
    if (dtype != GAD_F32 && dtype != GAD_F64 && !gad__is_half(dtype))
        return gad__err(GAD_ERR_DTYPE, op, "needs a float dtype, got %s",
                        gad_dtype_name(dtype));
    if (!(isfinite(a) && isfinite(b)) || (kind == 0 && b < a) ||
        (kind == 1 && b < 0))
        return gad__err(GAD_ERR_DOMAIN, op, "bad parameters %g, %g", a, b);
    gad_tensor *t = gad__tensor_new(op, GAD_DEV_HOST, dtype, shape, rank);
    if (!t) return NULL;
    for (int64_t i = 0; i < t->numel; i++) {
        double v = kind == 0 ? a + (b - a) * gad_rng_uniform(r)
                             : a + b * gad_rng_normal(r);
        if (gad__is_half(dtype)) { /* the f32 draw, rounded once */
            uint16_t *h = (uint16_t *)gad__ptr(t) + i;
            *h = dtype == GAD_F16 ? gad__f32_to_f16((float)v) : gad__f32_to_bf16((float)v);
            if (kind == 0 && b > a) /* below the open bound: the half under it */
                while (gad__elem_f64(dtype, h) >= b && gad__elem_f64(dtype, h) > a)
                    *h = (*h & 0x7fff) == 0 ? 0x8001 : *h & 0x8000 ? *h + 1 : *h - 1;
        } else if (dtype == GAD_F32) {
            float f = (float)v;
            /* rounding to f32 must not reach the open upper bound */
            if (kind == 0 && f >= (float)b && b > a) f = nextafterf((float)b, (float)a);
            ((float *)gad__ptr(t))[i] = f;
        } else {
            if (kind == 0 && v >= b && b > a) v = nextafter(b, a);
            ((double *)gad__ptr(t))[i] = v;
        }
    }
    return gad__own_on_default(op, t);
}

gad_tensor *gad_rng_uniform_tensor(gad_rng *rng, const int64_t *shape, int rank,
                                   gad_dtype_t dtype, double lo, double hi) {
    return rng_tensor("rng_uniform", rng, shape, rank, dtype, 0, lo, hi);
}

gad_tensor *gad_rng_normal_tensor(gad_rng *rng, const int64_t *shape, int rank,
                                  gad_dtype_t dtype, double mean, double std) {
    return rng_tensor("rng_normal", rng, shape, rank, dtype, 1, mean, std);
}

gad_tensor *gad_rng_int_tensor(gad_rng *rng, const int64_t *shape, int rank,
                               int64_t lo, int64_t hi) {
    if (!rng) return gad__err(GAD_ERR_DOMAIN, "rng_int", "generator is NULL");
    if (hi <= lo)
        return gad__err(GAD_ERR_DOMAIN, "rng_int", "empty range [%lld, %lld)",
                        (long long)lo, (long long)hi);
    gad_tensor *t = gad__tensor_new("rng_int", GAD_DEV_HOST, GAD_I64, shape, rank);
    if (!t) return NULL;
    int64_t *p = gad__ptr(t);
    for (int64_t i = 0; i < t->numel; i++) p[i] = gad_rng_int(rng, lo, hi);
    return gad__own_on_default("rng_int", t);
}

gad_tensor *gad__sample_values(gad_rng *r, const int64_t *shape, int rank, double lo,
                               double hi, double away, double push) {
    int saved = gad__host_default_begin();
    gad_tensor *t = gad_rng_uniform_tensor(r, shape, rank, GAD_F64, lo, hi);
    gad__host_default_end(saved);
    if (!t) return NULL;
    double *p = gad__ptr(t);
    for (int64_t i = 0; i < t->numel; i++) {
        if (away > 0 && p[i] > -away && p[i] < away) p[i] = p[i] < 0 ? p[i] - away : p[i] + away;
        if (push > 0) p[i] = p[i] < 0 ? p[i] - push : p[i] + push;
    }
    return t;
}

void gad__sample_move(gad_tensor *t, double c0, double c1, double within, double push) {
    double *p = gad__ptr(t);
    for (int64_t i = 0; i < t->numel; i++)
        if (within == 0 || fabs(p[i] - c0) < within || fabs(p[i] - c1) < within)
            p[i] += p[i] > 0 ? push : -push;
}
