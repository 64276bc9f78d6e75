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

/* acc[k * lda + m] += sum over p < np of g[p * ldg + m] * x[p * ldx + k],
 * m < M (a multiple of 16), k < K: a weight gradient's block for one tap,
 * with gy and the shifted input both position-major; tiles of up to 64 rows
 * (4 vectors of m) by 6 columns (broadcasts of k), or 32 or 16 rows by 12,
 * summed over the positions in registers. Only call once gad__gemm_isa()
 * has said 3. */
void gad__conv_swgrad_avx512(int64_t np, int64_t M, int64_t K, const float *g, int64_t ldg,
                             const float *x, int64_t ldx, float *acc, int64_t lda);

/* dst[p * ch + c] = src[c * ld + p] for c < ch, p < n: 16 x 16 blocks in
 * registers, the edges element by element. Only call once gad__gemm_isa()
 * has said 3. */
void gad__conv_transpose_avx512(const float *src, int64_t ch, int64_t n, int64_t ld,
                                float *dst);

#endif
