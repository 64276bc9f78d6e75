/* vmath.h: single-precision exp and tanh written as straight-line code that
 * compilers vectorize (no calls, no branches but selects), for the f32
 * elementwise kernels. Within 2 ulp of the correctly rounded results over
 * the whole float range; NaN and infinities behave as libm's.
 *
 * exp: e^x = 2^n e^r with n = round(x / ln 2) and r = x - n ln 2 in two
 * parts (Cody & Waite, "Software Manual for the Elementary Functions",
 * 1980), e^r = 1 + r + r^2 P(r) with P a degree-4 minimax fit on
 * [-ln2/2, ln2/2]; 2^n is applied in two halves so that results near the
 * underflow and overflow thresholds stay exact.
 * tanh: x + x^3 Q(x^2) (a degree-4 minimax fit) for |x| < 0.625, else
 * sign(x) (1 - 2 / (e^{2|x|} + 1)), which has no cancellation there (|x|
 * capped at 20, where it rounds to 1). */
#ifndef GAD_VMATH_H
#define GAD_VMATH_H

#include <stdint.h>
#include <string.h>

static inline float gad__f32_from_bits(int32_t i) {
    float f;
    memcpy(&f, &i, sizeof f);
    return f;
}

static inline int32_t gad__f32_bits(float f) {
    int32_t i;
    memcpy(&i, &f, sizeof i);
    return i;
}

static inline float gad__expf(float x) {
    /* beyond these, e^x is inf or rounds to 0 (NaN passes through) */
    x = x < -104.0f ? -104.0f : x;
    x = x > 88.8f ? 88.8f : x;
    /* n = round(x log2 e) by the 1.5 * 2^23 trick: its low bits hold n */
    const float shifter = 12582912.0f;
    float t = x * 1.44269504088896341f + shifter;
    int32_t n = gad__f32_bits(t) - gad__f32_bits(shifter);
    float nf = t - shifter;
    float r = x - nf * 0.693145751953125f;      /* ln 2, high part (exact) */
    r = r - nf * 1.428606765330187045e-06f;     /* ln 2, low part */
    float p = 0.001381461275741458f;
    p = p * r + 0.008368710055947304f;
    p = p * r + 0.04166838899254799f;
    p = p * r + 0.1666652113199234f;
    p = p * r + 0.4999999403953552f;
    float e = 1.0f + r + r * r * p;
    /* 2^n = 2^h 2^(n-h), each half a normal float (unsigned shifts: a
     * NaN input makes n garbage, and then e is NaN anyway) */
    int32_t h = n >> 1;
    float s1 = gad__f32_from_bits((int32_t)((uint32_t)(h + 127) << 23));
    float s2 = gad__f32_from_bits((int32_t)((uint32_t)(n - h + 127) << 23));
    return e * s1 * s2;
}

static inline float gad__tanhf(float x) {
    float a = x < 0 ? -x : x;
    float x2 = x * x;
    float q = -0.005704986397176981f;
    q = q * x2 + 0.02063908614218235f;
    q = q * x2 - 0.05373971536755562f;
    q = q * x2 + 0.13331441581249237f;
    q = q * x2 - 0.3333328068256378f;
    float small = x + x * x2 * q;
    float big_a = a > 20.0f ? 20.0f : a; /* tanh(20) rounds to 1; NaN stays */
    float big = 1.0f - 2.0f / (gad__expf(2.0f * big_a) + 1.0f);
    big = x < 0 ? -big : big;
    return a < 0.625f ? small : big;
}

/* 1 / (1 + e^-x) */
static inline float gad__sigmoidf(float x) { return 1.0f / (1.0f + gad__expf(-x)); }

#endif
