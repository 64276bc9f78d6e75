/* gemm_amx.c: the bf16 GEMM's micro-kernel for AMX-BF16 (the driver is
 * gemm_half.c, the packed layouts gemm_half_int.h).
 *
 * Intel SDM vol. 1 ch. 18 ("Programming with Intel AMX") and vol. 2
 * (TILELOADD, TDPBF16PS, LDTILECFG): eight tile registers of up to 16 rows
 * of 64 bytes, shaped by a 64-byte configuration loaded per thread.
 * TDPBF16PS adds to a 16 x 16 f32 tile the product of a 16 x 32 bf16 tile
 * (rows of A) and a 16 x 16 tile of bf16 pairs (pairs of K of B), with the
 * same numerics as VDPBF16PS: exact products, sums rounded to nearest even,
 * input subnormals as zero, subnormal results flushed.
 *
 * Linux gives a process the tile data state (8 KiB of register file) only
 * after arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) (kernel 5.16,
 * Documentation/arch/x86/xstate.rst); until then a tile instruction raises
 * SIGILL. gad__hgemm_amx_usable checks CPUID and XCR0 and asks once per
 * process; elsewhere AMX is not used.
 *
 * The tile: 32 x 32 of C as 2 x 2 accumulator tiles (tmm0-3), two A tiles
 * (tmm4-5) and two B tiles (tmm6-7) per 16 pairs of K. The accumulators start
 * at zero and are added to C at the end, as the AVX-512 kernel does, so a
 * full tile and an edge tile (computed into a buffer) round alike. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* syscall */
#endif
#include "cpu/gemm_half_int.h"

#include <stdatomic.h>
#include <string.h>

#ifdef GEMM_X86
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#define AMX_ARCH_REQ_XCOMP_PERM 0x1023
#define AMX_XFEATURE_XTILEDATA 18

/* 0: not checked, 1: usable, 2: not usable. */
static atomic_int amx_state;

static unsigned long long amx_xcr0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (unsigned long long)hi << 32 | lo;
}

static int amx_check(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0; /* OSXSAVE */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    if (!(d & (1u << 24)) || !(d & (1u << 22))) return 0; /* AMX-TILE, AMX-BF16 */
    /* the OS manages the tile state (XCR0 bits 17, 18) and AVX-512 (5-7) */
    unsigned long long x = amx_xcr0();
    if ((x & 0x60000ull) != 0x60000ull || (x & 0xe0ull) != 0xe0ull) return 0;
#if defined(__linux__) && defined(SYS_arch_prctl)
    if (syscall(SYS_arch_prctl, AMX_ARCH_REQ_XCOMP_PERM, AMX_XFEATURE_XTILEDATA) != 0) return 0;
    return 1;
#else
    return 0;
#endif
}

int gad__hgemm_amx_usable(void) {
    int s = atomic_load_explicit(&amx_state, memory_order_acquire);
    if (s == 0) {
        s = amx_check() ? 1 : 2;
        atomic_store_explicit(&amx_state, s, memory_order_release);
    }
    return s == 1;
}

/* The LDTILECFG operand: palette 1, every tile 16 rows of 64 bytes. */
typedef struct amx_cfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_cfg;

__attribute__((target("amx-tile"))) void gad__hgemm_amx_begin(void) {
    _Alignas(64) amx_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) {
        cfg.colsb[t] = 64;
        cfg.rows[t] = 16;
    }
    _tile_loadconfig(&cfg);
}

__attribute__((target("amx-tile"))) void gad__hgemm_amx_end(void) { _tile_release(); }

__attribute__((target("amx-tile,amx-bf16,avx512f"))) void
gad__hgemm_kern_amx(int64_t kp, const uint32_t *a, const uint32_t *b, float *c, int64_t ldc,
                    int accumulate) {
    _Alignas(64) float t[32 * 32];
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t q = 0; q < kp; q += 16) {
        /* A: 32 rows of 16 words; B: 16 pair rows of 32 words (128 bytes) */
        _tile_loadd(4, a, 64);
        _tile_loadd(5, a + 16 * 16, 64);
        _tile_loadd(6, b, 128);
        _tile_loadd(7, b + 16, 128);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
        a += 32 * 16;
        b += 16 * 32;
    }
    _tile_stored(0, t, 128);
    _tile_stored(1, t + 16, 128);
    _tile_stored(2, t + 16 * 32, 128);
    _tile_stored(3, t + 16 * 32 + 16, 128);
    for (int i = 0; i < 32; i++) {
        float *cr = c + i * ldc;
        __m512 v0 = _mm512_load_ps(t + i * 32), v1 = _mm512_load_ps(t + i * 32 + 16);
        if (accumulate) {
            v0 = _mm512_add_ps(_mm512_loadu_ps(cr), v0);
            v1 = _mm512_add_ps(_mm512_loadu_ps(cr + 16), v1);
        }
        _mm512_storeu_ps(cr, v0);
        _mm512_storeu_ps(cr + 16, v1);
    }
}

#endif /* GEMM_X86 */
