/* vmath_ext.h: single-precision sin, cos, tan, asin, acos, atan, atan2,
 * erf, erfc, log1p, expm1, log2, exp2, rsqrt, pow and the activations built
 * on them (elu, selu, mish, exact gelu), for the f32 elementwise kernels.
 * As in vmath.h, straight-line code with selects for branches, which the
 * compiler vectorizes in each GAD_CLONES copy of a kernel (AVX-512, AVX2,
 * baseline) picked at load time.
 *
 * Each function (but rsqrt) takes a float, computes in double and rounds
 * once: the double cores below have a relative error under about 2^-40, so
 * the float result is the correctly rounded one or its neighbour (1 ulp;
 * tests/test_vmath.c sweeps every function against libm's double result
 * rounded to float and asserts <= 2 ulp; the measured maxima are in
 * docs/vmath.md). Double also keeps every float subnormal normal, so no
 * special path is needed for them.
 *
 * Methods (the polynomials are Taylor series truncated where the next term
 * is below 2^-45 relative, or Chebyshev fits (mpmath.chebyfit, near-minimax)
 * whose error is given beside them):
 *  exp, exp2: e^x = 2^n 2^r, n = round(x / ln 2), r reduced in two parts
 *    (Cody & Waite, "Software Manual for the Elementary Functions", 1980),
 *    Taylor to degree 11 on |r| <= ln2/2; 2^n built in the exponent bits.
 *  log: x = 2^k m, m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(s), s =
 *    (m - 1) / (m + 1), |s| <= 0.1716, Taylor to s^15 (fdlibm's reduction).
 *  sin, cos, tan: n = round(x 2/pi), r = x - n pi/2 with pi/2 in three parts
 *    of 30, 30 and 53 bits (Cody-Waite; exact for |x| <= 2^22), Taylor to
 *    degree 13/14 on |r| <= pi/4, the quadrant's sign and swap by bits.
 *    Beyond 2^22 (and for inf) the reduction would need Payne-Hanek's
 *    bits of 2/pi: the kernels leave those lanes to libm's double sin/cos/tan
 *    in a second pass that only runs when a block holds one
 *    (cpu/elementwise.c, fix_unary).
 *  atan, atan2, asin, acos: the quotient of the smaller magnitude by the
 *    larger one, q in [0, 1]; for q > tan(pi/8) atan q = pi/4 + atan u, u =
 *    (q - 1)/(q + 1); atan u = u P(u^2) on u^2 <= 0.1716 (Chebyshev, degree
 *    9, error 1e-15); the octant and the IEEE signed zeros and infinities by
 *    selects. asin x = atan2(x, sqrt((1-x)(1+x))), acos x = atan2(sqrt(..), x).
 *  erf, erfc: |x| < 0.5: erf x = x P(x^2), Taylor to x^21; else erfc |x| =
 *    e^(-x^2) t h(t), t = 2 / (2 + |x|), h a Chebyshev fit of degree 14 on
 *    t in [2/29, 0.8] (error 9e-13), which keeps erfc's relative accuracy
 *    down to its underflow; erf = 1 - erfc, erfc(-x) = 2 - erfc(x).
 *  log1p: log(u) + (x - (u - 1)) / u with u = 1 + x rounded (the second
 *    term is the rounding error of u, exact: Goldberg 1991, thm. 4's idea).
 *  expm1: Taylor to degree 13 for |x| < 0.35, else e^x - 1 in double.
 *  pow: 2^(y log2 |x|) in double, then IEEE 754's special cases by selects.
 * f64 kernels use libm. */
#ifndef GAD_VMATH_EXT_H
#define GAD_VMATH_EXT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline double gad__f64_from_bits(uint64_t i) {
    double d;
    memcpy(&d, &i, sizeof d);
    return d;
}

static inline uint64_t gad__f64_bits(double d) {
    uint64_t i;
    memcpy(&i, &d, sizeof i);
    return i;
}

/* the float entry points: inlined into every loop, so that each vectorizes */
#define GAD_VM_INLINE static inline __attribute__((always_inline))

/* 1.5 * 2^52: v + shifter rounds v to an integer held in the low bits */
#define GAD_VM_SHIFT 6755399441055744.0

/* 2^n from t = n + GAD_VM_SHIFT, |n| <= 1022 */
static inline double gad__vm_pow2n(double t) {
    return gad__f64_from_bits((gad__f64_bits(t) - gad__f64_bits(GAD_VM_SHIFT) + 1023) << 52);
}

/* e^r, 2^r - 1 style Taylor cores: e^r on |r| <= 0.35 (degree 11) */
static inline double gad__vm_expr(double r) {
    double p = 2.505210838544172e-08; /* 1/11! */
    p = p * r + 2.755731922398589e-07;
    p = p * r + 2.7557319223985893e-06;
    p = p * r + 2.48015873015873e-05;
    p = p * r + 0.0001984126984126984;
    p = p * r + 0.001388888888888889;
    p = p * r + 0.008333333333333333;
    p = p * r + 0.041666666666666664;
    p = p * r + 0.16666666666666666;
    p = p * r + 0.5;
    return 1.0 + r + r * r * p;
}

/* e^x for float results: x clamped to [-200, 200], beyond which a float
 * is 0 or inf anyway (NaN passes). */
static inline double gad__vm_exp(double x) {
    x = x < -200.0 ? -200.0 : x;
    x = x > 200.0 ? 200.0 : x;
    double t = x * 1.4426950408889634 + GAD_VM_SHIFT;
    double n = t - GAD_VM_SHIFT;
    double r = x - n * 6.93147180369123816490e-01; /* ln 2 high: 32 bits */
    r = r - n * 1.90821492927058770002e-10;         /* ln 2 low */
    return gad__vm_expr(r) * gad__vm_pow2n(t);
}

/* 2^x for float results, clamped as gad__vm_exp. */
static inline double gad__vm_exp2(double x) {
    x = x < -300.0 ? -300.0 : x;
    x = x > 300.0 ? 300.0 : x;
    double t = x + GAD_VM_SHIFT;
    double r = x - (t - GAD_VM_SHIFT); /* exact, |r| <= 1/2 */
    return gad__vm_expr(r * 0.6931471805599453) * gad__vm_pow2n(t);
}

/* log x = k ln 2 + lm for a positive finite normal double x */
static inline void gad__vm_log_parts(double x, double *k, double *lm) {
    /* the offset moves m's range to [sqrt(1/2), sqrt(2)) */
    uint64_t u = gad__f64_bits(x) + (0x3ff0000000000000ull - 0x3fe6a09e667f3bcdull);
    *k = gad__f64_from_bits((u >> 52) | 0x4330000000000000ull) - (4503599627370496.0 + 1023.0);
    double m = gad__f64_from_bits((u & 0x000fffffffffffffull) + 0x3fe6a09e667f3bcdull);
    double s = (m - 1.0) / (m + 1.0), s2 = s * s;
    double p = 1.0 / 15;
    p = p * s2 + 1.0 / 13;
    p = p * s2 + 1.0 / 11;
    p = p * s2 + 1.0 / 9;
    p = p * s2 + 1.0 / 7;
    p = p * s2 + 1.0 / 5;
    p = p * s2 + 1.0 / 3;
    *lm = 2.0 * s + 2.0 * s * s2 * p;
}

/* log x for any double x: NaN below 0, -inf at 0, inf at inf */
static inline double gad__vm_log(double x) {
    double k, lm;
    gad__vm_log_parts(x, &k, &lm);
    double r = k * 6.93147180369123816490e-01 + (lm + k * 1.90821492927058770002e-10);
    r = x == 0 ? -INFINITY : r;
    r = x == INFINITY ? x : r;
    return x < 0 || x != x ? NAN : r;
}

/* ---------------------------------------------------------------- exp, log */

GAD_VM_INLINE float gad__exp2f(float x) { return (float)gad__vm_exp2(x); }

GAD_VM_INLINE float gad__log2f(float x) {
    double k, lm;
    gad__vm_log_parts(x, &k, &lm);
    double r = k + lm * 1.4426950408889634;
    r = x == 0 ? -INFINITY : r;
    r = x == INFINITY ? INFINITY : r;
    return (float)(x < 0 || x != x ? NAN : r);
}

static inline double gad__vm_log1p(double d) {
    double u = 1.0 + d;
    double c = (d - (u - 1.0)) / u; /* the rounding error of u, relative */
    double r = gad__vm_log(u) + c;
    r = u == INFINITY ? u : r; /* c is NaN there */
    r = u == 0 ? -INFINITY : r; /* and here */
    return d == 0 ? d : r;     /* log1p(-0) = -0 */
}

GAD_VM_INLINE float gad__log1pf(float x) { return (float)gad__vm_log1p(x); }

static inline double gad__vm_expm1(double d) {
    double x = d < -120.0 ? -120.0 : d;
    double p = 1.6059043836821613e-10; /* 1/13! */
    p = p * x + 2.08767569878681e-09;
    p = p * x + 2.505210838544172e-08;
    p = p * x + 2.755731922398589e-07;
    p = p * x + 2.7557319223985893e-06;
    p = p * x + 2.48015873015873e-05;
    p = p * x + 0.0001984126984126984;
    p = p * x + 0.001388888888888889;
    p = p * x + 0.008333333333333333;
    p = p * x + 0.041666666666666664;
    p = p * x + 0.16666666666666666;
    p = p * x + 0.5;
    double small = x + x * x * p;
    double big = gad__vm_exp(x) - 1.0;
    double r = fabs(x) < 0.35 ? small : big;
    return d == 0 ? d : r; /* expm1(-0) = -0 */
}

GAD_VM_INLINE float gad__expm1f(float x) { return (float)gad__vm_expm1(x); }

/* 1 / sqrt(x) in float: two correctly rounded steps, within 1 ulp, and
 * twice as fast as the double form (16 lanes, not 8, through the divider) */
GAD_VM_INLINE float gad__rsqrtf(float x) { return 1.0f / sqrtf(x); }

/* ----------------------------------------------------------- sin, cos, tan */

/* Beyond this |x| the kernels take sin, cos and tan from libm (above). */
#define GAD_VM_TRIG_MAX 4194304.0f /* 2^22 */

/* r = x - n pi/2 and n's low bits (the quadrant), for |x| <= 2^22; lanes
 * beyond are computed as 0 (and replaced by the kernel). */
static inline double gad__vm_trig_reduce(float xf, uint64_t *q) {
    double x = xf;
    x = fabs(x) <= (double)GAD_VM_TRIG_MAX ? x : 0.0;
    double t = x * 0.6366197723675814 + GAD_VM_SHIFT;
    *q = gad__f64_bits(t);
    double n = t - GAD_VM_SHIFT;
    double r = x - n * 0x1.921fb54800000p+0;
    r = r - n * -0x1.de973dc800000p-31;
    r = r - n * -0x1.9d9cceba3f91fp-62;
    return n == 0 ? x : r; /* exact, and -0 stays -0 */
}

/* sin r and cos r for |r| <= pi/4 */
static inline double gad__vm_sin_r(double r) {
    double r2 = r * r;
    double p = 1.6059043836821613e-10; /* 1/13! */
    p = p * r2 - 2.505210838544172e-08;
    p = p * r2 + 2.755731922398589e-06;
    p = p * r2 - 0.0001984126984126984;
    p = p * r2 + 0.008333333333333333;
    p = p * r2 - 0.16666666666666666;
    return r == 0 ? r : r + r * (r2 * p); /* sin(-0) = -0 */
}

static inline double gad__vm_cos_r(double r) {
    double r2 = r * r;
    double p = 1.1470745597729725e-11; /* 1/14! */
    p = p * r2 - 2.08767569878681e-09;
    p = p * r2 + 2.755731922398589e-07;
    p = p * r2 - 2.48015873015873e-05;
    p = p * r2 + 0.001388888888888889;
    p = p * r2 - 0.041666666666666664;
    p = p * r2 + 0.5;
    return 1.0 - r2 * p;
}

/* v with its sign flipped where bit 1 of q is set */
static inline double gad__vm_flip(double v, uint64_t q) {
    return gad__f64_from_bits(gad__f64_bits(v) ^ ((q & 2) << 62));
}

GAD_VM_INLINE float gad__sinf(float x) {
    uint64_t q;
    double r = gad__vm_trig_reduce(x, &q);
    double s = gad__vm_sin_r(r), c = gad__vm_cos_r(r);
    return (float)gad__vm_flip((q & 1) ? c : s, q);
}

GAD_VM_INLINE float gad__cosf(float x) {
    uint64_t q;
    double r = gad__vm_trig_reduce(x, &q);
    double s = gad__vm_sin_r(r), c = gad__vm_cos_r(r);
    return (float)gad__vm_flip((q & 1) ? s : c, q + 1);
}

GAD_VM_INLINE float gad__tanf(float x) {
    uint64_t q;
    double r = gad__vm_trig_reduce(x, &q);
    double s = gad__vm_sin_r(r), c = gad__vm_cos_r(r);
    double num = (q & 1) ? -c : s, den = (q & 1) ? s : c;
    return (float)(num / den);
}

/* ------------------------------------------------------ atan, asin, acos */

/* atan u for |u| <= tan(pi/8): u P(u^2), Chebyshev fit of atan(u)/u */
static inline double gad__vm_atan_r(double u) {
    double s = u * u;
    double p = -0.025316479573776477;
    p = p * s + 0.05024762118940128;
    p = p * s - 0.0650598296717084;
    p = p * s + 0.07673535428183285;
    p = p * s - 0.09089529956562307;
    p = p * s + 0.11111048853751296;
    p = p * s - 0.14285712661684793;
    p = p * s + 0.19999999978392663;
    p = p * s - 0.3333333333322143;
    p = p * s + 0.999999999999999;
    return u * p;
}

/* atan2(y, x) with IEEE 754's special cases, for doubles from floats */
static inline double gad__vm_atan2(double y, double x) {
    double ax = fabs(x), ay = fabs(y);
    int swap = ay > ax;
    double num = swap ? ax : ay, den = swap ? ay : ax; /* num <= den */
    int far = num > 0.41421356237309503 * den;        /* q > tan(pi/8) */
    double a = gad__vm_atan_r(far ? (num - den) / (num + den) : num / den);
    a = far ? 0.7853981633974483 + a : a;
    a = num == 0 ? 0.0 : a;                                   /* 0/0: 0 */
    a = num == INFINITY ? 0.7853981633974483 : a;             /* inf/inf */
    a = swap ? 1.5707963267948966 - a : a;
    int neg_x = (gad__f64_bits(x) >> 63) != 0; /* -0 counts: atan2(0, -0) = pi */
    a = neg_x ? 3.141592653589793 - a : a;
    a = copysign(a, y);
    return x != x || y != y ? x + y : a;
}

GAD_VM_INLINE float gad__atan2f(float y, float x) { return (float)gad__vm_atan2(y, x); }

GAD_VM_INLINE float gad__atanf(float x) { return (float)gad__vm_atan2(x, 1.0); }

GAD_VM_INLINE float gad__asinf(float x) {
    double d = x;
    return (float)gad__vm_atan2(d, sqrt((1.0 - d) * (1.0 + d)));
}

GAD_VM_INLINE float gad__acosf(float x) {
    double d = x;
    return (float)gad__vm_atan2(sqrt((1.0 - d) * (1.0 + d)), d);
}

/* ------------------------------------------------------------- erf, erfc */

/* erf x = x P(x^2) for |x| < 0.5, Taylor: (-1)^n 2/sqrt(pi) / (n! (2n+1)) */
static inline double gad__vm_erf_small(double x) {
    double s = x * x;
    double p = 1.4807192815879218e-08;
    p = p * s - 1.6365844691234924e-07;
    p = p * s + 1.6462114365889248e-06;
    p = p * s - 1.492565035840625e-05;
    p = p * s + 0.00012055332981789664;
    p = p * s - 0.0008548327023450853;
    p = p * s + 0.005223977625442188;
    p = p * s - 0.026866170645131252;
    p = p * s + 0.11283791670955126;
    p = p * s - 0.37612638903183754;
    p = p * s + 1.1283791670955126;
    return x * p;
}

/* erfc x for x >= 0.5 (NaN passes): e^(-x^2) t h(t), t = 2 / (2 + x) */
static inline double gad__vm_erfc_pos(double x) {
    x = x > 27.0 ? 27.0 : x;
    double t = 2.0 / (2.0 + x);
    double h = 0.06409436544233683;
    h = h * t - 0.38697550092222777;
    h = h * t + 0.9935039060400712;
    h = h * t - 1.368270897059197;
    h = h * t + 1.0333093644507425;
    h = h * t - 0.39955016828638007;
    h = h * t + 0.12854764733762575;
    h = h * t - 0.07570087918192316;
    h = h * t - 0.05615382262043316;
    h = h * t - 0.003722341406887659;
    h = h * t + 0.08356611731177613;
    h = h * t + 0.17633286738729198;
    h = h * t + 0.24683117031235058;
    h = h * t + 0.2820948641873171;
    h = h * t + 0.28209479052842634;
    return gad__vm_exp(-x * x) * t * h;
}

static inline double gad__vm_erfc(double x) {
    double ax = fabs(x);
    double big = gad__vm_erfc_pos(ax < 0.5 ? 0.5 : ax);
    double r = x > 0 ? big : 2.0 - big;
    return ax < 0.5 ? 1.0 - gad__vm_erf_small(x) : r;
}

GAD_VM_INLINE float gad__erff(float x) {
    double d = x, ad = fabs(d);
    double big = copysign(1.0 - gad__vm_erfc_pos(ad < 0.5 ? 0.5 : ad), d);
    return (float)(ad < 0.5 ? gad__vm_erf_small(d) : big);
}

GAD_VM_INLINE float gad__erfcf(float x) { return (float)gad__vm_erfc(x); }

/* ------------------------------------------------------------ activations */

/* gelu, exact: x Phi(x) = x erfc(-x / sqrt 2) / 2 */
GAD_VM_INLINE float gad__gelu_erff(float x) {
    double d = x;
    double r = 0.5 * d * gad__vm_erfc(d * -0.7071067811865476);
    return (float)(d == -INFINITY ? NAN : r); /* -inf * 0, as PyTorch */
}

/* its derivative: Phi(x) + x phi(x) */
GAD_VM_INLINE float gad__dgelu_erff(float x) {
    double d = x;
    double pdf = gad__vm_exp(-0.5 * d * d) * 0.3989422804014327;
    return (float)(0.5 * gad__vm_erfc(d * -0.7071067811865476) + d * pdf);
}

/* elu: x for x > 0, else alpha (e^x - 1); selu = scale elu(x, alpha) */
GAD_VM_INLINE float gad__eluf(float x, float alpha) {
    double d = x;
    float r = (float)(alpha * gad__vm_expm1(d));
    return x > 0 ? x : x == 0 ? 0.0f : r; /* elu(-0) = +0, as PyTorch */
}

#ifndef GAD_SELU_ALPHA /* as elementwise.def */
#define GAD_SELU_ALPHA 1.6732632423543772848170429916717
#define GAD_SELU_SCALE 1.0507009873554804934193349852946
#endif

GAD_VM_INLINE float gad__seluf(float x) {
    double d = x;
    double r = d > 0 ? d : GAD_SELU_ALPHA * gad__vm_expm1(d);
    return (float)(d == 0 ? 0.0 : GAD_SELU_SCALE * r);
}

/* mish = x tanh(softplus x) = x n / (n + 2), n = e^x (e^x + 2), with x
 * capped at 40, where the ratio is 1 in double (NaN passes). */
static inline double gad__vm_mish_t(double d) {
    double e = gad__vm_exp(d > 40.0 ? 40.0 : d);
    double n = e * (e + 2.0);
    return n / (n + 2.0);
}

GAD_VM_INLINE float gad__mishf(float x) {
    double d = x;
    double r = d * gad__vm_mish_t(d);
    return (float)(d == -INFINITY ? NAN : r); /* -inf * 0, as PyTorch */
}

/* mish' = t + x (1 - t^2) sigmoid(x), t = tanh(softplus x) */
GAD_VM_INLINE float gad__dmishf(float x) {
    double d = x, t = gad__vm_mish_t(d);
    double sg = 1.0 / (1.0 + gad__vm_exp(-d));
    return (float)(t + d * (1.0 - t * t) * sg);
}

/* ---------------------------------------------------------------- pow */

/* x^y with IEEE 754's (and C99's) special cases */
GAD_VM_INLINE float gad__powf(float xf, float yf) {
    double x = xf, y = yf, ax = fabs(x);
    double k, lm;
    gad__vm_log_parts(ax, &k, &lm);
    double l2 = k + lm * 1.4426950408889634; /* log2 |x| */
    l2 = ax == 0 ? -INFINITY : l2;
    l2 = ax == INFINITY ? INFINITY : l2;
    double m = gad__vm_exp2(y * l2); /* 0 * inf is NaN: fixed below */
    /* y's kind: an integer, and an odd one (floats of 2^24 and more are
     * even integers; the shifter rounds smaller ones) */
    double ay = fabs(y);
    double yr = (ay + GAD_VM_SHIFT) - GAD_VM_SHIFT; /* round |y| */
    int is_int = yr == ay;
    int odd = is_int && ay < 16777216.0 && ((gad__f64_bits(ay + GAD_VM_SHIFT) & 1) != 0);
    int neg_x = (gad__f64_bits(x) >> 63) != 0;
    m = neg_x && odd ? -m : m;
    m = x < 0 && ax != INFINITY && !is_int ? NAN : m;
    m = x != x || y != y ? x + y : m;
    m = y == 0 || x == 1 || (ax == 1 && ay == INFINITY) ? 1.0 : m;
    return (float)m;
}

#endif
