/* gemm_bf16_avx512.c: the bf16 GEMM's micro-kernel for AVX-512 BF16 and the
 * packing of bf16 operands into pairs of K (the layouts are in
 * gemm_half_int.h; the driver is gemm_half.c).
 *
 * VDPBF16PS (Intel SDM vol. 2, "VDPBF16PS: Dot Product of BF16 Pairs
 * Accumulated into Packed Single Precision") adds to each f32 lane the two
 * products of one pair of bf16 from each source: one instruction is 32
 * multiply-adds on a 512-bit register. The products of two bf16 are exact in
 * f32; the sums round to nearest even whatever MXCSR says, input subnormals
 * count as zero and subnormal results are flushed to zero (the SDM's
 * "DAZ, FTZ, RNE" for this instruction). The tile is 12 rows x 32 columns
 * as in the f32 kernel: 24 accumulators, two B registers, and each A pair
 * broadcast from memory (an embedded broadcast of the instruction). */
#include "cpu/gemm_half_int.h"

#include <string.h>

#ifdef GEMM_X86

static inline uint32_t ld32(const uint16_t *p) {
    uint32_t w;
    memcpy(&w, p, 4);
    return w;
}

void gad__hgemm_pack_a12(int64_t mc, int64_t kc, int64_t kp, const uint16_t *A, int64_t lda,
                         int ta, uint32_t *dst) {
    for (int64_t ir = 0; ir < mc; ir += 12, dst += kp * 12) {
        int m = (int)(mc - ir < 12 ? mc - ir : 12);
        if (!ta) {
            /* op(A)(i, k) = A[i*lda + k]: a pair is one word of row i. With
             * an even lda the full pairs are a transpose of 32-bit words
             * (rows of lda / 2 words), done 16 x 16 in registers by the f32
             * GEMM's packing; an odd lda (rows not word-aligned to each
             * other) word by word */
            const uint16_t *rows[12];
            for (int i = 0; i < m; i++) rows[i] = A + (ir + i) * lda;
            int64_t p = 0;
            if (lda % 2 == 0) {
                p = kc / 2;
                gad__gemm_stpack_avx512(p, (const float *)(const void *)rows[0], lda / 2, m, 12,
                                        (float *)(void *)dst, 12);
            }
            for (; 2 * p + 1 < kc; p++) {
                uint32_t *d = dst + p * 12;
                int i = 0;
                for (; i < m; i++) d[i] = ld32(rows[i] + 2 * p);
                for (; i < 12; i++) d[i] = 0;
            }
            for (; p < kp; p++) { /* an odd last k, then zeros */
                uint32_t *d = dst + p * 12;
                int i = 0;
                for (; i < m; i++) d[i] = 2 * p < kc ? rows[i][2 * p] : 0;
                for (; i < 12; i++) d[i] = 0;
            }
        } else {
            /* op(A)(i, k) = A[k*lda + i]: rows k and k+1 interleaved */
            for (int64_t p = 0; p < kp; p++) {
                uint32_t *d = dst + p * 12;
                const uint16_t *lo = 2 * p < kc ? A + 2 * p * lda + ir : NULL;
                const uint16_t *hi = 2 * p + 1 < kc ? A + (2 * p + 1) * lda + ir : NULL;
                int i = 0;
                for (; i < m; i++)
                    d[i] = (lo ? lo[i] : 0u) | (hi ? (uint32_t)hi[i] << 16 : 0u);
                for (; i < 12; i++) d[i] = 0;
            }
        }
    }
}

void gad__hgemm_pack_a32(int64_t mc, int64_t kc, int64_t kp, const uint16_t *A, int64_t lda,
                         int ta, uint32_t *dst) {
    for (int64_t ir = 0; ir < mc; ir += 32, dst += kp * 32) {
        int m = (int)(mc - ir < 32 ? mc - ir : 32);
        for (int i = 0; i < 32; i++) {
            for (int64_t p = 0; p < kp; p++) {
                uint32_t w = 0;
                if (i < m) {
                    int64_t k = 2 * p;
                    uint32_t lo = 0, hi = 0;
                    if (ta) {
                        if (k < kc) lo = A[k * lda + ir + i];
                        if (k + 1 < kc) hi = A[(k + 1) * lda + ir + i];
                    } else {
                        const uint16_t *row = A + (ir + i) * lda;
                        if (k < kc) lo = row[k];
                        if (k + 1 < kc) hi = row[k + 1];
                    }
                    w = lo | hi << 16;
                }
                dst[((p / 16) * 32 + i) * 16 + p % 16] = w;
            }
        }
    }
}

/* permutex2var indices: word j of the result = (a[j], b[j]) for the low
 * 16 columns, then the high 16 (b's lanes are numbered from 32). */
static const uint16_t pair_idx[64] = {
    0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
    8,  40, 9,  41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47,
    16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55,
    24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63};

/* Two rows of 32 bf16 (k and k+1, n valid columns) into 32 pair words. */
__attribute__((target("avx512f,avx512bw"))) static void pair_rows_vec(const uint16_t *r0,
                                                                     const uint16_t *r1,
                                                                     int n, uint32_t *d) {
    const __mmask32 m = n >= 32 ? 0xFFFFFFFFu : (__mmask32)((1u << n) - 1);
    __m512i a = _mm512_maskz_loadu_epi16(m, r0);
    __m512i b = r1 ? _mm512_maskz_loadu_epi16(m, r1) : _mm512_setzero_si512();
    /* words 0..15: (a0, b0), (a1, b1), ...; words 16..31: from lanes 16.. */
    const __m512i lo = _mm512_loadu_si512(pair_idx);
    const __m512i hi = _mm512_loadu_si512(pair_idx + 32);
    _mm512_store_si512(d, _mm512_permutex2var_epi16(a, lo, b));
    _mm512_store_si512(d + 16, _mm512_permutex2var_epi16(a, hi, b));
}

static void pair_rows_plain(const uint16_t *r0, const uint16_t *r1, int n, uint32_t *d) {
    int j = 0;
    for (; j < n; j++) d[j] = r0[j] | (r1 ? (uint32_t)r1[j] << 16 : 0u);
    for (; j < 32; j++) d[j] = 0;
}

void gad__hgemm_pack_b32(int64_t kc, int64_t kp, int64_t nc, const uint16_t *B, int64_t ldb,
                         int tb, uint32_t *dst, int vec) {
    const int64_t panel = kp * 32; /* words of one micro-panel */
    if (!tb) {
        /* op(B)(k, j) = B[k*ldb + j]: rows k and k+1 interleaved, each pair
         * of rows across all the panels before the next pair, so that B is
         * read in order (panel by panel, every 32 columns of a row are a
         * new cache line: a stride of two rows the prefetchers miss) */
        int64_t p = 0;
        for (; 2 * p < kc; p++) {
            const uint16_t *r0 = B + 2 * p * ldb;
            const uint16_t *r1 = 2 * p + 1 < kc ? r0 + ldb : NULL;
            uint32_t *d = dst + p * 32;
            for (int64_t jr = 0; jr < nc; jr += 32, d += panel) {
                int n = (int)(nc - jr < 32 ? nc - jr : 32);
                if (vec)
                    pair_rows_vec(r0 + jr, r1 ? r1 + jr : NULL, n, d);
                else
                    pair_rows_plain(r0 + jr, r1 ? r1 + jr : NULL, n, d);
            }
        }
        for (; p < kp; p++)
            for (int64_t jr = 0; jr < nc; jr += 32) memset(dst + jr / 32 * panel + p * 32, 0, 128);
        return;
    }
    for (int64_t jr = 0; jr < nc; jr += 32, dst += panel) {
        int n = (int)(nc - jr < 32 ? nc - jr : 32);
        /* op(B)(k, j) = B[j*ldb + k]: a pair is one word of column j */
        const uint16_t *cols[32];
        for (int j = 0; j < n; j++) cols[j] = B + (jr + j) * ldb;
        int64_t p = 0;
        for (; 2 * p + 1 < kc; p++) {
            uint32_t *d = dst + p * 32;
            int j = 0;
            for (; j < n; j++) d[j] = ld32(cols[j] + 2 * p);
            for (; j < 32; j++) d[j] = 0;
        }
        for (; p < kp; p++) {
            uint32_t *d = dst + p * 32;
            int j = 0;
            for (; j < n; j++) d[j] = 2 * p < kc ? cols[j][2 * p] : 0;
            for (; j < 32; j++) d[j] = 0;
        }
    }
}

/* ---- the micro-kernels: 12, 8 or 4 rows x 32 columns ---- */

/* Row i of A at p0, p4 or p8 (rows 0, 4 and 8) plus 0, 1, 2 or 3 rows: the
 * byte offsets are ars, 2 * ars (scaled index addressing) and r3 = 3 * ars,
 * so that three pointers and two strides address twelve rows. */
#define HK_AP(i) ((i) < 4 ? p0 : (i) < 8 ? p4 : p8) + HK_OFF((i) % 4)
#define HK_OFF(r) ((r) == 0 ? 0 : (r) == 1 ? ars : (r) == 2 ? 2 * ars : r3)
#define HK_DECL(i) __m512 c##i##_0 = _mm512_setzero_ps(), c##i##_1 = _mm512_setzero_ps();
#define HK_STEP(i)                                                                         \
    {                                                                                      \
        uint32_t w_;                                                                       \
        memcpy(&w_, HK_AP(i), 4);                                                          \
        __m512bh av_ = (__m512bh)_mm512_set1_epi32((int)w_);                               \
        c##i##_0 = _mm512_dpbf16_ps(c##i##_0, av_, b0);                                    \
        c##i##_1 = _mm512_dpbf16_ps(c##i##_1, av_, b1);                                    \
    }
#define HK_STORE(i)                                                                        \
    _mm512_storeu_ps(c + (i)*ldc, c##i##_0);                                               \
    _mm512_storeu_ps(c + (i)*ldc + 16, c##i##_1);
#define HK_ADD(i)                                                                          \
    _mm512_storeu_ps(c + (i)*ldc, _mm512_add_ps(_mm512_loadu_ps(c + (i)*ldc), c##i##_0));  \
    _mm512_storeu_ps(c + (i)*ldc + 16,                                                     \
                     _mm512_add_ps(_mm512_loadu_ps(c + (i)*ldc + 16), c##i##_1));
#define HK_TILE(i)                                                                         \
    _mm512_store_ps(t + (i)*32, c##i##_0);                                                 \
    _mm512_store_ps(t + (i)*32 + 16, c##i##_1);

/* bf16 out: rows of the f32 tile t (plus c's partial sums) rounded as
 * gad__f32_to_bf16. Apart from the kernels, which keep their 24
 * accumulators in registers only when no rounding code shares their scope
 * (GCC spilt one to the stack in every step otherwise). */
__attribute__((target("avx512f,avx512bw,avx512vl"), noinline)) static void
hk_round(int rows, const float *t, const float *c, int64_t ldc, int accumulate, uint16_t *h,
         int64_t ldh) {
    for (int i = 0; i < rows; i++) {
        __m512 v0 = _mm512_load_ps(t + i * 32), v1 = _mm512_load_ps(t + i * 32 + 16);
        if (accumulate) {
            v0 = _mm512_add_ps(_mm512_loadu_ps(c + i * ldc), v0);
            v1 = _mm512_add_ps(_mm512_loadu_ps(c + i * ldc + 16), v1);
        }
        __m512i w = _mm512_inserti64x4(_mm512_castsi256_si512(gad__hgemm_rne(v0)),
                                       gad__hgemm_rne(v1), 1);
        _mm512_storeu_si512(h + i * ldh, w);
    }
}

#define HK_DEFINE(R)                                                                       \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) static void hk##R(     \
        int64_t kp, const char *a, int64_t ars, int64_t aps, const uint32_t *b, float *c,  \
        int64_t ldc, int accumulate, uint16_t *h, int64_t ldh) {                           \
        const char *p0 = a, *p4 = a + 4 * ars, *p8 = a + 8 * ars;                          \
        const int64_t r3 = 3 * ars;                                                        \
        (void)p4;                                                                          \
        (void)p8;                                                                          \
        (void)r3;                                                                          \
        GEMM_ROWS##R(HK_DECL) for (int64_t p = 0; p < kp; p++) {                           \
            __m512bh b0 = (__m512bh)_mm512_load_si512(b);                                  \
            __m512bh b1 = (__m512bh)_mm512_load_si512(b + 16);                             \
            GEMM_ROWS##R(HK_STEP) p0 += aps;                                               \
            p4 += aps;                                                                     \
            p8 += aps;                                                                     \
            b += 32;                                                                       \
        }                                                                                  \
        if (h) {                                                                           \
            _Alignas(64) float t[R * 32];                                                  \
            GEMM_ROWS##R(HK_TILE) hk_round(R, t, c, ldc, accumulate, h, ldh);              \
        } else if (!accumulate) {                                                          \
            GEMM_ROWS##R(HK_STORE)                                                         \
        } else {                                                                           \
            GEMM_ROWS##R(HK_ADD)                                                           \
        }                                                                                  \
    }

HK_DEFINE(12)
HK_DEFINE(8)
HK_DEFINE(4)

void gad__hgemm_kern_avx512(int rows, int64_t kp, const void *a, int64_t ars, int64_t aps,
                            const uint32_t *b, float *c, int64_t ldc, int accumulate,
                            uint16_t *h, int64_t ldh) {
    switch (rows) {
    case 12: hk12(kp, a, ars, aps, b, c, ldc, accumulate, h, ldh); break;
    case 8: hk8(kp, a, ars, aps, b, c, ldc, accumulate, h, ldh); break;
    default: hk4(kp, a, ars, aps, b, c, ldc, accumulate, h, ldh);
    }
}

#endif /* GEMM_X86 */
