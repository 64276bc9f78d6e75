/* attention.c: the CPU's attention family (backend/attention.h): scaled
 * dot-product attention's forward and backward and the rotary embedding,
 * stamped for f32 and f64 from attention_tmpl.h, the Philox generator of
 * the dropout mask, and the family's sub-table, which the CPU's table
 * points to. */
#include "backend/attention.h"
#include "cpu/cpu.h"
#include "cpu/fused.h"
#include "cpu/gemm.h"
#include "cpu/vmath.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

/* Query rows and keys per block: a [BR, BCF] block of scores (forward)
 * or [BRB, BC] (backward) and the panels of q and k stay in the L2 cache
 * for d <= 128. The backward's 128 x 64 took the least CPU time of 96..256
 * x 48..128 on B=8 H=8 T=2048 d=64 causal; the forward's 32 x 128 took 6%
 * less than 128 x 64 there (8% at T=512): its per-row work (max, rescale,
 * sum) comes once per 128 keys, and a causal query block wastes at most
 * a 32 x 32 triangle. BCF is a multiple of 16 (attention_tmpl.h's LANES). */
#ifndef BR
#define BR 32
#endif
#ifndef BC
#define BC 64
#endif
#ifndef BRB
#define BRB 128
#endif
#ifndef BCF
#define BCF 128
#endif

/* Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers:
 * as easy as 1, 2, 3", SC 2011): ten rounds of two 32x32->64 products on
 * a 128-bit counter under a 64-bit key. Counter-based, so the backward
 * draws the forward's dropout mask again instead of keeping it. */
static inline void philox4x32_10(uint32_t ctr[4], uint64_t key) {
    uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * ctr[0], p1 = (uint64_t)0xCD9E8D57u * ctr[2];
        uint32_t c0 = (uint32_t)(p1 >> 32) ^ ctr[1] ^ k0, c2 = (uint32_t)(p0 >> 32) ^ ctr[3] ^ k1;
        ctr[0] = c0;
        ctr[1] = (uint32_t)p1;
        ctr[2] = c2;
        ctr[3] = (uint32_t)p0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
}

/* The four draws for elements (row i, keys j..j+3) of head bh, j a
 * multiple of 4: counter (j / 4, i, bh low, bh high). */
static inline void gad__philox_at(uint64_t seed, int64_t bh, int64_t i, int64_t j,
                                  uint32_t u[4]) {
    uint32_t c[4] = {(uint32_t)(j >> 2), (uint32_t)i, (uint32_t)bh, (uint32_t)((uint64_t)bh >> 32)};
    philox4x32_10(c, seed);
    memcpy(u, c, sizeof c);
}

/* An element is dropped when its draw is below p 2^32. */
static inline uint32_t gad__attn_drop_threshold(double p) {
    double t = ceil(p * 4294967296.0);
    return t >= 4294967295.0 ? 4294967295u : (uint32_t)t;
}

/* The element offset of head bh's [Tq, Tk] mask in m (q's rank, broadcast
 * to [.., Hq, Tq, Tk]). */
static int64_t gad__attn_mask_base(const gad_tensor *m, int64_t bh) {
    int64_t off = 0;
    for (int a = m->rank - 3; a >= 0; a--) {
        off += (bh % m->shape[a]) * m->strides[a];
        bh /= m->shape[a];
    }
    return off;
}

#define GAD_STAMP "attention_tmpl.h"
#include "cpu/stamp.h"

#define F32(t) ((t)->dtype == GAD_F32)
#define P(t) gad__ptr(t)

static int scratch_failed(const char *op) {
    gad__err(GAD_ERR_MEMORY, op, "out of memory for its scratch blocks");
    return -1;
}

static int cpu_attn_fwd(const char *op, const gad_attn_geom *g, const gad_tensor *q,
                        const gad_tensor *k, const gad_tensor *v, const gad_tensor *mask,
                        gad_tensor *out, gad_tensor *lse) {
    int rc = F32(q) ? gad__attn_fwd_f32(g, P(q), P(k), P(v), mask, P(out), P(lse))
                    : gad__attn_fwd_f64(g, P(q), P(k), P(v), mask, P(out), P(lse));
    return rc ? scratch_failed(op) : 0;
}

static int cpu_attn_bwd(const char *op, const gad_attn_geom *g, const gad_tensor *q,
                        const gad_tensor *k, const gad_tensor *v, const gad_tensor *mask,
                        const gad_tensor *out, const gad_tensor *lse, const gad_tensor *gout,
                        gad_tensor *dq, gad_tensor *dk, gad_tensor *dv) {
    int rc = F32(q) ? gad__attn_bwd_f32(g, P(q), P(k), P(v), mask, P(out), P(lse), P(gout),
                                        P(dq), P(dk), P(dv))
                    : gad__attn_bwd_f64(g, P(q), P(k), P(v), mask, P(out), P(lse), P(gout),
                                        P(dq), P(dk), P(dv));
    return rc ? scratch_failed(op) : 0;
}

static void cpu_attn_dropout_mask(const gad_attn_geom *g, gad_tensor *m) {
    double keep = 1.0 / (1.0 - g->dropout_p);
    uint32_t thr = gad__attn_drop_threshold(g->dropout_p);
    int64_t rows = g->B * g->Hq * g->Tq, Tk = g->Tk;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < Tk; j += 4) {
            uint32_t u[4];
            gad__philox_at(g->seed, r / g->Tq, r % g->Tq, j, u);
            for (int64_t e = 0; e < 4 && j + e < Tk; e++) {
                double f = u[e] >= thr ? keep : 0;
                if (F32(m)) ((float *)P(m))[r * Tk + j + e] = (float)f;
                else ((double *)P(m))[r * Tk + j + e] = f;
            }
        }
}

/* The cos and sin of every position's angles, in double, then the rows. */
static int cpu_rope(const char *op, const gad_tensor *x, const gad_tensor *pos, const gad_tensor *posb,
                     double base, int interleaved, int inverse, gad_tensor *y) {
    int64_t d = x->shape[x->rank - 1], half = d / 2, np = pos->numel;
    int64_t rows = d ? x->numel / d : 0;
    if (!rows || !half) {
        if (x->numel) memcpy(P(y), P(x), (size_t)x->numel * gad__dsize(x->dtype));
        return 0;
    }
    size_t bytes = (size_t)(np * 2 * half) * gad__dsize(x->dtype);
    void *cs = gad__alloc(bytes);
    if (!cs) return scratch_failed(op);
    const int64_t *pv = P(pos);
    for (int64_t p = 0; p < np; p++)
        for (int64_t i = 0; i < half; i++) {
            double th = (double)pv[p] * pow(base, -2.0 * (double)i / (double)d);
            double c = cos(th), s = inverse ? -sin(th) : sin(th);
            if (F32(x)) {
                ((float *)cs)[(p * half + i) * 2] = (float)c;
                ((float *)cs)[(p * half + i) * 2 + 1] = (float)s;
            } else {
                ((double *)cs)[(p * half + i) * 2] = c;
                ((double *)cs)[(p * half + i) * 2 + 1] = s;
            }
        }
    int64_t pstr[GAD_MAX_RANK];
    for (int a = 0; a < x->rank - 1; a++) pstr[a] = posb->strides[a];
    if (F32(x)) gad__rope_f32(P(x), P(y), cs, x->shape, pstr, x->rank - 1, rows, d, interleaved);
    else gad__rope_f64(P(x), P(y), cs, x->shape, pstr, x->rank - 1, rows, d, interleaved);
    gad__free(cs, bytes);
    return 0;
}

const gad_be_attention gad__cpu_attention = {.fwd = cpu_attn_fwd,
                                             .bwd = cpu_attn_bwd,
                                             .dropout_mask = cpu_attn_dropout_mask,
                                             .rope = cpu_rope};
