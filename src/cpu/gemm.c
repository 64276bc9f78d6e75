/* gemm.c: general matrix multiply for the CPU (see gemm.h for the contract),
 * the driver: the entry points of gemm.h and the test hooks, the run-time
 * choice of the micro-kernels and their blocking, the packing and the split
 * over threads (their typed half in gemm_driver_tmpl.h). The micro-kernels
 * are in one file per instruction set and the BLAS policy in gemm_blas.c;
 * the list of the files ends this comment.
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
 * from gad__alloc), kept for reuse until gad__gemm_release_scratch (the
 * thread's gad_cache_trim or exit), except on one of gad's workers (a
 * product of a batch that src/cpu/matmul.c spread over threads): a worker
 * never exits and no caller trims it, so it gives its block back at the end
 * of every call.
 *
 * The files:
 *   gemm.c              this driver;
 *   gemm_driver_tmpl.h  its typed packing routines and drivers, included
 *                       here once per element type (float, double);
 *   gemm_int.h          what the files share: the micro-kernel types and
 *                       their contract, the kernel descriptor, the kernels
 *                       of each ISA file;
 *   gemm_kernel_tmpl.h  the packed micro-kernel, written once over a
 *                       vector type;
 *   gemm_avx512.c       the AVX-512F kernels (packed, small-problem, dot);
 *   gemm_avx2.c         the AVX2+FMA kernels;
 *   gemm_generic.c      the portable kernels (vector extensions or plain C);
 *   gemm_blas.c         when to call CBLAS, and the BLAS library's threads. */

#include "cpu/gemm.h"
#include "cpu/gemm_int.h"
#include "gad_int.h"

#include <stddef.h>
#include <string.h>
#include <unistd.h>

#ifdef GEMM_X86
#include <cpuid.h>
#endif

#ifdef GAD_HAVE_CBLAS
#include <cblas.h>
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
/* Kernel selection                                                          */
/* ======================================================================== */

/* Blocking: KC x MR of A (a micro-panel) stays in L1 (18 KiB for f32
 * AVX-512), KC x NCB of B in L2 (720 KiB), MCB x KC of A in L3. */
#ifdef GEMM_X86
static const gemm_sdesc gemm_s_avx512 = {
    12, 32, 384, 3072, 480, gad__gemm_skern_avx512,
    gad__gemm_ssup_avx512, gad__gemm_sdot_avx512, "avx512 12x32",
    gad__gemm_stpack_avx512};
static const gemm_ddesc gemm_d_avx512 = {
    12, 16, 256, 3072, 240, gad__gemm_dkern_avx512,
    gad__gemm_dsup_avx512, gad__gemm_ddot_avx512, "avx512 12x16", NULL};
static const gemm_sdesc gemm_s_avx2 = {
    6, 16, 256, 3072, 480, gad__gemm_skern_avx2, NULL, NULL, "avx2 6x16", NULL};
static const gemm_ddesc gemm_d_avx2 = {
    6, 8, 256, 3072, 240, gad__gemm_dkern_avx2, NULL, NULL, "avx2 6x8", NULL};
#endif
#ifdef GEMM_GNU
static const gemm_sdesc gemm_s_port = {
    6, 8, 256, 1536, 256, gad__gemm_skern_vec, NULL, NULL, "vector 6x8", NULL};
static const gemm_ddesc gemm_d_port = {
    6, 4, 256, 1536, 128, gad__gemm_dkern_vec, NULL, NULL, "vector 6x4", NULL};
#else
static const gemm_sdesc gemm_s_port = {
    4, 4, 256, 1024, 256, gad__gemm_skern_plain, NULL, NULL, "plain 4x4", NULL};
static const gemm_ddesc gemm_d_port = {
    4, 4, 256, 1024, 128, gad__gemm_dkern_plain, NULL, NULL, "plain 4x4", NULL};
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

/* 1 when the small-problem path keeps a row-major op(B) in place whatever
 * gemm_sup_panels' rule says (tests and bench/gemm_paths.c only). */
static atomic_int gemm_panels_off;

/* For tests and benchmarks (not in gemm.h): 0 keeps a row-major op(B) in
 * place on the small-problem path, 1 (the default) follows the rule. The
 * bits of a product do not change either way. */
void gad__gemm_test_sup_panels(int on);
void gad__gemm_test_sup_panels(int on) {
    atomic_store_explicit(&gemm_panels_off, !on, memory_order_relaxed);
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

typedef struct gemm_scratch_t {
    void *p;
    size_t cap;
    bool registered; /* with gad__register_thread_cache */
} gemm_scratch_t;
static _Thread_local gemm_scratch_t gemm_scr;
#define gemm_scratch gemm_scr.p
#define gemm_scratch_cap gemm_scr.cap

/* Give back a thread's scratch block (gad_set_allocator, for every
 * thread). */
static void scratch_flush(void *state) {
    gemm_scratch_t *s = state;
    gad__free(s->p, s->cap);
    s->p = NULL;
    s->cap = 0;
}

/* At least n bytes of this thread's scratch (64-byte aligned), or NULL. The
 * packing buffers of every worker thread of one call are carved out of the
 * calling thread's block, so only the caller of a call owns scratch. */
static _Thread_local void *gemm_lent; /* gad__gemm_lend_scratch's buffer */
static _Thread_local size_t gemm_lent_cap;

static void *gemm_scratch_get(size_t n) {
    if (gemm_lent) return n <= gemm_lent_cap ? gemm_lent : NULL;
    if (n <= gemm_scratch_cap) return gemm_scratch;
    gad__free(gemm_scratch, gemm_scratch_cap);
    gemm_scratch = NULL;
    gemm_scratch_cap = 0;
    size_t cap = (n + 65535) & ~(size_t)65535;
    if (!gemm_scr.registered) {
        gemm_scr.registered = true;
        gad__register_thread_cache(&gemm_scr, scratch_flush);
    }
    void *p = gad__alloc(cap);
    if (!p) return NULL;
    gemm_scratch = p;
    gemm_scratch_cap = cap;
    return p;
}

void gad__gemm_lend_scratch(void *buf, size_t n) {
    gemm_lent = buf;
    gemm_lent_cap = buf ? n : 0;
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
/* The same while gad's workers find their cores contended (another
 * process or thread wants them) and so sleep after each region: a split
 * then pays for a worker's wake-up and for the time it waits for its core.
 * Measured on a 2-vCPU Xeon with a spinner holding the other CPU (sgemm,
 * medians of 15 calls, speed on 2 threads over 1): 64^3 0.72, 96^3 0.73,
 * 128^3 0.66; from 144^3 to 192^3 anywhere from 0.66 to 1.43 between runs
 * (as the scheduler shared the spinner's CPU); 256^3 and 384^3 1.6 and
 * 1.8. So two threads from 144^3 (3M multiply-adds). */
#define GEMM_MIN_WORK_CONTENDED (1.5e6)

/* How many threads an M x N x K product is worth. */
static int gemm_threads(int64_t M, int64_t N, int64_t K) {
    if (gad__pool_nested()) return 1;
    int nt = gad__nthreads();
    if (nt <= 1) return 1;
    double work = (double)M * (double)N * (double)K;
    double lim = work / GEMM_MIN_WORK_PER_THREAD;
    if (lim >= 2 && work < nt * GEMM_MIN_WORK_CONTENDED && gad__pool_contended())
        lim = work / GEMM_MIN_WORK_CONTENDED;
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

/* The largest gemm_kc(K', kcmax) of any K' <= K: gemm_kc is not monotonic
 * (K = kcmax takes kcmax, K = kcmax + 4 two blocks of half that), and a
 * caller that sizes scratch once for products of up to K (convolution's
 * blocks, their tails smaller) needs the bound. */
static int64_t gemm_kc_bound(int64_t K, int64_t kcmax) {
    int64_t kc = (K + 3) & ~(int64_t)3;
    return kc < kcmax ? kc : kcmax;
}

/* This core's L2 in bytes (sysconf where the C library knows it, else 2 MiB,
 * the size the thresholds below were measured with). */
static int64_t gemm_l2_bytes(void) {
    static atomic_llong cached;
    int64_t v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (GAD_LIKELY(v > 0)) return v;
    v = 0;
#ifdef _SC_LEVEL2_CACHE_SIZE
    v = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    if (v < 256 * 1024 || v > 64 * 1024 * 1024) v = 2 * 1024 * 1024;
    atomic_store_explicit(&cached, v, memory_order_relaxed);
    return v;
}

/* gad__gemm_cpu_amd (gemm_int.h): read once, as CPUID traps to the
 * hypervisor in a VM; "AuthenticAMD" is in EBX, EDX, ECX of leaf 0. */
int gad__gemm_cpu_amd(void) {
    static atomic_int cached; /* 0 unknown, 1 AMD, 2 not */
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (GAD_LIKELY(v)) return v == 1;
    v = 2;
#ifdef GEMM_X86
    unsigned a, b, c, d;
    if (__get_cpuid(0, &a, &b, &c, &d) && b == 0x68747541u && d == 0x69746e65u &&
        c == 0x444d4163u)
        v = 1;
#endif
    atomic_store_explicit(&cached, v, memory_order_relaxed);
    return v == 1;
}

/* Whether the small-problem kernels (no packing) should take a product.
 * They win when op(B) stays in L2 while the tiles of C sweep it, and when M
 * or N is too small for packed panels to be reused; they lose when op(B) is
 * big, or when its rows are 4 KiB apart (every row then falls in the same
 * L1 sets). bytes: of op(B). Measured on AVX-512 (Xeon, 2 MiB L2, one
 * thread, M = 64..1024): unpacked B gains up to a quarter of L2; packed
 * once (tb), the sup kernels gain 2-10% up to half of L2 and lose beyond
 * (0.94x at the full L2, 0.7x at 8x it). */
/* The largest K whose transposed op(B) of N columns the small-problem
 * kernels take: they pack all of it, up to half of L2. */
static int64_t gemm_sup_tb_kmax(int64_t N, size_t esize) {
    return (int64_t)((double)gemm_l2_bytes() / 2 / ((double)N * (double)esize));
}

/* Whether the small-problem path packs op(B) into NR-column panels before
 * its tiles read it: always when op(B) is transposed (its columns are then
 * strided), and on Intel's cores for a row-major op(B) read by at least
 * GEMM_SUP_PANEL_ROWS rows of C. Read in place, op(B)'s rows are ldb apart
 * and a tile's 2 x 64 bytes a row fall in few L1 sets, so every tile reads
 * them from L2 again; a panel is contiguous. Measured on the Intel Xeon of
 * bench/RESULTS.md (one thread, f32, W5's products; panels over in place,
 * medians of 11 alternated rounds): 1.05-1.12x at M = 512-4096, N = 256-512,
 * K = 256-512, about 1.03x at M = 384, and a loss below (0.91-0.96x at M =
 * 64-128, where the copy is paid for by few tiles). With one panel's
 * columns or fewer (N <= 32) the copy gains nothing (1.00-1.02x at N = 16
 * and 32): op(B) is then read in place. The panels take the same K bound
 * as a transposed op(B)'s. Not measured on AMD's cores, which read op(B)
 * in place as before, nor in f64. */
#define GEMM_SUP_PANEL_ROWS 512
static int gemm_sup_panels(int tb, int64_t M, int64_t N, int64_t K, size_t esize) {
    return tb || (esize == sizeof(float) && M >= GEMM_SUP_PANEL_ROWS && N > 32 &&
                  !gad__gemm_cpu_amd() && K <= gemm_sup_tb_kmax(N, esize) &&
                  !atomic_load_explicit(&gemm_panels_off, memory_order_relaxed));
}

static int gemm_use_sup(int ta, int64_t M, int64_t N, int64_t K, int64_t ldb, int tb,
                        size_t esize) {
    if (tb) return K <= gemm_sup_tb_kmax(N, esize);
    double bytes = (double)K * (double)N * (double)esize;
    double l2 = (double)gemm_l2_bytes();
    if (M <= 16 || N <= 16) return 1;
    if ((size_t)ldb * esize % 4096 == 0 && K > 32) return 0;
    int amd = gad__gemm_cpu_amd();
    /* Every tile of C reads its columns of op(B) again, in rows ldb apart,
     * where the packed path reads them from contiguous panels: with op(A)
     * transposed too and more than 128 rows, the panels win even for a small
     * op(B). Measured on an Intel Xeon (family 6 model 207, 2 MiB L2; one
     * thread, f32, unpacked over packed): 0.87-0.92x at 512 x 512 x 128 and
     * 784 x 512 x 128 (W4's weight gradients), 0.92-0.98x at M = 192-256,
     * K = 128, 1.02-1.10x at M <= 128. Not measured on AMD's cores, which
     * keep the rule below. */
    if (!amd && ta && M > 128) return 0;
    if (bytes <= l2 / 4) return 1;
    /* Beyond that, with few rows the packing of op(B) is paid for by few
     * tiles. Measured on a Zen 4 core (1 MiB L2; unpacked over packed,
     * pairwise medians of alternated runs): M = 128 at K = 512 and 784, N
     * = 512 (W4's layers), 1.10-1.11x on one thread, 1.07-1.08x on two;
     * 1.24x at M = 64, 1.05x at 96 x 700 x 600. Longer K streams the
     * columns of op(B) from beyond L2 for every row block (0.97x at M =
     * 128, K = 1024; at M = 256, 0.81x at K = 1024 and 0.74x at 2048), and
     * more rows or a bigger op(B) gave mixed results. On the Intel Xeon
     * above, whose L3 feeds a core's full-width FMAs more slowly than Zen
     * 4's feeds its half-width ones, this pays only while op(B) fits half of
     * L2 (1.05-1.14x at M = 96-128, N = 256-512, K = 256-640), or for at
     * most 32 rows (1.23-1.29x at 32 x 512 x 784): at 128 x 512 x 784 (W4's
     * first layer) it ran 0.87x, at 96 x 512 x 784 0.75-0.79x. f32 only
     * (the f64 kernels were not measured). */
    if (esize == sizeof(float) && M <= 128 && K <= 800 &&
        bytes <= (amd || M <= 32 ? 2 * l2 : l2 / 2))
        return 1;
    return 0;
}

/* ---- for the half-precision GEMM (gemm_half.c): the f32 kernel set in
 * use, the scratch block, and the thread and blocking policies above ---- */
const gemm_sdesc *gad__gemm_sdesc(void) { return gemm_sdesc_get(); }
void *gad__gemm_scratch(size_t n) { return gemm_scratch_get(n); }
int gad__gemm_threads(int64_t M, int64_t N, int64_t K) { return gemm_threads(M, N, K); }
void gad__gemm_plan(int nt, int64_t M, int64_t N, int64_t K, int mr, int nr, int *tm,
                    int *tn) {
    gemm_plan(nt, M, N, K, mr, nr, tm, tn);
}
int64_t gad__gemm_kc(int64_t K, int64_t kcmax) { return gemm_kc(K, kcmax); }
int64_t gad__gemm_l2_bytes(void) { return gemm_l2_bytes(); }
int64_t gad__gemm_kc_bound(int64_t K, int64_t kcmax) { return gemm_kc_bound(K, kcmax); }
int gad__gemm_use_sup(int ta, int64_t M, int64_t N, int64_t K, int64_t ldb, int tb) {
    return !atomic_load_explicit(&gemm_small_off, memory_order_relaxed) &&
           gemm_use_sup(ta, M, N, K, ldb, tb, sizeof(float));
}
int gad__gemm_sup_panels(int tb, int64_t M, int64_t N, int64_t K) {
    return gemm_sup_panels(tb, M, N, K, sizeof(float));
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
    int rc = gemm_s_run(gemm_sdesc_get(), ta, tb, M, N, K, alpha, A, lda, B, ldb,
                        beta, C, ldc);
    if (GAD_UNLIKELY(gad__pool_worker())) gad__gemm_release_scratch();
    return rc;
}

int gad__dgemm_builtin(int ta, int tb, int64_t M, int64_t N, int64_t K,
                       double alpha, const double *A, int64_t lda,
                       const double *B, int64_t ldb, double beta, double *C,
                       int64_t ldc) {
    int rc = gemm_d_run(gemm_ddesc_get(), ta, tb, M, N, K, alpha, A, lda, B, ldb,
                        beta, C, ldc);
    if (GAD_UNLIKELY(gad__pool_worker())) gad__gemm_release_scratch();
    return rc;
}

size_t gad__gemm_scratch_bytes(int f64, int ta, int tb, int64_t M, int64_t N, int64_t K,
                               int64_t lda, int64_t ldb) {
    if (f64) return gemm_d_scratch_one(gemm_ddesc_get(), ta, tb, M, N, K, lda, ldb);
    size_t s = gemm_s_scratch_one(gemm_sdesc_get(), ta, tb, M, N, K, lda, ldb);
    if (gad__sgemm_medium()) { /* the product goes to gad__hgemm */
        size_t h = gad__hgemm_scratch_bytes(GAD_BF16, GAD_F32, ta, tb, M, N, K);
        if (h > s) s = h;
    }
    return s;
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
    /* no products (K = 0 or alpha = 0: C = beta C) take the f32 path */
    if (GAD_UNLIKELY(gad__sgemm_medium()) && M > 0 && N > 0 && K > 0 && alpha != 0.0f)
        return gad__sgemm_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
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
