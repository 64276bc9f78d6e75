/* gemm_avx512.c: the AVX-512F micro-kernels of the CPU GEMM (see gemm.c):
 * the packed kernels (f32 12 x 32, f64 12 x 16, from gemm_kernel_tmpl.h),
 * the small-problem ("sup") kernels that read A and B unpacked, and the dot
 * kernels. They are compiled with target attributes, without -m flags, so
 * that gemm.c can choose them at run time on CPUs that have AVX-512F; on
 * other targets and compilers this file defines nothing. */
#include "cpu/gemm_int.h"

#ifdef GEMM_X86
/* ---- AVX-512F: f32 12 x 32, f64 12 x 16 (24 accumulators of 32 zmm). */
#define GK_VT __m512
#define GK_ET float
#define GK_LANES 16
#define GK_ZERO() _mm512_setzero_ps()
#define GK_SET1(x) _mm512_set1_ps(x)
#define GK_LOAD(p) _mm512_load_ps(p)
#define GK_LOADU(p) _mm512_loadu_ps(p)
#define GK_STOREU(p, v) _mm512_storeu_ps(p, v)
#define GK_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define GK_MUL(a, b) _mm512_mul_ps(a, b)
#define GK_ADD(a, b) _mm512_add_ps(a, b)
#define GK_NAME gad__gemm_skern_avx512
#define GK_ATTR __attribute__((target("avx512f")))
#define GK_ROWS GEMM_ROWS12
#define GK_MR 12
#include "cpu/gemm_kernel_tmpl.h"

#define GK_VT __m512d
#define GK_ET double
#define GK_LANES 8
#define GK_ZERO() _mm512_setzero_pd()
#define GK_SET1(x) _mm512_set1_pd(x)
#define GK_LOAD(p) _mm512_load_pd(p)
#define GK_LOADU(p) _mm512_loadu_pd(p)
#define GK_STOREU(p, v) _mm512_storeu_pd(p, v)
#define GK_FMA(a, b, c) _mm512_fmadd_pd(a, b, c)
#define GK_MUL(a, b) _mm512_mul_pd(a, b)
#define GK_ADD(a, b) _mm512_add_pd(a, b)
#define GK_NAME gad__gemm_dkern_avx512
#define GK_ATTR __attribute__((target("avx512f")))
#define GK_ROWS GEMM_ROWS12
#define GK_MR 12
#include "cpu/gemm_kernel_tmpl.h"

/* ---- AVX-512F small-problem ("sup") kernels: no packing.
 * C tile of m rows (1..12, one function each) x up to NV vectors, read
 * straight from the operands: op(A)(i, k) = a[i*rsa + k*csa] (broadcast),
 * op(B)(k, j) = b[k*rsb + j] (vector loads, masked by m0/m1 at the right
 * edge of C, so they read nothing out of bounds). The whole K is
 * one accumulation chain; c = alpha*acc (+ beta*c) as in the packed kernels.
 * Used when packing would cost more than it saves. */

#define GS_DECL1(i) GS_VT c##i##_0 = GS_ZERO();
#define GS_DECL2(i) GS_VT c##i##_0 = GS_ZERO(), c##i##_1 = GS_ZERO();
/* M: masked loads and stores (partial columns), F: full vectors, unmasked
 * (masked loads cost an extra ALU uop on the FMA ports). */
#define GS_LD_M(k, p) GS_MLOAD(k, p)
#define GS_LD_F(k, p) GS_LOADU(p)
#define GS_SV_M(p, k, v) GS_MSTORE(p, k, v)
#define GS_SV_F(p, k, v) GS_STOREU(p, v)
#define GS_LOADB1(MK) GS_VT b0 = GS_LD_##MK(k0, b);
#define GS_LOADB2(MK)                                                          \
    GS_VT b0 = GS_LD_##MK(k0, b), b1 = GS_LD_##MK(k1, b + GS_LANES);
#define GS_STEP1(i)                                                            \
    {                                                                          \
        GS_VT av_ = GS_SET1(a[(i)*rsa]);                                       \
        c##i##_0 = GS_FMA(av_, b0, c##i##_0);                                  \
    }
#define GS_STEP2(i)                                                            \
    {                                                                          \
        GS_VT av_ = GS_SET1(a[(i)*rsa]);                                       \
        c##i##_0 = GS_FMA(av_, b0, c##i##_0);                                  \
        c##i##_1 = GS_FMA(av_, b1, c##i##_1);                                  \
    }
#define GS_ST_0(MK, i, j, kk, off)                                             \
    GS_SV_##MK(c + (i)*ldc + (off), kk, GS_MUL(va, c##i##_##j));
#define GS_ST_B(MK, i, j, kk, off)                                             \
    {                                                                          \
        GS_VT t_ = GS_MUL(va, c##i##_##j);                                     \
        GS_VT u_ = GS_MUL(vb, GS_LD_##MK(kk, c + (i)*ldc + (off)));            \
        GS_SV_##MK(c + (i)*ldc + (off), kk, GS_ADD(t_, u_));                   \
    }
#define GS_ST_1(MK, i, j, kk, off) GS_SV_##MK(c + (i)*ldc + (off), kk, c##i##_##j);
#define GS_STORE1_1_M(i) GS_ST_1(M, i, 0, k0, 0)
#define GS_STORE2_1_M(i) GS_ST_1(M, i, 0, k0, 0) GS_ST_1(M, i, 1, k1, GS_LANES)
#define GS_STORE2_1_F(i) GS_ST_1(F, i, 0, k0, 0) GS_ST_1(F, i, 1, k1, GS_LANES)
#define GS_STORE1_0_M(i) GS_ST_0(M, i, 0, k0, 0)
#define GS_STORE1_B_M(i) GS_ST_B(M, i, 0, k0, 0)
#define GS_STORE2_0_M(i) GS_ST_0(M, i, 0, k0, 0) GS_ST_0(M, i, 1, k1, GS_LANES)
#define GS_STORE2_B_M(i) GS_ST_B(M, i, 0, k0, 0) GS_ST_B(M, i, 1, k1, GS_LANES)
#define GS_STORE2_0_F(i) GS_ST_0(F, i, 0, k0, 0) GS_ST_0(F, i, 1, k1, GS_LANES)
#define GS_STORE2_B_F(i) GS_ST_B(F, i, 0, k0, 0) GS_ST_B(F, i, 1, k1, GS_LANES)
/* One step of k: a row of op(B) times a column of op(A). The loop over k
 * takes four at a time (the order of the sums is unchanged), and a product
 * with alpha = 1 and beta = 0 stores its sums as they are (x * 1 is x):
 * 64^3 to 96 x 64 x 64 ran 1-2% faster on a Zen 4 core, measured as the
 * ratio to OpenBLAS's sgemm timed in the same process. */
#define GS_KSTEP(ROWS, NV, MK)                                                 \
    {                                                                          \
        GS_LOADB##NV(MK)                                                       \
        ROWS(GS_STEP##NV)                                                      \
        a += csa;                                                              \
        b += rsb;                                                              \
    }
#define GS_FN(NAME, ROWS, NV, MK)                                              \
    __attribute__((target("avx512f"))) static void NAME(                       \
        int64_t K, const GS_ET *a, int64_t rsa, int64_t csa, const GS_ET *b,   \
        int64_t rsb, GS_ET *c, int64_t ldc, GS_ET alpha, GS_ET beta,           \
        unsigned m0, unsigned m1) {                                            \
        const GS_MT k0 = (GS_MT)m0, k1 = (GS_MT)m1;                            \
        (void)k0;                                                              \
        (void)k1;                                                              \
        ROWS(GS_DECL##NV)                                                      \
        int64_t k = 0;                                                         \
        for (; k + 4 <= K; k += 4)                                             \
            for (int u = 0; u < 4; u++) GS_KSTEP(ROWS, NV, MK)                 \
        for (; k < K; k++) GS_KSTEP(ROWS, NV, MK)                              \
        GS_VT va = GS_SET1(alpha);                                             \
        if (beta == 0 && alpha == 1) {                                         \
            ROWS(GS_STORE##NV##_1_##MK)                                        \
        } else if (beta == 0) {                                                \
            ROWS(GS_STORE##NV##_0_##MK)                                        \
        } else {                                                               \
            GS_VT vb = GS_SET1(beta);                                          \
            ROWS(GS_STORE##NV##_B_##MK)                                        \
        }                                                                      \
    }
/* All row counts for one (vectors, masking) variant: P##rows##_##V. */
#define GS_ROWS_ALL(P, V, NV, MK)                                              \
    GS_FN(P##1_##V, GEMM_ROWS1, NV, MK) GS_FN(P##2_##V, GEMM_ROWS2, NV, MK)    \
    GS_FN(P##3_##V, GEMM_ROWS3, NV, MK) GS_FN(P##4_##V, GEMM_ROWS4, NV, MK)    \
    GS_FN(P##5_##V, GEMM_ROWS5, NV, MK) GS_FN(P##6_##V, GEMM_ROWS6, NV, MK)    \
    GS_FN(P##7_##V, GEMM_ROWS7, NV, MK) GS_FN(P##8_##V, GEMM_ROWS8, NV, MK)    \
    GS_FN(P##9_##V, GEMM_ROWS9, NV, MK) GS_FN(P##10_##V, GEMM_ROWS10, NV, MK)  \
    GS_FN(P##11_##V, GEMM_ROWS11, NV, MK) GS_FN(P##12_##V, GEMM_ROWS12, NV, MK)
#define GS_ALL(P)                                                              \
    GS_ROWS_ALL(P, 1m, 1, M) GS_ROWS_ALL(P, 2m, 2, M) GS_ROWS_ALL(P, 2f, 2, F)
#define GS_ROW_TABLE(P, V)                                                     \
    {P##1_##V, P##2_##V, P##3_##V, P##4_##V,  P##5_##V,  P##6_##V,             \
     P##7_##V, P##8_##V, P##9_##V, P##10_##V, P##11_##V, P##12_##V}
/* [0]: one masked vector, [1]: two masked vectors, [2]: two full vectors. */
#define GS_TABLE(P)                                                            \
    {GS_ROW_TABLE(P, 1m), GS_ROW_TABLE(P, 2m), GS_ROW_TABLE(P, 2f)}

#define GS_VT __m512
#define GS_ET float
#define GS_MT __mmask16
#define GS_LANES 16
#define GS_ZERO() _mm512_setzero_ps()
#define GS_SET1(x) _mm512_set1_ps(x)
#define GS_MLOAD(k, p) _mm512_maskz_loadu_ps(k, p)
#define GS_MSTORE(p, k, v) _mm512_mask_storeu_ps(p, k, v)
#define GS_LOADU(p) _mm512_loadu_ps(p)
#define GS_STOREU(p, v) _mm512_storeu_ps(p, v)
#define GS_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define GS_MUL(a, b) _mm512_mul_ps(a, b)
#define GS_ADD(a, b) _mm512_add_ps(a, b)
GS_ALL(gemm_ssup_)
const gemm_ssup gad__gemm_ssup_avx512[3][12] = GS_TABLE(gemm_ssup_);
#undef GS_VT
#undef GS_ET
#undef GS_MT
#undef GS_LANES
#undef GS_ZERO
#undef GS_SET1
#undef GS_MLOAD
#undef GS_MSTORE
#undef GS_LOADU
#undef GS_STOREU
#undef GS_FMA
#undef GS_MUL
#undef GS_ADD

#define GS_VT __m512d
#define GS_ET double
#define GS_MT __mmask8
#define GS_LANES 8
#define GS_ZERO() _mm512_setzero_pd()
#define GS_SET1(x) _mm512_set1_pd(x)
#define GS_MLOAD(k, p) _mm512_maskz_loadu_pd(k, p)
#define GS_MSTORE(p, k, v) _mm512_mask_storeu_pd(p, k, v)
#define GS_LOADU(p) _mm512_loadu_pd(p)
#define GS_STOREU(p, v) _mm512_storeu_pd(p, v)
#define GS_FMA(a, b, c) _mm512_fmadd_pd(a, b, c)
#define GS_MUL(a, b) _mm512_mul_pd(a, b)
#define GS_ADD(a, b) _mm512_add_pd(a, b)
GS_ALL(gemm_dsup_)
const gemm_dsup gad__gemm_dsup_avx512[3][12] = GS_TABLE(gemm_dsup_);
#undef GS_VT
#undef GS_ET
#undef GS_MT
#undef GS_LANES
#undef GS_ZERO
#undef GS_SET1
#undef GS_MLOAD
#undef GS_MSTORE
#undef GS_LOADU
#undef GS_STOREU
#undef GS_FMA
#undef GS_MUL
#undef GS_ADD

/* ---- AVX-512F dot kernels: out[q] = sum_k x[q][k] * y[q][k] for 4 pairs of
 * contiguous vectors (two accumulators per pair, masked tail). For products
 * with one or two rows or columns whose operands are contiguous along K
 * (A x, a B^T), where the tile kernels would waste their lanes or pack. */
#define GD_FN(NAME)                                                            \
    __attribute__((target("avx512f"))) void NAME(                              \
        int64_t K, const GD_ET *const *x, const GD_ET *const *y,               \
        GD_ET *out) {                                                          \
        const GD_ET *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];            \
        const GD_ET *y0 = y[0], *y1 = y[1], *y2 = y[2], *y3 = y[3];            \
        GD_VT s0 = GD_ZERO(), s1 = GD_ZERO(), s2 = GD_ZERO(), s3 = GD_ZERO();  \
        GD_VT t0 = GD_ZERO(), t1 = GD_ZERO(), t2 = GD_ZERO(), t3 = GD_ZERO();  \
        const int64_t L = GD_LANES;                                            \
        int64_t k = 0;                                                         \
        for (; k + 2 * L <= K; k += 2 * L) {                                   \
            s0 = GD_FMA(GD_LOADU(x0 + k), GD_LOADU(y0 + k), s0);               \
            s1 = GD_FMA(GD_LOADU(x1 + k), GD_LOADU(y1 + k), s1);               \
            s2 = GD_FMA(GD_LOADU(x2 + k), GD_LOADU(y2 + k), s2);               \
            s3 = GD_FMA(GD_LOADU(x3 + k), GD_LOADU(y3 + k), s3);               \
            t0 = GD_FMA(GD_LOADU(x0 + k + L), GD_LOADU(y0 + k + L), t0);       \
            t1 = GD_FMA(GD_LOADU(x1 + k + L), GD_LOADU(y1 + k + L), t1);       \
            t2 = GD_FMA(GD_LOADU(x2 + k + L), GD_LOADU(y2 + k + L), t2);       \
            t3 = GD_FMA(GD_LOADU(x3 + k + L), GD_LOADU(y3 + k + L), t3);       \
        }                                                                      \
        for (; k < K; k += L) {                                                \
            GD_MT m = K - k >= L ? (GD_MT)GD_FULL                              \
                                 : (GD_MT)((1u << (K - k)) - 1);               \
            s0 = GD_FMA(GD_MLOAD(m, x0 + k), GD_MLOAD(m, y0 + k), s0);         \
            s1 = GD_FMA(GD_MLOAD(m, x1 + k), GD_MLOAD(m, y1 + k), s1);         \
            s2 = GD_FMA(GD_MLOAD(m, x2 + k), GD_MLOAD(m, y2 + k), s2);         \
            s3 = GD_FMA(GD_MLOAD(m, x3 + k), GD_MLOAD(m, y3 + k), s3);         \
        }                                                                      \
        out[0] = GD_REDUCE(GD_ADD(s0, t0));                                    \
        out[1] = GD_REDUCE(GD_ADD(s1, t1));                                    \
        out[2] = GD_REDUCE(GD_ADD(s2, t2));                                    \
        out[3] = GD_REDUCE(GD_ADD(s3, t3));                                    \
    }

#define GD_VT __m512
#define GD_ET float
#define GD_MT __mmask16
#define GD_FULL 0xFFFFu
#define GD_LANES 16
#define GD_ZERO() _mm512_setzero_ps()
#define GD_LOADU(p) _mm512_loadu_ps(p)
#define GD_MLOAD(k, p) _mm512_maskz_loadu_ps(k, p)
#define GD_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define GD_ADD(a, b) _mm512_add_ps(a, b)
#define GD_REDUCE(v) _mm512_reduce_add_ps(v)
GD_FN(gad__gemm_sdot_avx512)
#undef GD_VT
#undef GD_ET
#undef GD_MT
#undef GD_FULL
#undef GD_LANES
#undef GD_ZERO
#undef GD_LOADU
#undef GD_MLOAD
#undef GD_FMA
#undef GD_ADD
#undef GD_REDUCE

#define GD_VT __m512d
#define GD_ET double
#define GD_MT __mmask8
#define GD_FULL 0xFFu
#define GD_LANES 8
#define GD_ZERO() _mm512_setzero_pd()
#define GD_LOADU(p) _mm512_loadu_pd(p)
#define GD_MLOAD(k, p) _mm512_maskz_loadu_pd(k, p)
#define GD_FMA(a, b, c) _mm512_fmadd_pd(a, b, c)
#define GD_ADD(a, b) _mm512_add_pd(a, b)
#define GD_REDUCE(v) _mm512_reduce_add_pd(v)
GD_FN(gad__gemm_ddot_avx512)
#undef GD_VT
#undef GD_ET
#undef GD_MT
#undef GD_FULL
#undef GD_LANES
#undef GD_ZERO
#undef GD_LOADU
#undef GD_MLOAD
#undef GD_FMA
#undef GD_ADD
#undef GD_REDUCE
/* ---- f32 transposing pack: dst[k*ds + i] = src[i*ld + k] for i < rows and
 * k < kc, lanes i in [rows, lanes) written as zeros (rows <= lanes <= 32;
 * a panel wider than 16 lanes goes as two halves).
 * The packing of op(A) when A is row-major (lanes = MR) and of op(B) when B
 * is transposed (lanes = 16, one half of an NR = 32 panel) are transposes;
 * element by element they cost more than the product at small sizes. Here
 * 16 x 16 blocks go through registers: two-source unpacks, then 128-bit
 * lane shuffles (4 stages, 64 shuffles per 256 elements); the k tail is
 * read with masked loads, so nothing past the operand is touched. */
__attribute__((target("avx512f"))) void gad__gemm_stpack_avx512(int64_t kc, const float *src,
                                                                int64_t ld, int rows, int lanes,
                                                                float *dst, int64_t ds) {
    if (lanes > 16) {
        int hi = rows > 16 ? rows - 16 : 0;
        gad__gemm_stpack_avx512(kc, src, ld, rows - hi, 16, dst, ds);
        gad__gemm_stpack_avx512(kc, src + 16 * ld, ld, hi, lanes - 16, dst + 16, ds);
        return;
    }
    const __mmask16 out = (__mmask16)((1u << lanes) - 1);
    for (int64_t k0 = 0; k0 < kc; k0 += 16) {
        int kk = (int)(kc - k0 < 16 ? kc - k0 : 16);
        const __mmask16 in = (__mmask16)((1u << kk) - 1);
        __m512 r[16], t[16];
        for (int i = 0; i < 16; i++)
            r[i] = i < rows ? _mm512_maskz_loadu_ps(in, src + i * ld + k0) : _mm512_setzero_ps();
        /* t[2p], t[2p+1]: rows 2p and 2p+1 interleaved (low, high pairs) */
        for (int p = 0; p < 8; p++) {
            t[2 * p] = _mm512_unpacklo_ps(r[2 * p], r[2 * p + 1]);
            t[2 * p + 1] = _mm512_unpackhi_ps(r[2 * p], r[2 * p + 1]);
        }
        /* r[4g + c]: in 128-bit lane L, column 4L + c of rows 4g..4g+3 */
        for (int g = 0; g < 4; g++) {
            __m512 a = t[4 * g], b = t[4 * g + 1], c = t[4 * g + 2], d = t[4 * g + 3];
            r[4 * g + 0] = _mm512_shuffle_ps(a, c, 0x44);
            r[4 * g + 1] = _mm512_shuffle_ps(a, c, 0xEE);
            r[4 * g + 2] = _mm512_shuffle_ps(b, d, 0x44);
            r[4 * g + 3] = _mm512_shuffle_ps(b, d, 0xEE);
        }
        /* column 4L + c gathers lane L of r[c], r[4 + c], r[8 + c], r[12 + c] */
        for (int c = 0; c < 4; c++) {
            __m512 v0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
            __m512 w0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xDD);
            __m512 v1 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
            __m512 w1 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xDD);
            t[c] = _mm512_shuffle_f32x4(v0, v1, 0x88);
            t[4 + c] = _mm512_shuffle_f32x4(w0, w1, 0x88);
            t[8 + c] = _mm512_shuffle_f32x4(v0, v1, 0xDD);
            t[12 + c] = _mm512_shuffle_f32x4(w0, w1, 0xDD);
        }
        float *d = dst + k0 * ds;
        if (lanes == 16)
            for (int k = 0; k < kk; k++) _mm512_storeu_ps(d + k * ds, t[k]);
        else
            for (int k = 0; k < kk; k++) _mm512_mask_storeu_ps(d + k * ds, out, t[k]);
    }
}
#endif /* GEMM_X86 */
