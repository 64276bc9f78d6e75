/* half.h: scalar conversions between f32 and the two-byte floats, f16
 * (IEEE 754-2008 binary16: 1 sign, 5 exponent, 10 mantissa bits) and bf16
 * (bfloat16: the top half of an f32). Widening is exact. Narrowing rounds
 * to nearest, ties to even, as PyTorch's conversions do: a value past the
 * largest finite half rounds to an infinity of its sign, tiny values to
 * the half's subnormals or a signed zero. NaNs as PyTorch 2.x's tensor
 * conversions give them on x86 (its tables, tests/reference/half, are
 * the reference; they are the F16C instructions' results): f32 -> f16
 * keeps the sign and the payload's top 9 bits and sets the quiet bit
 * (sign|0x7e00|payload>>13); f16 -> f32 sets the quiet bit of a
 * signalling NaN; f32 -> bf16 gives 0xffff whatever the sign and payload;
 * bf16 -> f32 keeps every bit. The vector paths (half_vec.h) give the
 * same bits. */
#ifndef GAD_HALF_H
#define GAD_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t gad__f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float gad__bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline float gad__bf16_to_f32(uint16_t h) { return gad__bits_f32((uint32_t)h << 16); }

static inline uint16_t gad__f32_to_bf16(float f) {
    uint32_t u = gad__f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0xffffu;
    /* add just under half an ulp of the result, plus its low bit: ties go
     * to the even neighbour; a carry into the exponent is the right answer
     * (up to infinity) */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static inline float gad__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) /* Inf, or a NaN made quiet */
        return gad__bits_f32(sign | 0x7f800000u | (man << 13) | (man ? 0x400000u : 0));
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24, exact in f32 */
        float v = (float)man * 0x1p-24f;
        return gad__bits_f32(sign | gad__f32_bits(v));
    }
    return gad__bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline uint16_t gad__f32_to_f16(float f) {
    uint32_t u = gad__f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u | ((a >> 13) & 0x1ffu); /* quiet NaN */
    if (a >= 0x477ff000u) return sign | 0x7c00u;      /* rounds past 65504 */
    if (a < 0x38800000u) {
        /* below the smallest normal f16 (2^-14): a multiple of 2^-24.
         * Adding 0.5 moves the value's bits so that the f32 adder rounds
         * (nearest even) at 2^-24, and the mantissa is the result. */
        float v = gad__bits_f32(a) + 0.5f;
        return sign | (uint16_t)(gad__f32_bits(v) - 0x3f000000u);
    }
    /* normal: rebias the exponent, round the 13 dropped bits to even; a
     * carry into the exponent is right (up to 0x7c00, excluded above) */
    uint32_t r = a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u;
    return sign | (uint16_t)(r >> 13);
}

#endif
