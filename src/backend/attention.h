/* attention.h: the attention family of the seam (backend.h): scaled
 * dot-product attention's forward and backward, blocked over keys with an
 * online softmax (FlashAttention-2: Dao, "FlashAttention-2: Faster
 * Attention with Better Parallelism and Work Partitioning", 2023), its
 * dropout mask drawn from Philox4x32-10 (Salmon et al., "Parallel random
 * numbers: as easy as 1, 2, 3", SC 2011), and the rotary position
 * embedding. The CPU's: src/cpu/attention.c. */
#ifndef GAD_BE_ATTENTION_H
#define GAD_BE_ATTENTION_H

#include "backend/backend.h"

/* One attention call's geometry. q is [B*Hq, Tq, d], k [B*Hk, Tk, d], v
 * [B*Hk, Tk, dv] (packed; q head h reads k/v head h / (Hq / Hk) of its
 * batch), the output [B*Hq, Tq, dv], lse [B*Hq*Tq] (q's dtype). */
typedef struct gad_attn_geom {
    int64_t B, Hq, Hk, Tq, Tk, d, dv;
    double scale;     /* on q k^T */
    int causal;       /* key j attends query i only when j <= i */
    int mask_bool;    /* the mask (when given) is bool: 0 = masked out */
    double dropout_p; /* 0: no dropout */
    uint64_t seed;    /* Philox key when dropout_p > 0 */
} gad_attn_geom;

typedef struct gad_be_attention {
    /* out and lse (the row's log-sum-exp of the scaled, masked scores;
     * -inf for a row with every key masked, whose output is 0). mask: NULL,
     * or a view of q's rank broadcast to [.., Hq, Tq, Tk] (any strides),
     * of q's dtype (added) or bool. -1: scratch memory (recorded under op). */
    int (*fwd)(const char *op, const gad_attn_geom *g, const gad_tensor *q, const gad_tensor *k,
               const gad_tensor *v, const gad_tensor *mask, gad_tensor *out, gad_tensor *lse);
    /* dq, dk, dv (the inputs' shapes, written whole) from gout, recomputing
     * the probabilities from lse. */
    int (*bwd)(const char *op, const gad_attn_geom *g, const gad_tensor *q, const gad_tensor *k,
               const gad_tensor *v, const gad_tensor *mask, const gad_tensor *out,
               const gad_tensor *lse, const gad_tensor *gout, gad_tensor *dq, gad_tensor *dk,
               gad_tensor *dv);
    /* m [B*Hq, Tq, Tk] (q's dtype): the dropout's factor, 0 or 1/(1 - p),
     * as fwd and bwd draw it. */
    void (*dropout_mask)(const gad_attn_geom *g, gad_tensor *m);
    /* y (x's shape, [.., d], d even) = x rotated pairwise by angle
     * pos * base^(-2i/d) for pair i (its negative when inverse): pairs
     * (2i, 2i+1) when interleaved, else (i, i + d/2). pos: i64, packed, its
     * values; posb: a view of it broadcast to x's shape without its last
     * axis, giving each row's position. -1: scratch memory (recorded). */
    int (*rope)(const char *op, const gad_tensor *x, const gad_tensor *pos, const gad_tensor *posb, double base,
                 int interleaved, int inverse, gad_tensor *y);
    int half; /* the entries take f16/bf16 too (backend.h) */
} gad_be_attention;

#endif
