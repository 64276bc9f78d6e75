/* half_vec.h: the conversions of half.h over arrays, for every layer
 * (core's casts, the kernels' half paths, loading checkpoints). Each picks
 * the widest path this CPU has at run time (F16C vcvtps2ph/vcvtph2ps,
 * AVX-512 BF16 vcvtneps2bf16, AVX-512F integer arithmetic, else the scalar
 * loop) and gives exactly half.h's bits: round to nearest even, PyTorch
 * 2.x's NaNs (half.h says which). One thread: the caller
 * splits large arrays over gad's pool. x and y must not overlap. */
#ifndef GAD_HALF_VEC_H
#define GAD_HALF_VEC_H

#include <stdint.h>

void gad__f32_to_f16_n(const float *x, uint16_t *y, int64_t n);
void gad__f16_to_f32_n(const uint16_t *x, float *y, int64_t n);
void gad__f32_to_bf16_n(const float *x, uint16_t *y, int64_t n);
void gad__bf16_to_f32_n(const uint16_t *x, float *y, int64_t n);

/* Test hook: which paths the four may take. GAD_HALF_VEC_AUTO (default):
 * the best this CPU has; GAD_HALF_VEC_PORTABLE: no F16C or BF16
 * instructions (the AVX-512F integer path where the CPU has AVX-512F);
 * GAD_HALF_VEC_SCALAR: half.h's loop. Returns the previous setting. Not
 * for concurrent use with running conversions. */
enum { GAD_HALF_VEC_AUTO = 0, GAD_HALF_VEC_PORTABLE = 1, GAD_HALF_VEC_SCALAR = 2 };
int gad__half_vec_force(int level);
/* The path f32 -> f16 and f32 -> bf16 take now, in words ("f16c",
 * "avx512bf16", "avx512f", "scalar"): for the tests' and benchmarks' logs. */
const char *gad__half_vec_path(int to_bf16);

#endif
