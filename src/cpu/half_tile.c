/* half_tile.c: the CPU kernels' conversions of f16/bf16 tiles (issue 29).
 * Kernels that take half operands compute in f32: they widen a tile of
 * input into an f32 buffer, run their f32 loop and round the results once
 * into the half output. Widening is exact; narrowing rounds to nearest
 * even with PyTorch's NaN bits (half.h), the same bits as the scalar
 * functions. Contiguous runs go through half_vec.h's vector conversions
 * (F16C, AVX-512 BF16, chosen at run time); strided ones through the
 * scalar functions (no GAD_CLONES: clang emits no symbol for an extern
 * function with target_clones). A file of its own: half.h and vmath.h
 * cannot share one. */
#include "cpu.h"
#include "half.h"
#include "half_vec.h"

void gad__half_widen(int dt, int64_t n, const uint16_t *x, int64_t sx, float *y) {
    if (sx == 1) {
        if (dt == GAD_BF16) gad__bf16_to_f32_n(x, y, n);
        else gad__f16_to_f32_n(x, y, n);
        return;
    }
    if (dt == GAD_BF16)
        for (int64_t i = 0; i < n; i++) y[i] = gad__bf16_to_f32(x[i * sx]);
    else
        for (int64_t i = 0; i < n; i++) y[i] = gad__f16_to_f32(x[i * sx]);
}

void gad__half_narrow(int dt, int64_t n, const float *x, uint16_t *y, int64_t sy) {
    if (sy == 1) {
        if (dt == GAD_BF16) gad__f32_to_bf16_n(x, y, n);
        else gad__f32_to_f16_n(x, y, n);
    } else if (dt == GAD_BF16) {
        for (int64_t i = 0; i < n; i++) y[i * sy] = gad__f32_to_bf16(x[i]);
    } else {
        for (int64_t i = 0; i < n; i++) y[i * sy] = gad__f32_to_f16(x[i]);
    }
}

float gad__half_get(int dt, const void *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return dt == GAD_BF16 ? gad__bf16_to_f32(h) : gad__f16_to_f32(h);
}

void gad__half_put(int dt, void *p, float v) {
    uint16_t h = dt == GAD_BF16 ? gad__f32_to_bf16(v) : gad__f32_to_f16(v);
    memcpy(p, &h, 2);
}
