/* gemm_half.c: the GEMM of bf16 and f16 matrices (gemm.h has the contract):
 * products summed in f32, the result written in f32 or rounded once to the
 * inputs' dtype. The driver is the packed path of gemm.c (Goto/BLIS loops,
 * the same thread split and block depth, so the same bits for any thread
 * count), with one of three kernels, chosen at run time:
 *
 *   - AMX-BF16 (gemm_amx.c), bf16 inputs on a CPU with AMX whose kernel
 *     grants the tile state;
 *   - AVX-512 BF16 (gemm_bf16_avx512.c), bf16 inputs, VDPBF16PS, where it
 *     out-runs f32 FMAs (on AMD's cores, see hg_dp_wins);
 *   - the f32 kernels of gemm.c (whatever ISA it chose), the half panels
 *     converted to f32 while packing: f16 inputs everywhere (no x86 CPU
 *     here has an f16 dot product with f32 sums: AVX512-FP16 multiplies
 *     and sums in f16, so it is not used), and bf16 elsewhere.
 *
 * The products are exact in f32 on every path (8 x 8 or 11 x 11 bits of
 * mantissa). The paths differ in the order of the sums (pairs of K first for
 * the bf16 instructions) and in what they do with subnormals: the bf16
 * instructions count bf16 subnormal inputs as zero and flush subnormal
 * sums, and the f32 kernels run with FTZ/DAZ (gemm.c) and so do the same for
 * bf16 inputs; f16 subnormals are normal numbers in f32 and count in full.
 *
 * C is accumulated in f32 over the blocks of K: into C itself for an f32
 * result, else into a buffer of the thread's rows x columns of one block of
 * rows, converted (RNE, half.h's bits) once the last block of K is in. */
#include "cpu/gemm.h"
#include "cpu/gemm_half_int.h"
#include "gad_int.h"
#include "cpu/cpu.h"
#include "half.h"

#include <string.h>

#ifdef GEMM_X86
#include <cpuid.h>
#define HG_FTZ_DAZ 0x8040u
static inline unsigned hg_ftz_begin(void) {
    unsigned m = _mm_getcsr();
    if ((m & HG_FTZ_DAZ) != HG_FTZ_DAZ) _mm_setcsr(m | HG_FTZ_DAZ);
    return m;
}
static inline void hg_ftz_end(unsigned m) {
    if ((m & HG_FTZ_DAZ) != HG_FTZ_DAZ) _mm_setcsr(m);
}
#else
static inline unsigned hg_ftz_begin(void) { return 0; }
static inline void hg_ftz_end(unsigned m) { (void)m; }
#endif

/* ======================================================================== */
/* Paths                                                                     */
/* ======================================================================== */

enum { HG_F32 = 1, HG_AVX512 = 2, HG_AMX = 3 };

typedef struct hg_desc {
    int path, mr, nr;
    int64_t kc, mcb, ncb;
    const gemm_sdesc *sd; /* HG_F32: the f32 kernel */
    int vec;              /* AVX-512 F/BW/VL for the conversions and packing */
} hg_desc;

static int64_t hg_min(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t hg_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static size_t hg_round64(size_t n) { return (n + 63) & ~(size_t)63; }

#ifdef GEMM_X86
/* CPU features, read once (CPUID traps to the hypervisor in a VM): bit 0
 * AVX-512 F/BW/VL, bit 1 AVX512_BF16, bit 2 set once read, bit 3 an AMD CPU. */
static atomic_int hg_cpu;

static int hg_cpu_flags(void) {
    int f = atomic_load_explicit(&hg_cpu, memory_order_relaxed);
    if (f) return f;
    f = 4;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl"))
        f |= 1;
    unsigned a, b, c, d;
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d) && ((a >> 5) & 1)) f |= 2;
    if (gad__gemm_cpu_amd()) f |= 8; /* hg_dp_wins */
    atomic_store_explicit(&hg_cpu, f, memory_order_relaxed);
    return f;
}
static int hg_cpu_vec(void) { return hg_cpu_flags() & 1; }
static int hg_cpu_bf16(void) { return (hg_cpu_flags() >> 1) & 1; }
#endif

#ifdef GEMM_X86
/* Whether VDPBF16PS out-runs f32 FMAs on this core. It does 64 FLOP to an
 * FMA's 32, but Intel's cores issue it at half an FMA's rate (the Xeon of
 * bench/RESULTS.md: 86 GFLOP/s a core against 174 for FMAs: the same FLOP,
 * and converting bf16 panels to f32 for gemm.c's kernel then wins by the
 * packing), while AMD's Zen 4 issues it at the FMA's rate (235 against 117
 * GFLOP/s). The choice is made from the CPU's vendor, not timed: the path
 * decides the bits of every bf16 product, and a choice timed once per
 * process flipped on a loaded machine, so that a resumed bf16 run computed
 * differently from the run it continued (CI, gpt_cli). Every process on one
 * machine takes the same path. */
static int hg_dp_wins(void) { return (hg_cpu_flags() >> 3) & 1; }
#endif

/* 0: the best path; else the path forced by gad__hgemm_test_path. */
static atomic_int hg_forced;

/* The best path the CPU and the f32 kernel set in use allow for bf16. */
static int hg_best_bf16(void) {
#ifdef GEMM_X86
    if (gad__gemm_isa() < 3 || !hg_cpu_vec()) return HG_F32;
    if (gad__hgemm_amx_usable()) return HG_AMX;
    if (hg_cpu_bf16() && hg_dp_wins()) return HG_AVX512;
#endif
    return HG_F32;
}

/* For tests only (not in gemm.h; tests declare it): from now on, process-
 * wide, bf16 products take path p (1: converted to f32 for gemm.c's
 * kernels, 2: AVX-512 BF16, 3: AMX; 0: the best the CPU has). f16 products
 * always take path 1. Returns 0, or -1 when this CPU cannot run p. */
int gad__hgemm_test_path(int p);
int gad__hgemm_test_path(int p) {
    if (p < 0 || p > 3) return -1;
#ifdef GEMM_X86
    if (p == HG_AVX512 && !(hg_cpu_bf16() && hg_cpu_vec() && gad__gemm_isa() == 3)) return -1;
    if (p == HG_AMX && !(gad__hgemm_amx_usable() && hg_cpu_vec() && gad__gemm_isa() == 3))
        return -1;
#else
    if (p > HG_F32) return -1;
#endif
    atomic_store_explicit(&hg_forced, p, memory_order_relaxed);
    return 0;
}

/* For tests and benchmarks: the path a product of dtype dt takes now. */
int gad__hgemm_path(int dt);
int gad__hgemm_path(int dt) {
    if (dt != GAD_BF16) return HG_F32;
    int p = atomic_load_explicit(&hg_forced, memory_order_relaxed);
    return p ? p : hg_best_bf16();
}

static void hg_desc_get(int dt, hg_desc *d) {
    memset(d, 0, sizeof *d);
    d->path = gad__hgemm_path(dt);
#ifdef GEMM_X86
    d->vec = gad__gemm_isa() == 3 && hg_cpu_vec();
#endif
    if (d->path == HG_F32) {
        const gemm_sdesc *sd = gad__gemm_sdesc();
        d->sd = sd;
        d->mr = sd->mr;
        d->nr = sd->nr;
        d->kc = sd->kc;
        d->mcb = sd->mcb;
        d->ncb = sd->ncb;
    } else {
        /* bf16 pairs: 2 bytes an element, so twice the f32 kernel's depth
         * for the same bytes of A micro-panel in L1 (12 x 768 x 2 = 18 KiB)
         * and of B block in L2 (768 x 480 x 2 = 720 KiB). VDPBF16PS goes
         * deeper, K up to 2048 in one block: its kernel reads 176 bytes in
         * 24 cycles, which L2 and L3 keep up with (over 15 B micro-panels
         * from L2 it ran at the instruction's peak at every depth from 256
         * to 1536), and with K in one block each tile of C is stored once,
         * rounded to bf16 by the kernel (hg_fuse). Against blocks of 768
         * on a Zen 4 core: 1.04x at N = 1024, 1.06x at 1536 and 2048, level
         * at 4096 (two blocks either way). */
        d->mr = d->path == HG_AMX ? 32 : 12;
        d->nr = HGEMM_NR;
        d->kc = d->path == HG_AVX512 ? 2048 : 768;
        d->mcb = 3072;
        d->ncb = 480;
    }
}

/* Pairs of K in a block of kc (AMX: whole tiles of 16 pairs). */
static int64_t hg_kp(const hg_desc *d, int64_t kc) {
    return d->path == HG_AMX ? hg_cdiv(kc, 32) * 16 : hg_cdiv(kc, 2);
}

/* ======================================================================== */
/* Conversions                                                               */
/* ======================================================================== */

#ifdef GEMM_X86
__attribute__((target("avx512f"))) static void cvt_in_vec(int dt, const uint16_t *s,
                                                          int64_t n, float *d) {
    int64_t j = 0;
    if (dt == GAD_BF16) {
        for (; j + 16 <= n; j += 16) {
            __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(s + j)));
            _mm512_storeu_ps(d + j, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
        }
    } else {
        /* VCVTPH2PS is exact, subnormals included (MXCSR.DAZ does not
         * apply to half inputs) */
        for (; j + 16 <= n; j += 16)
            _mm512_storeu_ps(d + j, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(s + j))));
    }
    for (; j < n; j++) d[j] = dt == GAD_BF16 ? gad__bf16_to_f32(s[j]) : gad__f16_to_f32(s[j]);
}

/* f32 to half with half.h's rounding and NaNs. bf16: round to nearest even
 * in integer arithmetic; f16: VCVTPS2PH (round to nearest even; a NaN keeps
 * part of its payload there, so NaNs are set to sign | 0x7e00 after). */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void
cvt_out_vec(int dt, const float *s, int64_t n, uint16_t *d) {
    int64_t j = 0;
    for (; j < n; j += 16) {
        int r = n - j < 16 ? (int)(n - j) : 16;
        __mmask16 m = (__mmask16)(r == 16 ? 0xFFFFu : (1u << r) - 1);
        __m512 v = _mm512_maskz_loadu_ps(m, s + j);
        __m256i h;
        if (dt == GAD_BF16) {
            h = gad__hgemm_rne(v);
        } else {
            __m512i u = _mm512_castps_si512(v);
            __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
            h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            __m512i q = _mm512_or_si512(
                _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x8000)),
                _mm512_set1_epi32(0x7e00));
            h = _mm256_mask_mov_epi16(h, (__mmask16)nan, _mm512_cvtepi32_epi16(q));
        }
        _mm256_mask_storeu_epi16(d + j, m, h);
    }
}
#endif

static void cvt_in(const hg_desc *hd, int dt, const uint16_t *s, int64_t n, float *d) {
#ifdef GEMM_X86
    if (hd->vec) {
        cvt_in_vec(dt, s, n, d);
        return;
    }
#endif
    (void)hd;
    if (dt == GAD_BF16)
        for (int64_t j = 0; j < n; j++) d[j] = gad__bf16_to_f32(s[j]);
    else
        for (int64_t j = 0; j < n; j++) d[j] = gad__f16_to_f32(s[j]);
}

static void cvt_out(const hg_desc *hd, int dt, const float *s, int64_t n, uint16_t *d) {
#ifdef GEMM_X86
    if (hd->vec) {
        cvt_out_vec(dt, s, n, d);
        return;
    }
#endif
    (void)hd;
    if (dt == GAD_BF16)
        for (int64_t j = 0; j < n; j++) d[j] = gad__f32_to_bf16(s[j]);
    else
        for (int64_t j = 0; j < n; j++) d[j] = gad__f32_to_f16(s[j]);
}

/* ======================================================================== */
/* Packing for the f32 kernels (layouts of gemm_driver_tmpl.h)              */
/* ======================================================================== */

/* Rows of op(A) and columns of op(B) are converted this many at a time. */
#define HG_ROWBUF 512

static void pack_a_f32(const hg_desc *hd, int dt, int64_t mc, int64_t kc, const uint16_t *A,
                       int64_t lda, int ta, float *dst) {
    const int mr = hd->mr;
    float buf[HG_ROWBUF];
    for (int64_t ir = 0; ir < mc; ir += mr, dst += kc * mr) {
        int m = (int)hg_min(mr, mc - ir);
        if (!ta) {
            /* a row of op(A) is contiguous in k: convert it, then scatter */
            for (int i = 0; i < mr; i++) {
                if (i < m) {
                    for (int64_t k0 = 0; k0 < kc; k0 += HG_ROWBUF) {
                        int64_t n = hg_min(HG_ROWBUF, kc - k0);
                        cvt_in(hd, dt, A + (ir + i) * lda + k0, n, buf);
                        for (int64_t k = 0; k < n; k++) dst[(k0 + k) * mr + i] = buf[k];
                    }
                } else {
                    for (int64_t k = 0; k < kc; k++) dst[k * mr + i] = 0;
                }
            }
        } else {
            for (int64_t k = 0; k < kc; k++) {
                float *d = dst + k * mr;
                cvt_in(hd, dt, A + k * lda + ir, m, d);
                for (int i = m; i < mr; i++) d[i] = 0;
            }
        }
    }
}

#ifdef GEMM_X86
/* One full micro-panel of nr = 16q columns of a row-major op(B): each row
 * of K converted straight into the panel (no call per row). */
__attribute__((target("avx512f"))) static void pack_b_f32_full(int dt, int nr, int64_t kc,
                                                               const uint16_t *B, int64_t ldb,
                                                               float *dst) {
    for (int64_t k = 0; k < kc; k++, B += ldb, dst += nr)
        for (int j = 0; j < nr; j += 16) {
            __m256i h = _mm256_loadu_si256((const __m256i *)(B + j));
            __m512 v = dt == GAD_BF16
                           ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))
                           : _mm512_cvtph_ps(h);
            _mm512_storeu_ps(dst + j, v);
        }
}
#endif

static void pack_b_f32(const hg_desc *hd, int dt, int64_t kc, int64_t nc, const uint16_t *B,
                       int64_t ldb, int tb, float *dst) {
    const int nr = hd->nr;
#ifdef GEMM_X86
    if (hd->vec && !tb && nr % 16 == 0) {
        int64_t full = nc / nr * nr;
        for (int64_t jr = 0; jr < full; jr += nr, dst += kc * nr)
            pack_b_f32_full(dt, nr, kc, B + jr, ldb, dst);
        B += full;
        nc -= full;
    }
#endif
    float buf[HG_ROWBUF];
    for (int64_t jr = 0; jr < nc; jr += nr, dst += kc * nr) {
        int n = (int)hg_min(nr, nc - jr);
        if (!tb) {
            for (int64_t k = 0; k < kc; k++) {
                float *d = dst + k * nr;
                cvt_in(hd, dt, B + k * ldb + jr, n, d);
                for (int j = n; j < nr; j++) d[j] = 0;
            }
        } else {
            for (int j = 0; j < nr; j++) {
                if (j < n) {
                    for (int64_t k0 = 0; k0 < kc; k0 += HG_ROWBUF) {
                        int64_t len = hg_min(HG_ROWBUF, kc - k0);
                        cvt_in(hd, dt, B + (jr + j) * ldb + k0, len, buf);
                        for (int64_t k = 0; k < len; k++) dst[(k0 + k) * nr + j] = buf[k];
                    }
                } else {
                    for (int64_t k = 0; k < kc; k++) dst[k * nr + j] = 0;
                }
            }
        }
    }
}

/* ======================================================================== */
/* The packed driver                                                         */
/* ======================================================================== */

typedef struct hg_args {
    const hg_desc *d;
    int dt, cdt, ta, tb;
    int64_t M, N, K, kc;
    const uint16_t *A;
    int64_t lda;
    const uint16_t *B;
    int64_t ldb;
    void *C;
    int64_t ldc;
} hg_args;

/* One micro-tile of kr rows: c (ldc) = or += the product of micro-panels a
 * and b; on the AVX-512 BF16 path the A rows are at a + i * ars + p * aps
 * and h, when set, takes the tile in bf16 instead of c (the kernel's
 * contract, gemm_half_int.h). */
static void hg_kern(const hg_desc *d, int kr, int64_t kc, int64_t kp, const void *a,
                    int64_t ars, int64_t aps, const void *b, float *c, int64_t ldc, int acc,
                    uint16_t *h, int64_t ldh) {
    switch (d->path) {
#ifdef GEMM_X86
    case HG_AVX512: gad__hgemm_kern_avx512(kr, kp, a, ars, aps, b, c, ldc, acc, h, ldh); return;
    case HG_AMX: gad__hgemm_kern_amx(kp, a, b, c, ldc, acc); return;
#endif
    default:
        /* c = 1*acc + 1*c (or + 0*c, not read): exactly acc + c */
        (void)kr, (void)kp, (void)ars, (void)aps, (void)h, (void)ldh;
        d->sd->kern(kc, a, b, c, ldc, 1.0f, acc ? 1.0f : 0.0f);
    }
}

/* Loops 2 and 1: the mc x kc panel of op(A) times the packed kc x nc block
 * pb into (or onto, acc) the f32 block at cf, or, with h (the AVX-512 BF16
 * path's last block of K), into the bf16 result at h. op(A) is packed at
 * pa, or (ua set: that path, A stored by rows, kc even) read where it is,
 * ua with lda, all but a last partial micro-panel, which is packed at pa.
 * Packed elements are 4 bytes: an f32 or a pair of bf16. */
static void hg_macro(const hg_desc *d, int64_t mc, int64_t nc, int64_t kc, int64_t kp,
                     const uint16_t *ua, int64_t lda, const uint32_t *pa, const uint32_t *pb,
                     float *cf, int64_t ldf, int acc, uint16_t *h, int64_t ldh) {
    const int mr = d->mr, nr = d->nr;
    const int64_t depth = d->path == HG_F32 ? kc : kp;
    _Alignas(64) float tmp[32 * 32];
    for (int64_t ir = 0; ir < mc; ir += mr) {
        int m = (int)hg_min(mr, mc - ir), kr = mr;
        const void *a = pa + ir * depth;
        int64_t ars = 4, aps = 4 * (int64_t)mr;
        if (d->path == HG_AVX512) {
            kr = m <= 4 ? 4 : m <= 8 ? 8 : 12; /* fewer rows for a last panel */
            if (ua && m == mr) {
                a = ua + ir * lda;
                ars = 2 * lda;
                aps = 4;
            } else if (ua) {
                a = pa;
            }
        }
        for (int64_t jr = 0; jr < nc; jr += nr) {
            int n = (int)hg_min(nr, nc - jr);
            const uint32_t *b = pb + jr * depth;
            float *c = cf ? cf + ir * ldf + jr : NULL; /* NULL: fused, K in one block */
            uint16_t *hc = h ? h + ir * ldh + jr : NULL;
            if (m == kr && n == nr) {
                hg_kern(d, kr, kc, kp, a, ars, aps, b, c, ldf, acc, hc, ldh);
                continue;
            }
            hg_kern(d, kr, kc, kp, a, ars, aps, b, tmp, nr, 0, NULL, 0);
            for (int i = 0; i < m; i++) {
                const float *t = tmp + i * nr;
                if (hc) {
                    const float *cr = acc ? c + i * ldf : NULL;
                    for (int j = 0; j < n; j++)
                        hc[i * ldh + j] = gad__f32_to_bf16(cr ? cr[j] + t[j] : t[j]);
                } else if (acc) {
                    for (int j = 0; j < n; j++) c[i * ldf + j] = c[i * ldf + j] + t[j];
                } else {
                    memcpy(c + i * ldf, t, (size_t)n * sizeof(float));
                }
            }
        }
    }
}

/* 1 when rows of ld bf16 lie a multiple of 2 KiB apart: twelve of them fall
 * in one or two sets of a 32 KiB, 8-way L1 (one every 4 KiB), more than its
 * ways, so a tile's rows evict each other as the kernel reads or writes them
 * (read in place at N = 2048, such rows ran 8% slower than packed). */
static int hg_set_bound(int64_t ld) { return (ld * 2) % 2048 == 0; }

/* Whether the AVX-512 BF16 kernel rounds a bf16 C itself as it stores the
 * tiles: when K is one block (no f32 sums to keep between blocks; with
 * more, the tiles of the last block would read them back from the buffer
 * row by row, which lost 1% to a pass over it at 1536 and 2048 in blocks of
 * 768). The buffer is then not needed. */
static int hg_fuse(const hg_desc *d, int cdt, int64_t K) {
    return d->path == HG_AVX512 && cdt == GAD_BF16 && K <= d->kc;
}

/* Loops 5 to 3 over rows [i0, i1) x columns [j0, j1) of C: A panels of mcb
 * rows at pa, B blocks of ncb columns at pb, and (half result) an f32
 * buffer of mcb x (j1 - j0) at cbuf. On the AVX-512 BF16 path op(A) stored
 * by rows with K even is read in place (no packing: a pair is one word of
 * a row) and a bf16 result is rounded by the kernel as it stores the last
 * block of K, not in a pass over the buffer. */
static void hg_region(const hg_args *g, int64_t i0, int64_t i1, int64_t j0, int64_t j1,
                      int64_t mcb, int64_t ncb, uint32_t *pa, uint32_t *pb, float *cbuf) {
    const hg_desc *d = g->d;
    const int64_t cols = j1 - j0;
    /* op(A) read in place: rows, K even (so that no block ends inside a
     * pair), rows not in one L1 set, and a block that stays in twice L2 */
    const int inplace = d->path == HG_AVX512 && !g->ta && g->K % 2 == 0 && !hg_set_bound(g->lda);
    const int64_t l2 = gad__gemm_l2_bytes();
    const int fuse = hg_fuse(d, g->cdt, g->K);
    for (int64_t ic = i0; ic < i1; ic += mcb) {
        int64_t mc = hg_min(mcb, i1 - ic);
        float *cf = NULL; /* fused: no f32 sums */
        int64_t ldf = cols;
        if (g->cdt == GAD_F32) {
            cf = (float *)g->C + ic * g->ldc + j0;
            ldf = g->ldc;
        } else if (!fuse) {
            cf = cbuf;
        }
        for (int64_t pc = 0; pc < g->K; pc += g->kc) {
            int64_t kc = hg_min(g->kc, g->K - pc), kp = hg_kp(d, kc);
            const uint16_t *a = g->ta ? g->A + pc * g->lda + ic : g->A + ic * g->lda + pc;
            const uint16_t *ua = NULL;
            uint16_t *h = NULL;
            if (fuse && pc + kc >= g->K) h = (uint16_t *)g->C + ic * g->ldc;
            switch (d->path) {
#ifdef GEMM_X86
            case HG_AVX512:
                if (inplace && mc * kc * 2 <= 2 * l2) {
                    int64_t full = mc / 12 * 12;
                    ua = a;
                    if (full < mc)
                        gad__hgemm_pack_a12(mc - full, kc, kp, a + full * g->lda, g->lda, 0, pa);
                } else {
                    gad__hgemm_pack_a12(mc, kc, kp, a, g->lda, g->ta, pa);
                }
                break;
            case HG_AMX: gad__hgemm_pack_a32(mc, kc, kp, a, g->lda, g->ta, pa); break;
#endif
            default: pack_a_f32(d, g->dt, mc, kc, a, g->lda, g->ta, (float *)pa);
            }
            for (int64_t jc = j0; jc < j1; jc += ncb) {
                int64_t nc = hg_min(ncb, j1 - jc);
                const uint16_t *b = g->tb ? g->B + jc * g->ldb + pc : g->B + pc * g->ldb + jc;
                if (d->path == HG_F32)
                    pack_b_f32(d, g->dt, kc, nc, b, g->ldb, g->tb, (float *)pb);
#ifdef GEMM_X86
                else
                    gad__hgemm_pack_b32(kc, kp, nc, b, g->ldb, g->tb, pb, d->vec);
#endif
                hg_macro(d, mc, nc, kc, kp, ua, g->lda, pa, pb, cf ? cf + (jc - j0) : NULL, ldf,
                         pc > 0, h ? h + jc : NULL, g->ldc);
            }
        }
        if (g->cdt != GAD_F32 && !fuse)
            for (int64_t i = 0; i < mc; i++)
                cvt_out(d, g->cdt, cf + i * ldf, cols,
                        (uint16_t *)g->C + (ic + i) * g->ldc + j0);
    }
}

/* The scratch of one thread: an A panel, a B block and the f32 buffer. */
typedef struct hg_plan {
    int tm, tn, nt;
    int64_t mcb, ncb, rows, cols;
    size_t asz, bsz, csz, per;
} hg_plan;

static void hg_make_plan(const hg_desc *d, int cdt, int nt, int64_t M, int64_t N, int64_t K,
                         int64_t kc, hg_plan *p) {
    const int mr = d->mr, nr = d->nr;
    int64_t mt = hg_cdiv(M, mr), ntl = hg_cdiv(N, nr);
    int tm = 1, tn = 1;
    if (nt > 1) gad__gemm_plan(nt, M, N, K, mr, nr, &tm, &tn);
    if (tm > mt) tm = (int)mt;
    if (tn > ntl) tn = (int)ntl;
    p->tm = tm;
    p->tn = tn;
    p->nt = tm * tn;
    p->rows = hg_cdiv(mt, tm) * mr; /* a region's rows and columns, at most */
    p->cols = hg_cdiv(ntl, tn) * nr;
    p->mcb = hg_min(d->mcb, p->rows);
    p->ncb = hg_min(d->ncb, p->cols);
    const int buf = cdt != GAD_F32 && !hg_fuse(d, cdt, K);
    if (buf) {
        /* keep the f32 buffer near 8 MiB: fewer rows per A panel */
        int64_t lim = ((int64_t)1 << 21) / p->cols / mr * mr;
        if (lim < mr) lim = mr;
        if (p->mcb > lim) p->mcb = lim;
    }
    int64_t depth = d->path == HG_F32 ? kc : hg_kp(d, kc);
    p->asz = hg_round64((size_t)(p->mcb * depth) * 4);
    p->bsz = hg_round64((size_t)(p->ncb * depth) * 4);
    p->csz = buf ? hg_round64((size_t)(p->mcb * p->cols) * 4) : 0;
    p->per = p->asz + p->bsz + p->csz;
}

typedef struct hg_job {
    const hg_args *g;
    const hg_plan *p;
    char *buf;
} hg_job;

static void hg_task(void *arg, int64_t lo, int64_t hi) {
    const hg_job *j = arg;
    const hg_args *g = j->g;
    const hg_plan *p = j->p;
    const int mr = g->d->mr, nr = g->d->nr;
    int64_t mt = hg_cdiv(g->M, mr), ntl = hg_cdiv(g->N, nr);
    unsigned csr = hg_ftz_begin();
#ifdef GEMM_X86
    if (g->d->path == HG_AMX) gad__hgemm_amx_begin();
#endif
    for (int64_t r = lo; r < hi; r++) {
        int64_t rm = r / p->tn, rn = r % p->tn;
        int64_t i0 = hg_min(g->M, mt * rm / p->tm * mr);
        int64_t i1 = hg_min(g->M, mt * (rm + 1) / p->tm * mr);
        int64_t j0 = hg_min(g->N, ntl * rn / p->tn * nr);
        int64_t j1 = hg_min(g->N, ntl * (rn + 1) / p->tn * nr);
        char *mine = j->buf + p->per * (size_t)r;
        if (i0 < i1 && j0 < j1)
            hg_region(g, i0, i1, j0, j1, p->mcb, p->ncb, (uint32_t *)mine,
                      (uint32_t *)(mine + p->asz), (float *)(mine + p->asz + p->bsz));
    }
#ifdef GEMM_X86
    if (g->d->path == HG_AMX) gad__hgemm_amx_end();
#endif
    hg_ftz_end(csr);
}

/* C = 0 (K = 0). */
static void hg_zero(int64_t M, int64_t N, int cdt, void *C, int64_t ldc) {
    size_t es = cdt == GAD_F32 ? 4 : 2;
    for (int64_t i = 0; i < M; i++) memset((char *)C + (size_t)(i * ldc) * es, 0, (size_t)N * es);
}

/* ======================================================================== */
/* Small problems: gemm.c's small-problem kernels on converted copies        */
/* ======================================================================== */
/* Where gemm.c would run an f32 product of this shape unpacked (op(B) small
 * enough to stay in L2, or a thin M or N), the half operands are converted
 * whole to f32 (in their own layout: no transposing) and its small-problem
 * kernels read them: packing A into micro-panels would cost more than the
 * product. op(B) is packed into NR-column panels where gemm.c's small-problem
 * path packs it (gad__gemm_sup_panels: transposed, or read by many rows).
 * Each element of C is one chain of K multiply-adds: the same bits for any
 * split between threads. */

typedef struct hg_sup {
    const gemm_sdesc *sd;
    int64_t M, N, K;
    const float *a, *b; /* converted op(A) (row stride rsa, column csa), op(B) */
    int64_t rsa, csa, rsb, pstride;
    int panels; /* op(B) in NR-column panels pstride apart, else rows rsb apart */
    float *c;
    int64_t ldc;
    int split_rows, parts;
} hg_sup;

/* Part t of parts (rows, or columns in units of NR). */
static void hg_sup_part(const hg_sup *s, int t) {
    const int mr = s->sd->mr, nr = s->sd->nr, lanes = nr / 2;
    const unsigned full = lanes == 16 ? 0xFFFFu : 0xFFu;
    int64_t i0 = 0, i1 = s->M, j0 = 0, j1 = s->N;
    if (s->split_rows) {
        i0 = s->M * t / s->parts;
        i1 = s->M * (t + 1) / s->parts;
    } else {
        gad__gemm_part_cols(s->N, nr, t, s->parts, &j0, &j1);
    }
    for (int64_t i = i0; i < i1; i += mr) {
        int m = (int)hg_min(mr, i1 - i);
        const float *a = s->a + i * s->rsa;
        for (int64_t j = j0; j < j1; j += nr) {
            int n = (int)hg_min(nr, j1 - j);
            const float *b = s->panels ? s->b + j / nr * s->pstride : s->b + j;
            unsigned m0 = n >= lanes ? full : (1u << n) - 1;
            unsigned m1 = n > lanes ? (n >= nr ? full : (1u << (n - lanes)) - 1) : 0;
            int v = n > lanes ? (n == nr ? 2 : 1) : 0;
            s->sd->sup[v][m - 1](s->K, a, s->rsa, s->csa, b, s->rsb, s->c + i * s->ldc + j,
                                 s->ldc, 1.0f, 0.0f, m0, m1);
        }
    }
}

static void hg_sup_task(void *arg, int64_t lo, int64_t hi) {
    unsigned csr = hg_ftz_begin();
    for (int64_t r = lo; r < hi; r++) hg_sup_part(arg, (int)r);
    hg_ftz_end(csr);
}

/* Bytes of the converted copies of op(A) and op(B), and of the f32 result
 * of a half one. */
static size_t hg_sup_asz(int64_t M, int64_t K) { return hg_round64((size_t)(M * K) * 4); }
static size_t hg_sup_bsz(const gemm_sdesc *sd, int panels, int64_t N, int64_t K) {
    return hg_round64((size_t)(panels ? hg_cdiv(N, sd->nr) * sd->nr * K : K * N) * 4);
}
static size_t hg_sup_bytes(const gemm_sdesc *sd, int panels, int cdt, int64_t M, int64_t N,
                           int64_t K) {
    size_t c = cdt != GAD_F32 ? hg_round64((size_t)(M * N) * 4) : 0;
    return hg_sup_asz(M, K) + hg_sup_bsz(sd, panels, N, K) + c;
}

static int hg_use_sup(const hg_desc *d, int ta, int tb, int64_t M, int64_t N, int64_t K) {
    return d->path == HG_F32 && d->vec && d->sd->sup && gad__gemm_use_sup(ta, M, N, K, N, tb);
}

/* The conversions around a small problem: op(A) and op(B) into f32 copies
 * (op(B) into NR-column panels where panels is set) before it (cvt_in), the
 * f32 result into C after it (cvt_out). Part t of parts takes its share of
 * rows (of A as stored, of B, of C) and, for op(B) in panels, of whole
 * panels. */
typedef struct {
    const hg_desc *d;
    int dt, cdt, tb, panels;
    int64_t ar, ac, M, N, K, lda, ldb, ldc, pstride;
    const uint16_t *A, *B;
    float *a, *b, *cf;
    void *C;
    int parts;
} hg_cvt;

static void hg_cvt_in_task(void *arg, int64_t lo, int64_t hi) {
    const hg_cvt *v = arg;
    for (int64_t t = lo, p = v->parts; t < hi; t++) {
        for (int64_t r = v->ar * t / p; r < v->ar * (t + 1) / p; r++)
            cvt_in(v->d, v->dt, v->A + r * v->lda, v->ac, v->a + r * v->ac);
        if (v->panels) {
            int64_t j0, j1;
            gad__gemm_part_cols(v->N, v->d->nr, t, p, &j0, &j1);
            if (j1 > j0)
                pack_b_f32(v->d, v->dt, v->K, j1 - j0, v->tb ? v->B + j0 * v->ldb : v->B + j0,
                           v->ldb, v->tb, v->b + j0 / v->d->nr * v->pstride);
        } else {
            for (int64_t k = v->K * t / p; k < v->K * (t + 1) / p; k++)
                cvt_in(v->d, v->dt, v->B + k * v->ldb, v->N, v->b + k * v->N);
        }
    }
}

static void hg_cvt_out_task(void *arg, int64_t lo, int64_t hi) {
    const hg_cvt *v = arg;
    for (int64_t t = lo, p = v->parts; t < hi; t++)
        for (int64_t i = v->M * t / p; i < v->M * (t + 1) / p; i++)
            cvt_out(v->d, v->cdt, v->cf + i * v->N, v->N, (uint16_t *)v->C + i * v->ldc);
}

/* Run task over v on nt threads where there are enough elements to pay
 * for a region (HG_CVT_PAR), else on the caller. */
#define HG_CVT_PAR 65536
static void hg_cvt_run(hg_cvt *v, void (*task)(void *, int64_t, int64_t), int nt,
                       int64_t elems) {
    v->parts = nt > 1 && elems >= HG_CVT_PAR ? nt : 1;
    if (v->parts == 1)
        task(v, 0, 1);
    else
        gad__parallel_for(v->parts, 1, task, v);
}

static int hg_sup_run(const hg_desc *d, int dt, int ta, int tb, int64_t M, int64_t N,
                      int64_t K, const uint16_t *A, int64_t lda, const uint16_t *B,
                      int64_t ldb, int cdt, void *C, int64_t ldc) {
    const gemm_sdesc *sd = d->sd;
    int panels = gad__gemm_sup_panels(tb, M, N, K);
    char *buf = gad__gemm_scratch(hg_sup_bytes(sd, panels, cdt, M, N, K));
    if (!buf) return -1;
    float *a = (float *)buf;
    float *b = (float *)(buf + hg_sup_asz(M, K));
    hg_sup s = {sd, M, N, K, a, b, ta ? 1 : K, ta ? M : 1, N, 0, panels, NULL, ldc, 1, 1};
    if (panels) {
        s.rsb = sd->nr;
        s.pstride = K * sd->nr;
    }
    float *cf = cdt == GAD_F32 ? (float *)C : (float *)((char *)b + hg_sup_bsz(sd, panels, N, K));
    s.c = cf;
    s.ldc = cdt == GAD_F32 ? ldc : N;
    /* threads: rows, or columns in units of NR, whichever balances better
     * (gemm.c's rule) */
    const int mr = sd->mr, nr = sd->nr;
    int nt = gad__gemm_threads(M, N, K);
    int64_t ntl = hg_cdiv(N, nr);
    if (nt > 1) {
        double rows = (double)hg_cdiv(hg_cdiv(M, nt), mr) * (double)ntl;
        double cols = (double)hg_cdiv(M, mr) * (double)hg_cdiv(ntl, nt);
        s.split_rows = rows <= cols;
        if (!s.split_rows && ntl < nt) nt = (int)ntl;
        if (s.split_rows && M < nt) nt = (int)M;
    }
    /* op(A) as stored: ta ? K rows of M : M rows of K, packed. The
     * conversions run on the product's threads: against the caller alone,
     * 1.13x the speed at 128 x 512 x 512 in bf16 on two threads, 1.56x with
     * op(B) transposed, 1.50x at 32 x 512 x 784 (the Intel Xeon of
     * bench/RESULTS.md, 10 alternated runs). */
    hg_cvt v = {d, dt, cdt, tb, panels, ta ? K : M, ta ? M : K, M, N, K, lda, ldb, ldc,
                s.pstride, A, B, a, b, cf, C, 1};
    hg_cvt_run(&v, hg_cvt_in_task, nt, M * K + K * N);
    s.parts = nt > 1 ? nt : 1;
    if (s.parts == 1)
        hg_sup_task(&s, 0, 1);
    else
        gad__parallel_for(s.parts, 1, hg_sup_task, &s);
    if (cdt != GAD_F32) hg_cvt_run(&v, hg_cvt_out_task, nt, M * N);
    return 0;
}

int gad__hgemm(int dt, int ta, int tb, int64_t M, int64_t N, int64_t K, const uint16_t *A,
               int64_t lda, const uint16_t *B, int64_t ldb, int cdt, void *C, int64_t ldc) {
    if (M <= 0 || N <= 0) return 0;
    if (K <= 0) {
        hg_zero(M, N, cdt, C, ldc);
        return 0;
    }
    hg_desc d;
    hg_desc_get(dt, &d);
    if (hg_use_sup(&d, ta, tb, M, N, K)) {
        int rc = hg_sup_run(&d, dt, ta, tb, M, N, K, A, lda, B, ldb, cdt, C, ldc);
        if (GAD_UNLIKELY(gad__pool_worker())) gad__gemm_release_scratch();
        return rc;
    }
    hg_args g = {&d, dt, cdt, ta, tb, M, N, K, gad__gemm_kc(K, d.kc), A, lda, B, ldb, C, ldc};
    hg_plan p;
    hg_make_plan(&d, cdt, gad__gemm_threads(M, N, K), M, N, K, g.kc, &p);
    char *buf = gad__gemm_scratch(p.per * (size_t)p.nt);
    int rc = 0;
    if (!buf) {
        rc = -1;
    } else {
        hg_job job = {&g, &p, buf};
        if (p.nt == 1)
            hg_task(&job, 0, 1);
        else
            gad__parallel_for(p.nt, 1, hg_task, &job);
    }
    if (GAD_UNLIKELY(gad__pool_worker())) gad__gemm_release_scratch();
    return rc;
}

size_t gad__hgemm_scratch_bytes(int dt, int cdt, int ta, int tb, int64_t M, int64_t N,
                                int64_t K) {
    if (M <= 0 || N <= 0 || K <= 0) return 0;
    hg_desc d;
    hg_desc_get(dt, &d);
    if (hg_use_sup(&d, ta, tb, M, N, K))
        return hg_sup_bytes(d.sd, gad__gemm_sup_panels(tb, M, N, K), cdt, M, N, K);
    hg_plan p; /* the block depth's bound over K' <= K, as gemm.c's */
    hg_make_plan(&d, cdt, 1, M, N, K, gad__gemm_kc_bound(K, d.kc), &p);
    size_t per = p.per;
    if (K > d.kc && hg_fuse(&d, cdt, d.kc)) {
        /* a K' in one block has no f32 buffer, and so no bound on the rows
         * of its A panel: it may take more */
        hg_make_plan(&d, cdt, 1, M, N, d.kc, d.kc, &p);
        if (p.per > per) per = p.per;
    }
    return per;
}

/* ======================================================================== */
/* f32 products in bf16 (GAD_MATMUL_MEDIUM)                                  */
/* ======================================================================== */

int gad_matmul_medium_native(void) { return gad__hgemm_path(GAD_BF16) != HG_F32; }

int gad__sgemm_medium(void) {
    return gad_matmul_precision_get() == GAD_MATMUL_MEDIUM && gad_matmul_medium_native();
}

/* C = alpha op(A) op(B) + beta C (beta 0: C not read; M, N, K > 0) with A
 * and B rounded to bf16, their products summed in f32 (gad__hgemm); copies of the two
 * operands in their own layout, and of the product when alpha or beta ask
 * for one, from the buffer cache. */
int gad__sgemm_bf16(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
                    const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                    float *C, int64_t ldc) {
    int64_t ra = ta ? K : M, ca = ta ? M : K, rb = tb ? N : K, cb = tb ? K : N;
    int direct = alpha == 1.0f && beta == 0.0f;
    size_t asz = hg_round64((size_t)(ra * ca) * 2), bsz = hg_round64((size_t)(rb * cb) * 2);
    size_t csz = direct ? 0 : (size_t)(M * N) * 4;
    gad_storage *st = gad__storage_new(asz + bsz + csz);
    if (!st) return -1;
    char *base = gad__storage_data(st);
    uint16_t *a16 = (uint16_t *)base, *b16 = (uint16_t *)(base + asz);
    float *t = direct ? C : (float *)(base + asz + bsz);
    int64_t ldt = direct ? ldc : N;
    gad__half_narrow_rows(GAD_BF16, ra, ca, A, lda, a16);
    gad__half_narrow_rows(GAD_BF16, rb, cb, B, ldb, b16);
    int rc = gad__hgemm(GAD_BF16, ta, tb, M, N, K, a16, ca, b16, cb, GAD_F32, t, ldt);
    if (rc == 0 && !direct)
        for (int64_t i = 0; i < M; i++) {
            float *c = C + i * ldc;
            const float *p = t + i * N;
            if (beta == 0.0f)
                for (int64_t j = 0; j < N; j++) c[j] = alpha * p[j];
            else
                for (int64_t j = 0; j < N; j++) c[j] = alpha * p[j] + beta * c[j];
        }
    gad__storage_release(st);
    return rc;
}
