/* gemm_half_int.h: what the files of the half-precision CPU GEMM share
 * (gemm_half.c, the driver; gemm_bf16_avx512.c, the AVX-512 BF16 kernel and
 * its packing; gemm_amx.c, the AMX-BF16 kernel): the packed layouts and the
 * kernels' contract. */
#ifndef GAD_GEMM_HALF_INT_H
#define GAD_GEMM_HALF_INT_H

#include "cpu/gemm_int.h"

#include <stddef.h>
#include <stdint.h>

/* Packed bf16 operands hold pairs of consecutive K values (the layout that
 * VDPBF16PS and TDPBF16PS read: one 32-bit word = two bf16, the lower k in
 * the low half). A block of kc values of K has kp = ceil(kc / 2) pairs (an
 * odd kc ends with a zero partner), or, for AMX, a multiple of 16 pairs.
 *
 * B micro-panel (32 columns): word [p*32 + j] = (op(B)(2p, j), op(B)(2p+1, j)).
 * A micro-panel for the AVX-512 kernel (12 rows): word [p*12 + i] =
 *   (op(A)(i, 2p), op(A)(i, 2p+1)).
 * A micro-panel for AMX (32 rows): chunks of 16 pairs, each 32 rows of 16
 *   words: word [(c*32 + i)*16 + q] = pair p = 16c + q of row i.
 * Rows/columns past the matrix and pairs past K are zero. */
#define HGEMM_NR 32

/* Pack rows [0, mc) and pairs [0, kp) of op(A) (element (i, k) at
 * A[i*rsa + k*csa]; kc values of K are real, the rest zero) into 12-row
 * (AVX-512) micro-panels of kp pairs each. */
void gad__hgemm_pack_a12(int64_t mc, int64_t kc, int64_t kp, const uint16_t *A, int64_t lda,
                         int ta, uint32_t *dst);
/* The same into 32-row AMX micro-panels (kp a multiple of 16). */
void gad__hgemm_pack_a32(int64_t mc, int64_t kc, int64_t kp, const uint16_t *A, int64_t lda,
                         int ta, uint32_t *dst);
/* Pack pairs [0, kp) and columns [0, nc) of op(B) into 32-column
 * micro-panels (AVX-512 BW when the CPU has it, else plain C). */
void gad__hgemm_pack_b32(int64_t kc, int64_t kp, int64_t nc, const uint16_t *B, int64_t ldb,
                         int tb, uint32_t *dst, int vec);

/* The micro-kernels: acc = the packed A micro-panel times the packed B one
 * over kp pairs, f32 accumulation; c = acc when !accumulate (c is not read),
 * else c = c + acc. b is 64-byte aligned. */
#ifdef GEMM_X86
/* gemm_bf16_avx512.c: rows (12, 8 or 4) x 32, VDPBF16PS. Row i's pair p of
 * A is the 32-bit word at (const char *)a + i * ars + p * aps: a packed
 * micro-panel (ars 4, aps 48), or op(A) itself when it is stored by rows
 * (ars the row's bytes, aps 4). With h, the tile is written to h (ldh) in
 * bf16 instead, rounded as gad__f32_to_bf16 from acc, or from c + acc when
 * accumulate, and c is not written. */
void gad__hgemm_kern_avx512(int rows, int64_t kp, const void *a, int64_t ars, int64_t aps,
                            const uint32_t *b, float *c, int64_t ldc, int accumulate,
                            uint16_t *h, int64_t ldh);

/* f32 to bf16 (16 lanes), as gad__f32_to_bf16: round to nearest even in
 * integer arithmetic, a NaN becomes 0xffff. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static inline __m256i
gad__hgemm_rne(__m512 v) {
    __m512i u = _mm512_castps_si512(v);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i t = _mm512_srli_epi32(
        _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb)), 16);
    t = _mm512_mask_mov_epi32(t, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q),
                              _mm512_set1_epi32(0xffff));
    return _mm512_cvtepi32_epi16(t);
}
/* gemm_amx.c: 32 x 32 tile (2 x 2 tiles of 16 x 16), TDPBF16PS; kp a
 * multiple of 16. The thread must have loaded the tile configuration
 * (gad__hgemm_amx_begin) and releases it with gad__hgemm_amx_end. */
void gad__hgemm_kern_amx(int64_t kp, const uint32_t *a, const uint32_t *b, float *c,
                         int64_t ldc, int accumulate);
void gad__hgemm_amx_begin(void);
void gad__hgemm_amx_end(void);
/* 1 when this CPU has AMX-BF16 and the kernel let this process use the
 * tile data (asked once, with arch_prctl on Linux), else 0. */
int gad__hgemm_amx_usable(void);
#endif

#endif
