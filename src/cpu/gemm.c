/* gemm.c: general matrix multiply for the CPU (see gemm.h for the contract).
 *
 * The built-in kernel follows the layered algorithm of
 *   K. Goto and R. A. van de Geijn, "Anatomy of high-performance matrix
 *   multiplication", ACM TOMS 34(3), 2008, and
 *   F. G. Van Zee and R. A. van de Geijn, "BLIS: A framework for rapidly
 *   instantiating BLAS functionality", ACM TOMS 41(3), 2015.
 *
 * C is row-major, so we run the column-major BLIS algorithm on the transposed
 * problem C^T = op(B)^T op(A)^T: the vector dimension of the micro-kernel is
 * N (a row of a C micro-tile is one or two SIMD registers) and the broadcast
 * dimension is M. The five loops around the micro-kernel:
 *
 *   for ic in M by MCB            (loop 5: rows of C)
 *     for pc in K by KC           (loop 4: pack op(A)[ic.., pc..] into MR-row
 *                                  micro-panels, the MCB x KC panel -> L3)
 *       for jc in N by NCB        (loop 3: pack op(B)[pc.., jc..] into NR-col
 *                                  micro-panels, the KC x NCB block -> L2)
 *         for ir in MCB by MR     (loop 2: one A micro-panel, kept in L1)
 *           for jr in NCB by NR   (loop 1: B micro-panels streamed from L2)
 *             micro-kernel: an MR x NR tile of C += A micro-panel * B one
 *
 * Transposed operands are handled by the packing routines only; no
 * transposed copy is ever made. Partial micro-panels are padded with zeros so
 * that the micro-kernel always computes a full tile; edge tiles go through a
 * small buffer. The block depth KC is evened out over K and depends on K
 * alone.
 *
 * Two more paths (AVX-512 only) skip packing where it does not pay:
 *   - small problems ("sup", after BLIS's small/unpacked kernels): M x N tiles
 *     read straight from A and B (masked loads at the right edge), for
 *     products whose op(B) stays in L2 and for very thin M or N;
 *   - dot products, for one to four rows or columns whose operands are
 *     contiguous along K (matrix-vector products, x B^T).
 *
 * Micro-kernels are compiled for several instruction sets with target
 * attributes (AVX-512F, AVX2+FMA, and a portable variant written with GCC/
 * clang vector extensions); one set is chosen once at run time with
 * __builtin_cpu_supports, so the library is fast without -march=native.
 * Compilers other than GCC/clang get a plain C kernel. The x86 kernels use
 * the FMA intrinsics (whose __m512/__m256 types are vector-extension types):
 * in ISO C mode (-std=c11) GCC does not contract a*b + c into an FMA, so
 * plain vector arithmetic would run at half speed.
 *
 * Threads (gad's pool, up to gad__nthreads()) split C by rows and columns, never
 * K; each element of C is computed with the same operations in the same
 * order whatever the thread count, so results are bit-identical for any
 * number of threads. For large products each thread owns a block of whole
 * tiles of C and packs what it needs. One thread inside a parallel region
 * of gad's pool and for small products. The packing buffers of all threads of a
 * call are carved out of the calling thread's scratch block (_Thread_local,
 * from gad__alloc), kept for reuse until gad__gemm_release_scratch.
 *
 * The typed packing routines and drivers are in gemm_driver_tmpl.h, which
 * this file includes once per element type (float, double); the BLAS policy
 * (when to call CBLAS, and its threads) is in gemm_blas.c. */

#include "cpu/gemm.h"
#include "cpu/gemm_int.h"
#include "gad_int.h"

#include <stddef.h>
#include <string.h>

#ifdef GAD_HAVE_CBLAS
#include <cblas.h>
#endif

/* GAD_GEMM_PLAIN forces the plain C kernels (to test them with gcc/clang). */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(GAD_GEMM_PLAIN)
#define GEMM_GNU 1
#if defined(__x86_64__) || defined(__i386__)
#define GEMM_X86 1
#include <immintrin.h>
#endif
#endif

/* Subnormal floats. A multiply that meets a subnormal operand (or makes a
 * subnormal result) takes a microcode assist on Intel cores, tens of cycles
 * instead of a fraction of one. Gradients of a trained model have a few in
 * a thousand such values (silu'(z) for z near -90, and what the scan's
 * backward carries from there), which made the HELIX LM's training step
 * 40% slower. The built-in kernels therefore run with the SSE flush-to-zero
 * and denormals-are-zero modes on, on every thread they use, and give the
 * caller's MXCSR back when done: values below FLT_MIN (DBL_MIN) count as
 * zero in a product, as in PyTorch's set_flush_denormal. */
#ifdef GEMM_X86
#define GEMM_FTZ_DAZ 0x8040u
static inline unsigned gemm_ftz_begin(void) {
    unsigned m = _mm_getcsr();
    if ((m & GEMM_FTZ_DAZ) != GEMM_FTZ_DAZ) _mm_setcsr(m | GEMM_FTZ_DAZ);
    return m;
}
static inline void gemm_ftz_end(unsigned m) {
    if ((m & GEMM_FTZ_DAZ) != GEMM_FTZ_DAZ) _mm_setcsr(m);
}
#else
static inline unsigned gemm_ftz_begin(void) { return 0; }
static inline void gemm_ftz_end(unsigned m) { (void)m; }
#endif

/* ======================================================================== */
/* Micro-kernels                                                             */
/* ======================================================================== */
/* A micro-kernel computes acc = sum_k a[k*MR + i] * b[k*NR + j] over kc steps
 * (a: a packed MR x kc micro-panel, b: a packed kc x NR one), then updates
 * the MR x NR tile at c (row stride ldc):
 *   c = alpha*acc             when beta == 0 (c is not read)
 *   c = alpha*acc + beta*c    otherwise (two products, one sum; no FMA, so
 *                             the edge path below rounds the same way)
 * b is aligned to 64 bytes (the packed B block and NR*kc*size are). */

typedef void (*gemm_skern)(int64_t kc, const float *a, const float *b,
                           float *c, int64_t ldc, float alpha, float beta);
typedef void (*gemm_dkern)(int64_t kc, const double *a, const double *b,
                           double *c, int64_t ldc, double alpha, double beta);

/* Small-problem kernels (AVX-512 only, see below): a tile of m rows and
 * NR = 2 vectors of columns read straight from the operands, with
 * op(A)(i, k) = a[i*rsa + k*csa] and op(B)(k, j) = b[k*rsb + j]; m0 and m1
 * mask the columns of the two vectors. Same update rule as above. */
typedef void (*gemm_ssup)(int64_t K, const float *a, int64_t rsa, int64_t csa,
                          const float *b, int64_t rsb, float *c, int64_t ldc,
                          float alpha, float beta, unsigned m0, unsigned m1);
typedef void (*gemm_dsup)(int64_t K, const double *a, int64_t rsa,
                          int64_t csa, const double *b, int64_t rsb, double *c,
                          int64_t ldc, double alpha, double beta, unsigned m0,
                          unsigned m1);

/* Dot kernels (AVX-512 only): out[q] = sum over k < K of x[q][k] * y[q][k],
 * q = 0..3. */
typedef void (*gemm_sdot)(int64_t K, const float *const *x,
                          const float *const *y, float *out);
typedef void (*gemm_ddot)(int64_t K, const double *const *x,
                          const double *const *y, double *out);

/* Blocking of one kernel: micro-tile MR x NR, KC (depth of a block), MCB
 * (rows of the packed A panel), NCB (columns of the packed B block). MCB is a
 * multiple of MR and NCB of NR. sup: the small-problem kernels indexed by
 * [variant][rows - 1] (NULL when the ISA has none; variants: one masked
 * vector, two masked vectors, two full vectors); their tile is MR x NR too,
 * NR being two vectors of NR/2 lanes. dot: the dot kernel (NULL
 * when none). */
typedef struct gemm_sdesc {
    int mr, nr;
    int64_t kc, mcb, ncb;
    gemm_skern kern;
    const gemm_ssup (*sup)[12];
    gemm_sdot dot;
    const char *name;
} gemm_sdesc;

typedef struct gemm_ddesc {
    int mr, nr;
    int64_t kc, mcb, ncb;
    gemm_dkern kern;
    const gemm_dsup (*sup)[12];
    gemm_ddot dot;
    const char *name;
} gemm_ddesc;

/* Upper bounds over all kernels (edge-tile buffers). */
#define GEMM_MAX_MR 16
#define GEMM_MAX_NR 32

/* Rows of a micro-tile, unrolled by the preprocessor. */
#define GEMM_ROWS1(X) X(0)
#define GEMM_ROWS2(X) GEMM_ROWS1(X) X(1)
#define GEMM_ROWS3(X) GEMM_ROWS2(X) X(2)
#define GEMM_ROWS4(X) GEMM_ROWS3(X) X(3)
#define GEMM_ROWS5(X) GEMM_ROWS4(X) X(4)
#define GEMM_ROWS6(X) GEMM_ROWS5(X) X(5)
#define GEMM_ROWS7(X) GEMM_ROWS6(X) X(6)
#define GEMM_ROWS8(X) GEMM_ROWS7(X) X(7)
#define GEMM_ROWS9(X) GEMM_ROWS8(X) X(8)
#define GEMM_ROWS10(X) GEMM_ROWS9(X) X(9)
#define GEMM_ROWS11(X) GEMM_ROWS10(X) X(10)
#define GEMM_ROWS12(X) GEMM_ROWS11(X) X(11)

/* A kernel whose tile rows are two vectors (NR = 2 * lanes). The including
 * code defines GK_VT (vector type), GK_ET (element type), GK_ZERO(),
 * GK_SET1(x), GK_LOAD(p) (aligned), GK_LOADU(p), GK_STOREU(p, v),
 * GK_FMA(a, b, c) (a*b + c), GK_MUL(a, b), GK_ADD(a, b), GK_LANES. */
#define GK_DECL(i) GK_VT c##i##_0 = GK_ZERO(), c##i##_1 = GK_ZERO();
#define GK_STEP(i)                                                            \
    {                                                                          \
        GK_VT av_ = GK_SET1(a[i]);                                             \
        c##i##_0 = GK_FMA(av_, b0, c##i##_0);                                  \
        c##i##_1 = GK_FMA(av_, b1, c##i##_1);                                  \
    }
#define GK_STORE0(i)                                                           \
    GK_STOREU(c + (i)*ldc, GK_MUL(va, c##i##_0));                              \
    GK_STOREU(c + (i)*ldc + GK_LANES, GK_MUL(va, c##i##_1));
#define GK_STOREB(i)                                                           \
    {                                                                          \
        GK_ET *cr_ = c + (i)*ldc;                                              \
        GK_VT t0_ = GK_MUL(va, c##i##_0), t1_ = GK_MUL(va, c##i##_1);          \
        GK_VT u0_ = GK_MUL(vb, GK_LOADU(cr_));                                 \
        GK_VT u1_ = GK_MUL(vb, GK_LOADU(cr_ + GK_LANES));                      \
        GK_STOREU(cr_, GK_ADD(t0_, u0_));                                      \
        GK_STOREU(cr_ + GK_LANES, GK_ADD(t1_, u1_));                           \
    }
/* The body: ROWS is GEMM_ROWS6 or GEMM_ROWS12, MR its count. */
#define GK_BODY(ROWS, MR)                                                      \
    ROWS(GK_DECL)                                                              \
    for (int64_t k = 0; k < kc; k++) {                                         \
        GK_VT b0 = GK_LOAD(b), b1 = GK_LOAD(b + GK_LANES);                     \
        ROWS(GK_STEP)                                                          \
        a += (MR);                                                             \
        b += 2 * GK_LANES;                                                     \
    }                                                                          \
    GK_VT va = GK_SET1(alpha);                                                 \
    if (beta == 0) {                                                           \
        ROWS(GK_STORE0)                                                        \
    } else {                                                                   \
        GK_VT vb = GK_SET1(beta);                                              \
        ROWS(GK_STOREB)                                                        \
    }

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
__attribute__((target("avx512f"))) static void
gemm_skern_avx512(int64_t kc, const float *a, const float *b, float *c,
                  int64_t ldc, float alpha, float beta) {
    GK_BODY(GEMM_ROWS12, 12)
}
#undef GK_VT
#undef GK_ET
#undef GK_ZERO
#undef GK_SET1
#undef GK_LOAD
#undef GK_LOADU
#undef GK_STOREU
#undef GK_FMA
#undef GK_MUL
#undef GK_ADD
#undef GK_LANES

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
__attribute__((target("avx512f"))) static void
gemm_dkern_avx512(int64_t kc, const double *a, const double *b, double *c,
                  int64_t ldc, double alpha, double beta) {
    GK_BODY(GEMM_ROWS12, 12)
}
#undef GK_VT
#undef GK_ET
#undef GK_ZERO
#undef GK_SET1
#undef GK_LOAD
#undef GK_LOADU
#undef GK_STOREU
#undef GK_FMA
#undef GK_MUL
#undef GK_ADD
#undef GK_LANES

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
#define GS_STORE1_0_M(i) GS_ST_0(M, i, 0, k0, 0)
#define GS_STORE1_B_M(i) GS_ST_B(M, i, 0, k0, 0)
#define GS_STORE2_0_M(i) GS_ST_0(M, i, 0, k0, 0) GS_ST_0(M, i, 1, k1, GS_LANES)
#define GS_STORE2_B_M(i) GS_ST_B(M, i, 0, k0, 0) GS_ST_B(M, i, 1, k1, GS_LANES)
#define GS_STORE2_0_F(i) GS_ST_0(F, i, 0, k0, 0) GS_ST_0(F, i, 1, k1, GS_LANES)
#define GS_STORE2_B_F(i) GS_ST_B(F, i, 0, k0, 0) GS_ST_B(F, i, 1, k1, GS_LANES)
#define GS_FN(NAME, ROWS, NV, MK)                                              \
    __attribute__((target("avx512f"))) static void NAME(                       \
        int64_t K, const GS_ET *a, int64_t rsa, int64_t csa, const GS_ET *b,   \
        int64_t rsb, GS_ET *c, int64_t ldc, GS_ET alpha, GS_ET beta,           \
        unsigned m0, unsigned m1) {                                            \
        const GS_MT k0 = (GS_MT)m0, k1 = (GS_MT)m1;                            \
        (void)k0;                                                              \
        (void)k1;                                                              \
        ROWS(GS_DECL##NV)                                                      \
        for (int64_t k = 0; k < K; k++) {                                      \
            GS_LOADB##NV(MK)                                                   \
            ROWS(GS_STEP##NV)                                                  \
            a += csa;                                                          \
            b += rsb;                                                          \
        }                                                                      \
        GS_VT va = GS_SET1(alpha);                                             \
        if (beta == 0) {                                                       \
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
static const gemm_ssup gemm_ssup_avx512[3][12] = GS_TABLE(gemm_ssup_);
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
static const gemm_dsup gemm_dsup_avx512[3][12] = GS_TABLE(gemm_dsup_);
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
    __attribute__((target("avx512f"))) static void NAME(                       \
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
GD_FN(gemm_sdot_avx512)
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
GD_FN(gemm_ddot_avx512)
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

/* ---- AVX2 + FMA: f32 6 x 16, f64 6 x 8 (12 accumulators of 16 ymm). */
#define GK_VT __m256
#define GK_ET float
#define GK_LANES 8
#define GK_ZERO() _mm256_setzero_ps()
#define GK_SET1(x) _mm256_set1_ps(x)
#define GK_LOAD(p) _mm256_load_ps(p)
#define GK_LOADU(p) _mm256_loadu_ps(p)
#define GK_STOREU(p, v) _mm256_storeu_ps(p, v)
#define GK_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define GK_MUL(a, b) _mm256_mul_ps(a, b)
#define GK_ADD(a, b) _mm256_add_ps(a, b)
__attribute__((target("avx2,fma"))) static void
gemm_skern_avx2(int64_t kc, const float *a, const float *b, float *c,
                int64_t ldc, float alpha, float beta) {
    GK_BODY(GEMM_ROWS6, 6)
}
#undef GK_VT
#undef GK_ET
#undef GK_ZERO
#undef GK_SET1
#undef GK_LOAD
#undef GK_LOADU
#undef GK_STOREU
#undef GK_FMA
#undef GK_MUL
#undef GK_ADD
#undef GK_LANES

#define GK_VT __m256d
#define GK_ET double
#define GK_LANES 4
#define GK_ZERO() _mm256_setzero_pd()
#define GK_SET1(x) _mm256_set1_pd(x)
#define GK_LOAD(p) _mm256_load_pd(p)
#define GK_LOADU(p) _mm256_loadu_pd(p)
#define GK_STOREU(p, v) _mm256_storeu_pd(p, v)
#define GK_FMA(a, b, c) _mm256_fmadd_pd(a, b, c)
#define GK_MUL(a, b) _mm256_mul_pd(a, b)
#define GK_ADD(a, b) _mm256_add_pd(a, b)
__attribute__((target("avx2,fma"))) static void
gemm_dkern_avx2(int64_t kc, const double *a, const double *b, double *c,
                int64_t ldc, double alpha, double beta) {
    GK_BODY(GEMM_ROWS6, 6)
}
#undef GK_VT
#undef GK_ET
#undef GK_ZERO
#undef GK_SET1
#undef GK_LOAD
#undef GK_LOADU
#undef GK_STOREU
#undef GK_FMA
#undef GK_MUL
#undef GK_ADD
#undef GK_LANES
#endif /* GEMM_X86 */

#ifdef GEMM_GNU
/* ---- Portable: GCC/clang vector extensions, 16-byte vectors (SSE2, NEON,
 * or scalar code where the target has none). f32 6 x 8, f64 6 x 4. */
typedef float gemm_v4f __attribute__((vector_size(16)));
typedef double gemm_v2d __attribute__((vector_size(16)));

static inline gemm_v4f gemm_ld4f(const float *p) {
    gemm_v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void gemm_st4f(float *p, gemm_v4f v) { memcpy(p, &v, sizeof v); }
static inline gemm_v2d gemm_ld2d(const double *p) {
    gemm_v2d v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void gemm_st2d(double *p, gemm_v2d v) { memcpy(p, &v, sizeof v); }

#define GK_VT gemm_v4f
#define GK_ET float
#define GK_LANES 4
#define GK_ZERO() ((gemm_v4f){0, 0, 0, 0})
#define GK_SET1(x) ((gemm_v4f){(x), (x), (x), (x)})
#define GK_LOAD(p) gemm_ld4f(p)
#define GK_LOADU(p) gemm_ld4f(p)
#define GK_STOREU(p, v) gemm_st4f(p, v)
#define GK_FMA(a, b, c) ((c) + (a) * (b))
#define GK_MUL(a, b) ((a) * (b))
#define GK_ADD(a, b) ((a) + (b))
static void gemm_skern_vec(int64_t kc, const float *a, const float *b,
                           float *c, int64_t ldc, float alpha, float beta) {
    GK_BODY(GEMM_ROWS6, 6)
}
#undef GK_VT
#undef GK_ET
#undef GK_ZERO
#undef GK_SET1
#undef GK_LOAD
#undef GK_LOADU
#undef GK_STOREU
#undef GK_FMA
#undef GK_MUL
#undef GK_ADD
#undef GK_LANES

#define GK_VT gemm_v2d
#define GK_ET double
#define GK_LANES 2
#define GK_ZERO() ((gemm_v2d){0, 0})
#define GK_SET1(x) ((gemm_v2d){(x), (x)})
#define GK_LOAD(p) gemm_ld2d(p)
#define GK_LOADU(p) gemm_ld2d(p)
#define GK_STOREU(p, v) gemm_st2d(p, v)
#define GK_FMA(a, b, c) ((c) + (a) * (b))
#define GK_MUL(a, b) ((a) * (b))
#define GK_ADD(a, b) ((a) + (b))
static void gemm_dkern_vec(int64_t kc, const double *a, const double *b,
                           double *c, int64_t ldc, double alpha, double beta) {
    GK_BODY(GEMM_ROWS6, 6)
}
#undef GK_VT
#undef GK_ET
#undef GK_ZERO
#undef GK_SET1
#undef GK_LOAD
#undef GK_LOADU
#undef GK_STOREU
#undef GK_FMA
#undef GK_MUL
#undef GK_ADD
#undef GK_LANES

#else /* !GEMM_GNU */
/* ---- Plain C, 4 x 4, for compilers without vector extensions. */
#define GEMM_PLAIN_KERNEL(NAME, T)                                             \
    static void NAME(int64_t kc, const T *a, const T *b, T *c, int64_t ldc,    \
                     T alpha, T beta) {                                        \
        T acc[4][4] = {{0}};                                                   \
        for (int64_t k = 0; k < kc; k++, a += 4, b += 4)                       \
            for (int i = 0; i < 4; i++)                                        \
                for (int j = 0; j < 4; j++) acc[i][j] += a[i] * b[j];          \
        for (int i = 0; i < 4; i++)                                            \
            for (int j = 0; j < 4; j++) {                                      \
                T t = alpha * acc[i][j];                                       \
                if (beta != 0) {                                               \
                    T u = beta * c[i * ldc + j];                               \
                    t = t + u;                                                 \
                }                                                              \
                c[i * ldc + j] = t;                                            \
            }                                                                  \
    }
GEMM_PLAIN_KERNEL(gemm_skern_plain, float)
GEMM_PLAIN_KERNEL(gemm_dkern_plain, double)
#endif /* GEMM_GNU */

/* ======================================================================== */
/* Kernel selection                                                          */
/* ======================================================================== */

/* Blocking: KC x MR of A (a micro-panel) stays in L1 (18 KiB for f32
 * AVX-512), KC x NCB of B in L2 (720 KiB), MCB x KC of A in L3. */
#ifdef GEMM_X86
static const gemm_sdesc gemm_s_avx512 = {
    12, 32, 384, 3072, 480, gemm_skern_avx512,
    gemm_ssup_avx512, gemm_sdot_avx512, "avx512 12x32"};
static const gemm_ddesc gemm_d_avx512 = {
    12, 16, 256, 3072, 240, gemm_dkern_avx512,
    gemm_dsup_avx512, gemm_ddot_avx512, "avx512 12x16"};
static const gemm_sdesc gemm_s_avx2 = {
    6, 16, 256, 3072, 480, gemm_skern_avx2, NULL, NULL, "avx2 6x16"};
static const gemm_ddesc gemm_d_avx2 = {
    6, 8, 256, 3072, 240, gemm_dkern_avx2, NULL, NULL, "avx2 6x8"};
#endif
#ifdef GEMM_GNU
static const gemm_sdesc gemm_s_port = {
    6, 8, 256, 1536, 256, gemm_skern_vec, NULL, NULL, "vector 6x8"};
static const gemm_ddesc gemm_d_port = {
    6, 4, 256, 1536, 128, gemm_dkern_vec, NULL, NULL, "vector 6x4"};
#else
static const gemm_sdesc gemm_s_port = {
    4, 4, 256, 1024, 256, gemm_skern_plain, NULL, NULL, "plain 4x4"};
static const gemm_ddesc gemm_d_port = {
    4, 4, 256, 1024, 128, gemm_dkern_plain, NULL, NULL, "plain 4x4"};
#endif

/* 0: not chosen yet, 1: portable, 2: AVX2+FMA, 3: AVX-512F. */
static atomic_int gemm_isa;

static int gemm_best_isa(void) {
    int isa = 1;
#ifdef GEMM_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        isa = 3;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        isa = 2;
#endif
    return isa;
}

/* gad__gemm_isa (gemm_int.h): the kernel set in use, chosen on first call. */
int gad__gemm_isa(void) {
    int isa = atomic_load_explicit(&gemm_isa, memory_order_relaxed);
    if (GAD_LIKELY(isa != 0)) return isa;
    isa = gemm_best_isa();
    atomic_store_explicit(&gemm_isa, isa, memory_order_relaxed);
    return isa;
}

/* 1 when the small-problem and dot paths are off (tests only). */
static atomic_int gemm_small_off;

/* For tests only (not in gemm.h; tests declare it): use the kernels of isa
 * (1 portable, 2 AVX2+FMA, 3 AVX-512F; 0 the best the CPU has) from now on,
 * process-wide, with the small-problem and dot paths (where the ISA has
 * them) on or off. Returns 0, or -1 when this CPU or build cannot run them. */
int gad__gemm_test_isa(int isa, int small_paths);
int gad__gemm_test_isa(int isa, int small_paths) {
    int best = gemm_best_isa();
    if (isa == 0) isa = best;
    if (isa < 1 || isa > best) return -1;
    atomic_store_explicit(&gemm_isa, isa, memory_order_relaxed);
    atomic_store_explicit(&gemm_small_off, !small_paths, memory_order_relaxed);
    return 0;
}

static const gemm_sdesc *gemm_sdesc_get(void) {
    switch (gad__gemm_isa()) {
#ifdef GEMM_X86
    case 3: return &gemm_s_avx512;
    case 2: return &gemm_s_avx2;
#endif
    default: return &gemm_s_port;
    }
}

static const gemm_ddesc *gemm_ddesc_get(void) {
    switch (gad__gemm_isa()) {
#ifdef GEMM_X86
    case 3: return &gemm_d_avx512;
    case 2: return &gemm_d_avx2;
#endif
    default: return &gemm_d_port;
    }
}

/* ======================================================================== */
/* Scratch and threads                                                       */
/* ======================================================================== */

static _Thread_local void *gemm_scratch;
static _Thread_local size_t gemm_scratch_cap;

/* At least n bytes of this thread's scratch (64-byte aligned), or NULL. The
 * packing buffers of every worker thread of one call are carved out of the
 * calling thread's block, so only the caller ever owns scratch. */
static void *gemm_scratch_get(size_t n) {
    if (n <= gemm_scratch_cap) return gemm_scratch;
    gad__free(gemm_scratch, gemm_scratch_cap);
    gemm_scratch = NULL;
    gemm_scratch_cap = 0;
    size_t cap = (n + 65535) & ~(size_t)65535;
    void *p = gad__alloc(cap);
    if (!p) return NULL;
    gemm_scratch = p;
    gemm_scratch_cap = cap;
    return p;
}

void gad__gemm_release_scratch(void) {
    gad__free(gemm_scratch, gemm_scratch_cap);
    gemm_scratch = NULL;
    gemm_scratch_cap = 0;
}

static inline int64_t gemm_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t gemm_cdiv(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}
static inline size_t gemm_round64(size_t n) { return (n + 63) & ~(size_t)63; }

/* Below this many multiply-adds per thread, another thread costs more than
 * it saves (a region of gad's pool whose workers are awake starts and joins
 * in about a microsecond). */
#define GEMM_MIN_WORK_PER_THREAD (48.0 * 48.0 * 48.0)

/* How many threads an M x N x K product is worth. */
static int gemm_threads(int64_t M, int64_t N, int64_t K) {
    if (gad__pool_nested()) return 1;
    int nt = gad__nthreads();
    if (nt <= 1) return 1;
    double lim = (double)M * (double)N * (double)K / GEMM_MIN_WORK_PER_THREAD;
    if (lim < nt) nt = lim < 1 ? 1 : (int)lim;
    return nt;
}

/* Relative cost of packing one element, in multiply-adds. */
#define GEMM_PACK_COST 4.0

/* The parallel plan of the packed path for nt > 1 threads: a tm x tn grid
 * of regions of C, one per thread, each packing what it needs. Picks the
 * lowest estimate of the slowest thread's work: its multiply-adds plus its
 * packing (rows of A and columns of B it packs, at an assumed cost of a few
 * multiply-adds per element). Regions are whole tiles, so the edge tiles of
 * C are the same whatever the grid. Measured alternatives, with two threads:
 * sharing packed A panels between threads saves packing but costs two
 * barriers per panel, and was not faster; cutting big products into more
 * tasks than threads, scheduled dynamically, copes better with another
 * process taking a core but cost 5-12% on an idle machine. */
static void gemm_plan(int nt, int64_t M, int64_t N, int64_t K, int mr, int nr,
                      int *tm_out, int *tn_out) {
    int64_t mt = gemm_cdiv(M, mr), ntl = gemm_cdiv(N, nr);
    double best = -1;
    for (int tm = 1; tm <= nt; tm++) {
        if (nt % tm) continue;
        int tn = nt / tm;
        if (tm > mt || tn > ntl) continue;
        double rows = (double)gemm_cdiv(mt, tm) * mr;
        double cols = (double)gemm_cdiv(ntl, tn) * nr;
        double cost =
            (rows * cols + GEMM_PACK_COST * (rows + cols)) * (double)K;
        if (best < 0 || cost < best) {
            best = cost;
            *tm_out = tm;
            *tn_out = tn;
        }
    }
    if (best < 0) { /* nt does not fit the tiles: split the longer side */
        *tm_out = mt >= ntl ? nt : 1;
        *tn_out = mt >= ntl ? 1 : nt;
    }
}

/* The block depth for K: the kernel's KC, evened out so that the last block
 * is not a sliver. Depends on K only (never on the thread count), so every
 * element of C is summed in the same order whatever the threads. */
static int64_t gemm_kc(int64_t K, int64_t kcmax) {
    int64_t nb = gemm_cdiv(K, kcmax);
    int64_t kc = gemm_cdiv(K, nb);
    kc = (kc + 3) & ~(int64_t)3;
    return kc < kcmax ? kc : kcmax;
}

/* Whether the small-problem kernels (no packing) should take a product.
 * They win when op(B) stays in L2 while the tiles of C sweep it, and when M
 * or N is too small for packed panels to be reused; they lose when op(B) is
 * big, or when its rows are 4 KiB apart (every row then falls in the same
 * L1 sets). Measured on AVX-512 (Xeon, 2 cores); bytes: of op(B). */
static int gemm_use_sup(int64_t M, int64_t N, int64_t K, int64_t ldb, int tb,
                        size_t esize) {
    double bytes = (double)K * (double)N * (double)esize;
    if (tb) return bytes <= 512.0 * 1024; /* sup packs all of op(B) */
    if (M <= 16 || N <= 16) return 1;
    if (bytes > 512.0 * 1024) return 0;
    if ((size_t)ldb * esize % 4096 == 0 && K > 32) return 0;
    return 1;
}

/* ---- the typed parts ---- */
#define GT float
#define GT_DESC gemm_sdesc
#define GT_FN(name) gemm_s_##name
#include "cpu/gemm_driver_tmpl.h"
#undef GT
#undef GT_DESC
#undef GT_FN

#define GT double
#define GT_DESC gemm_ddesc
#define GT_FN(name) gemm_d_##name
#include "cpu/gemm_driver_tmpl.h"
#undef GT
#undef GT_DESC
#undef GT_FN

/* ======================================================================== */
/* Public entry points                                                       */
/* ======================================================================== */

int gad__sgemm_builtin(int ta, int tb, int64_t M, int64_t N, int64_t K,
                       float alpha, const float *A, int64_t lda, const float *B,
                       int64_t ldb, float beta, float *C, int64_t ldc) {
    return gemm_s_run(gemm_sdesc_get(), ta, tb, M, N, K, alpha, A, lda, B, ldb,
                      beta, C, ldc);
}

int gad__dgemm_builtin(int ta, int tb, int64_t M, int64_t N, int64_t K,
                       double alpha, const double *A, int64_t lda,
                       const double *B, int64_t ldb, double beta, double *C,
                       int64_t ldc) {
    return gemm_d_run(gemm_ddesc_get(), ta, tb, M, N, K, alpha, A, lda, B, ldb,
                      beta, C, ldc);
}

/* For tests only (not in gemm.h): when on, gad__sgemm/gad__dgemm send every
 * non-empty product to CBLAS (if built with it and enabled), whatever its
 * size, so that the CBLAS call itself can be checked on small shapes. */
atomic_int gad__gemm_blas_always; /* read by gemm_blas.c */
void gad__gemm_test_blas_always(int on);
void gad__gemm_test_blas_always(int on) {
    atomic_store_explicit(&gad__gemm_blas_always, on != 0,
                          memory_order_relaxed);
}

int gad__sgemm(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
               const float *A, int64_t lda, const float *B, int64_t ldb,
               float beta, float *C, int64_t ldc) {
#ifdef GAD_HAVE_CBLAS
    if (M > 0 && N > 0 &&
        gad__gemm_use_blas(M, N, K, lda, ldb, ldc, sizeof(float))) {
        gad__pool_park();
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                    tb ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K,
                    alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
        return 0;
    }
#endif
    return gad__sgemm_builtin(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C,
                              ldc);
}

int gad__dgemm(int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha,
               const double *A, int64_t lda, const double *B, int64_t ldb,
               double beta, double *C, int64_t ldc) {
#ifdef GAD_HAVE_CBLAS
    if (M > 0 && N > 0 &&
        gad__gemm_use_blas(M, N, K, lda, ldb, ldc, sizeof(double))) {
        gad__pool_park();
        cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                    tb ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K,
                    alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
        return 0;
    }
#endif
    return gad__dgemm_builtin(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C,
                              ldc);
}
