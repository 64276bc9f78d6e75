/* half_vec.c: half.h's conversions over arrays (half_vec.h). */
#include "half_vec.h"
#include "half.h"

static int force_level;

int gad__half_vec_force(int level) {
    int old = force_level;
    force_level = level;
    return old;
}

const char *gad__half_vec_path(int to_bf16) {
    (void)to_bf16;
    return "scalar";
}

void gad__f32_to_f16_n(const float *x, uint16_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = gad__f32_to_f16(x[i]);
}

void gad__f16_to_f32_n(const uint16_t *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = gad__f16_to_f32(x[i]);
}

void gad__f32_to_bf16_n(const float *x, uint16_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = gad__f32_to_bf16(x[i]);
}

void gad__bf16_to_f32_n(const uint16_t *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = gad__bf16_to_f32(x[i]);
}
