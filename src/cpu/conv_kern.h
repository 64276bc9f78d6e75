/* conv_kern.h: the convolution's own micro-kernels (conv_avx512.c), which
 * conv_tmpl.h's stride-1 path calls on CPUs that have them. */
#ifndef GAD_CONV_KERN_H
#define GAD_CONV_KERN_H

#include <stdint.h>

/* Rows of a tile and positions of a tile (three AVX-512 vectors). */
#define CONV_K8_MR 8
#define CONV_K8_NR 48

/* c[r * ldc + j] = sum over taps t and channels k of a[(t * K + k) * 8 + r]
 * * b[k * ldb + shift[t] + j], r < 8, j < 48: a tile of the sum of shifted
 * products, the whole depth taps * K in registers. Only call once
 * gad__gemm_isa() (gemm_int.h) has said 3 (AVX-512F). */
void gad__conv_s8x48_avx512(int64_t taps, const int64_t *shift, int64_t K, const float *a,
                            const float *b, int64_t ldb, float *c, int64_t ldc);

#endif
