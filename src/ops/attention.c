/* attention.c: scaled dot-product attention (one tape node whose kernels,
 * backend/attention.h, never hold a [Tq, Tk] matrix per head), the rotary
 * position embedding, and the sinusoidal position table. Under
 * GAD_CREATE_GRAPH the attention's VJP goes through its composition of
 * ordinary tracked ops (sdpa_compose), so that its gradients are
 * differentiable again, as the fused ops of fused.c do. */
#include "ops_int.h"
#include "backend/attention.h"

#include <float.h>
#include <math.h>
#include <stdio.h>

static gad_tensor *packed(const char *op, gad_tensor *t) {
    return gad__own(gad__contig(op, t));
}

/* Whether t is a bool mask (True = attend). */
static int is_bool(const gad_tensor *t) { return t->dtype == GAD_BOOL; }

/* ============================================================ attention */

/* The checked arguments of one call: the geometry, the output's shape and
 * the mask's (broadcast) shape. */
typedef struct sdpa_args {
    gad_attn_geom g;
    int rank;
    int64_t out[GAD_MAX_RANK];  /* [.., Hq, Tq, dv] */
    int64_t full[GAD_MAX_RANK]; /* [.., Hq, Tq, Tk]: where the mask broadcasts */
} sdpa_args;

static int shape_err(const char *op, const char *what, gad_tensor *q, gad_tensor *k,
                     gad_tensor *v) {
    char b1[GAD_SHAPE_BUF], b2[GAD_SHAPE_BUF], b3[GAD_SHAPE_BUF];
    gad__err(GAD_ERR_SHAPE, op, "%s: q %s, k %s, v %s", what,
             gad__shape_str(b1, q->shape, q->rank), gad__shape_str(b2, k->shape, k->rank),
             gad__shape_str(b3, v->shape, v->rank));
    return -1;
}

static int sdpa_check(const char *op, gad_tensor *q, gad_tensor *k, gad_tensor *v,
                      gad_tensor *mask, int is_causal, double dropout_p, double scale,
                      int have_rng, sdpa_args *a) {
    if (gad__bad_tensor(q) || gad__bad_tensor(k) || gad__bad_tensor(v))
        return (gad__bad_of(op, 3, (const gad_tensor *const[]){q, k, v}), -1);
    if (mask && gad__bad_tensor(mask)) return (gad__bad_arg(op, mask), -1);
    if (gad__need_float(op, q) || gad__need_same_dtype(op, q, k) ||
        gad__need_same_dtype(op, q, v))
        return -1;
    gad_tensor *in[4] = {q, k, v, mask};
    for (int i = 1; i < (mask ? 4 : 3); i++)
        if (in[i]->dev != q->dev) return (gad__err_device(op, q->dev, in[i]->dev), -1);
    int r = q->rank;
    if (r < 2 || k->rank != r || v->rank != r)
        return shape_err(op, "q, k and v need the same rank, at least 2", q, k, v);
    for (int d = 0; d < r - 3; d++)
        if (k->shape[d] != q->shape[d] || v->shape[d] != q->shape[d])
            return shape_err(op, "batch dims differ", q, k, v);
    int64_t Hq = r >= 3 ? q->shape[r - 3] : 1, Hk = r >= 3 ? k->shape[r - 3] : 1;
    if (r >= 3 && v->shape[r - 3] != Hk) return shape_err(op, "k and v heads differ", q, k, v);
    if (Hk == 0 ? Hq != 0 : Hq % Hk != 0)
        return shape_err(op, "k's heads must divide q's", q, k, v);
    if (k->shape[r - 2] != v->shape[r - 2])
        return shape_err(op, "k and v lengths differ", q, k, v);
    if (k->shape[r - 1] != q->shape[r - 1])
        return shape_err(op, "q and k head dims differ", q, k, v);
    if (!(dropout_p >= 0 && dropout_p < 1))
        return (gad__err(GAD_ERR_DOMAIN, op, "dropout_p must be in [0, 1), got %g", dropout_p),
                -1);
    if (isnan(scale) || isinf(scale))
        return (gad__err(GAD_ERR_DOMAIN, op, "scale must be finite, got %g", scale), -1);
    if (dropout_p > 0 && !have_rng)
        return (gad__err(GAD_ERR_DOMAIN, op, "dropout_p %g needs an rng, got NULL", dropout_p),
                -1);
    int64_t B = 1;
    for (int d = 0; d < r - 3; d++) B *= q->shape[d];
    a->g = (gad_attn_geom){.B = B, .Hq = Hq, .Hk = Hk, .Tq = q->shape[r - 2],
                           .Tk = k->shape[r - 2], .d = q->shape[r - 1], .dv = v->shape[r - 1],
                           .causal = !!is_causal, .dropout_p = dropout_p};
    a->g.scale = scale > 0 ? scale : a->g.d > 0 ? 1 / sqrt((double)a->g.d) : 1;
    a->rank = r;
    memcpy(a->out, q->shape, (size_t)r * sizeof *a->out);
    memcpy(a->full, q->shape, (size_t)r * sizeof *a->full);
    a->out[r - 1] = a->g.dv;
    a->full[r - 1] = a->g.Tk;
    if (mask) {
        if (is_causal)
            return (gad__err(GAD_ERR_DOMAIN, op, "a mask and is_causal together (as PyTorch)"),
                    -1);
        if (!is_bool(mask) && mask->dtype != q->dtype) {
            gad__err(GAD_ERR_DTYPE, op, "mask must be bool or q's dtype %s, got %s",
                     gad_dtype_name(q->dtype), gad_dtype_name(mask->dtype));
            return -1;
        }
        int ok = mask->rank <= r;
        for (int d = 0; ok && d < mask->rank; d++) {
            int64_t m = mask->shape[mask->rank - 1 - d], f = a->full[r - 1 - d];
            ok = m == f || m == 1;
        }
        if (!ok) {
            char b1[GAD_SHAPE_BUF], b2[GAD_SHAPE_BUF];
            gad__err(GAD_ERR_SHAPE, op, "mask %s does not broadcast to the scores' %s",
                     gad__shape_str(b1, mask->shape, mask->rank),
                     gad__shape_str(b2, a->full, r));
            return -1;
        }
        a->g.mask_bool = is_bool(mask);
    }
    return 0;
}

/* q's dtype's additive form of a mask: itself, or log(mask) for a bool one
 * (0 where True, -inf where False); constant. */
static gad_tensor *additive(gad_tensor *mask, int dtype) {
    if (!is_bool(mask)) return mask;
    return gad_log(gad_cast(gad_stop_gradient(mask), (gad_dtype_t)dtype));
}

/* The composition that defines the op (f64 tests compare against it):
 * softmax(q k^T scale + mask) v with a fully masked row giving zeros, the
 * k/v heads repeated for grouped queries, the dropout factors (NULL: none)
 * applied to the probabilities. */
static gad_tensor *sdpa_compose(gad_tensor *q, gad_tensor *k, gad_tensor *v, gad_tensor *mask,
                                const gad_attn_geom *g, gad_tensor *drop) {
    int r = q->rank;
    int64_t G = g->Hk ? g->Hq / g->Hk : 1;
    if (G > 1) { /* [.., Hk, T, d] -> [.., Hk, G, T, d] -> [.., Hq, T, d] */
        gad_tensor *kv[2] = {k, v};
        for (int i = 0; i < 2; i++) {
            int64_t s5[GAD_MAX_RANK + 1], s4[GAD_MAX_RANK];
            gad_tensor *t = kv[i];
            memcpy(s5, t->shape, (size_t)(r - 2) * sizeof *s5);
            s5[r - 2] = 1;
            s5[r - 1] = t->shape[r - 2];
            s5[r] = t->shape[r - 1];
            t = gad_reshape(t, s5, r + 1);
            s5[r - 2] = G;
            t = gad_broadcast_to(t, s5, r + 1);
            memcpy(s4, kv[i]->shape, (size_t)r * sizeof *s4);
            s4[r - 3] = g->Hq;
            kv[i] = gad_reshape(gad_contiguous(t), s4, r);
        }
        k = kv[0];
        v = kv[1];
    }
    gad_tensor *s = gad_mul_scalar(gad_matmul(q, gad_transpose(k)), g->scale);
    if (g->Tk == 0) return gad_matmul(s, v); /* no keys: zeros */
    if (mask) s = gad_add(s, additive(mask, q->dtype));
    if (g->causal) {
        int64_t rows[2] = {g->Tq, 1}, cols[2] = {1, g->Tk};
        gad_tensor *i = gad_reshape(gad_arange(0, (double)g->Tq, 1, q->dtype), rows, 2);
        gad_tensor *j = gad_reshape(gad_arange(0, (double)g->Tk, 1, q->dtype), cols, 2);
        if (q->dev) {
            i = gad_to_device(i, q->dev);
            j = gad_to_device(j, q->dev);
        }
        /* log(clamp(i - j + 1, 0, 1)): 0 where j <= i, -inf above */
        s = gad_add(s, gad_log(gad_clamp(gad_add_scalar(gad_sub(i, j), 1), 0, 1)));
    }
    /* the row max, held constant and finite (-inf for a fully masked row
     * would make -inf - -inf) */
    gad_tensor *m = gad_stop_gradient(gad_clamp(gad_amax(s, -1, 1), -FLT_MAX, FLT_MAX));
    gad_tensor *e = gad_exp(gad_sub(s, m));
    /* l >= 1 where a key is seen (its max gives exp(0)), 0 where none is:
     * the clamp makes that row 0 / 0.5 = 0 and changes nothing else */
    gad_tensor *l = gad_clamp(gad_sum(e, (int[]){-1}, 1, 1), 0.5, INFINITY);
    gad_tensor *p = gad_div(e, l);
    if (drop) p = gad_mul(p, drop);
    return gad_matmul(p, v);
}

/* The dropout factors of a call (0 or 1/(1-p), the full scores' shape):
 * what the kernels draw for seed. Owned by the current scope. */
static gad_tensor *drop_factors(const char *op, gad_tensor *q, const sdpa_args *a) {
    if (GAD_LACKS_FAM(op, q, attention, dropout_mask)) return NULL;
    gad_tensor *m = gad__own(gad__tensor_new(op, q->dev, q->dtype, a->full, a->rank));
    if (m && m->numel) GAD_BE(q)->attention->dropout_mask(&a->g, m);
    return m;
}

gad_tensor *gad__sdpa_dropout_factors(gad_tensor *q, gad_tensor *k, gad_tensor *v,
                                      double dropout_p, uint64_t seed) {
    const char *op = "scaled_dot_product_attention";
    sdpa_args a;
    if (sdpa_check(op, q, k, v, NULL, 0, dropout_p, 0, 1, &a)) return NULL;
    a.g.seed = seed;
    gad_scope_begin();
    gad_tensor *m = gad_keep(drop_factors(op, q, &a));
    gad_scope_end();
    return m;
}

gad_tensor *gad__sdpa_unfused(gad_tensor *q, gad_tensor *k, gad_tensor *v, gad_tensor *mask,
                              int is_causal, double dropout_p, double scale, uint64_t seed) {
    const char *op = "scaled_dot_product_attention";
    sdpa_args a;
    if (sdpa_check(op, q, k, v, mask, is_causal, dropout_p, scale, 1, &a))
        return NULL;
    a.g.seed = seed;
    gad_scope_begin();
    gad_tensor *drop = dropout_p > 0 ? drop_factors(op, q, &a) : NULL;
    gad_tensor *y = dropout_p > 0 && !drop ? NULL : gad_keep(sdpa_compose(q, k, v, mask, &a.g, drop));
    gad_scope_end();
    return y;
}

enum { SD_Q, SD_K, SD_V, SD_MASK, SD_OUT, SD_LSE, SD_NSAVE };

static void geom_to_node(gad_node *n, const gad_attn_geom *g) {
    gad_np_sdpa *p = GAD_NODE_P(n, sdpa);
    p->scale = g->scale;
    p->dropout_p = g->dropout_p;
    p->seed = (int64_t)g->seed;
    p->causal = g->causal;
}

/* The geometry back from a node and its saved tensors. */
static gad_attn_geom geom_of(gad_node *n) {
    gad_np_sdpa *p = GAD_NODE_P(n, sdpa);
    const gad_tensor *q = n->saved[SD_Q], *k = n->saved[SD_K], *v = n->saved[SD_V];
    const gad_tensor *mask = n->saved[SD_MASK];
    int r = q->rank;
    gad_attn_geom g = {.B = 1, .Hq = r >= 3 ? q->shape[r - 3] : 1,
                       .Hk = r >= 3 ? k->shape[r - 3] : 1, .Tq = q->shape[r - 2],
                       .Tk = k->shape[r - 2], .d = q->shape[r - 1], .dv = v->shape[r - 1],
                       .scale = p->scale, .causal = (int)p->causal,
                       .mask_bool = mask && is_bool(mask), .dropout_p = p->dropout_p,
                       .seed = (uint64_t)p->seed};
    for (int d = 0; d < r - 3; d++) g.B *= q->shape[d];
    return g;
}

gad_tensor *gad_scaled_dot_product_attention(gad_tensor *q, gad_tensor *k, gad_tensor *v,
                                             gad_tensor *mask, int is_causal, double dropout_p,
                                             double scale, gad_rng *rng) {
    const char *op = "scaled_dot_product_attention";
    gad_tensor *hin[4] = {q, k, v, mask}; /* half precision: in f32 (ops_int.h) */
    GAD_HALF_VIA_F32(op, hin, 4,
                     gad_scaled_dot_product_attention(hin[0], hin[1], hin[2], hin[3], is_causal,
                                                      dropout_p, scale, rng));
    sdpa_args a;
    if (sdpa_check(op, q, k, v, mask, is_causal, dropout_p, scale, rng != NULL, &a))
        return NULL;
    if (dropout_p > 0) a.g.seed = gad_rng_next(rng);
    gad_tensor *in[3] = {q, k, v};
    if (mask && mask->node && gad_grad_enabled()) {
        /* a mask on the tape gets its gradient through the composition
         * (which holds the scores): the kernels treat the mask as constant */
        gad_scope_begin();
        gad_tensor *drop = dropout_p > 0 ? drop_factors(op, q, &a) : NULL;
        gad_tensor *y =
            dropout_p > 0 && !drop ? NULL : gad_keep(sdpa_compose(q, k, v, mask, &a.g, drop));
        gad_scope_end();
        return gad__own(y);
    }
    /* with dropout, a second derivative draws the factors as a tensor */
    if (GAD_LACKS_FAM(op, q, attention, fwd) ||
        (dropout_p > 0 && GAD_LACKS_FAM(op, q, attention, dropout_mask)))
        return NULL;
    gad_tensor *out = gad__tensor_new(op, q->dev, q->dtype, a.out, a.rank);
    if (!out) return NULL;
    /* an empty output (dv = 0 included) needs no kernel, and no lse */
    int64_t rows = out->numel ? a.g.B * a.g.Hq * a.g.Tq : 0;
    gad_tensor *lse = rows ? gad__tensor_new(op, q->dev, q->dtype, &rows, 1) : NULL;
    int ok = !rows || lse != NULL;
    gad_scope_begin();
    gad_tensor *qp = NULL, *kp = NULL, *vp = NULL, *mv = NULL;
    if (ok) ok = (qp = packed(op, q)) && (kp = packed(op, k)) && (vp = packed(op, v));
    if (ok && mask) ok = (mv = gad_broadcast_to(gad_stop_gradient(mask), a.full, a.rank)) != NULL;
    if (ok && rows)
        ok = GAD_BE(q)->attention->fwd(op, &a.g, qp, kp, vp, mv, out, lse) == 0;
    if (ok) {
        gad_tensor *save[SD_NSAVE] = {q, k, v, mv, out, lse};
        out = gad__track(out, GAD_OP(SDPA), in, 3, save, SD_NSAVE);
        if (out && out->node) geom_to_node(out->node, &a.g);
    }
    gad_scope_end();
    gad_release(lse);
    if (!ok) {
        gad_release(out);
        return NULL;
    }
    return gad__own(out);
}

int gad__vjp_scaled_dot_product_attention(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    const char *op = "scaled_dot_product_attention";
    gad_attn_geom g = geom_of(n);
    if (gad_grad_enabled()) {
        gad_tensor *drop = NULL;
        if (g.dropout_p > 0) {
            sdpa_args a = {.g = g, .rank = n->saved[SD_Q]->rank};
            memcpy(a.full, n->saved[SD_Q]->shape, (size_t)a.rank * sizeof *a.full);
            a.full[a.rank - 1] = g.Tk;
            if (!(drop = drop_factors(op, n->saved[SD_Q], &a))) return -1;
        }
        gad_tensor *q = gad__saved(n, SD_Q), *k = gad__saved(n, SD_K), *v = gad__saved(n, SD_V);
        if (!q || !k || !v) return -1;
        return gad__vjp_composed(n, gy, need, gin,
                                 sdpa_compose(q, k, v, n->saved[SD_MASK], &g, drop));
    }
    if (GAD_LACKS_FAM(op, gy, attention, bwd)) return -1;
    gad_tensor *q = packed(op, n->saved[SD_Q]), *k = packed(op, n->saved[SD_K]);
    gad_tensor *v = packed(op, n->saved[SD_V]), *go = packed(op, gy);
    if (!q || !k || !v || !go) return -1;
    gad_tensor *dq = gad__own(gad__tensor_like(op, q)), *dk = gad__own(gad__tensor_like(op, k));
    gad_tensor *dv = gad__own(gad__tensor_like(op, v));
    if (!dq || !dk || !dv) return -1;
    int run = n->saved[SD_LSE] != NULL && g.Tk > 0; /* else no key, or an empty output */
    if (run && GAD_BE(q)->attention->bwd(op, &g, q, k, v, n->saved[SD_MASK], n->saved[SD_OUT],
                                         n->saved[SD_LSE], go, dq, dk, dv))
        return -1;
    if (!run) { /* nothing attended: zero gradients */
        gad_tensor *z[3] = {dq, dk, dv};
        for (int i = 0; i < 3; i++)
            if (z[i]->numel) memset(gad__ptr(z[i]), 0, (size_t)z[i]->numel * gad__dsize(z[i]->dtype));
    }
    gin[0] = need[0] ? dq : NULL;
    gin[1] = need[1] ? dk : NULL;
    gin[2] = need[2] ? dv : NULL;
    return 0;
}

/* ================================================================= rope */

static int rope_check(const char *op, gad_tensor *x, gad_tensor *pos, double base) {
    if (gad__bad_tensor(x)) return (gad__bad_arg(op, x), -1);
    if (pos && gad__bad_tensor(pos)) return (gad__bad_arg(op, pos), -1);
    if (gad__need_float(op, x)) return -1;
    if (x->rank < 2) {
        char b[GAD_SHAPE_BUF];
        gad__err(GAD_ERR_SHAPE, op, "x must be [.., T, d] (rank >= 2), got %s",
                 gad__shape_str(b, x->shape, x->rank));
        return -1;
    }
    if (x->shape[x->rank - 1] % 2) {
        gad__err(GAD_ERR_SHAPE, op, "the last dim d must be even, got %lld",
                 (long long)x->shape[x->rank - 1]);
        return -1;
    }
    if (!(base > 0) || isinf(base)) {
        gad__err(GAD_ERR_DOMAIN, op, "base must be finite and > 0, got %g", base);
        return -1;
    }
    if (pos) {
        if (gad__need_i64(op, pos)) return -1;
        if (pos->dev != x->dev) return (gad__err_device(op, x->dev, pos->dev), -1);
        int ok = pos->rank <= x->rank - 1;
        for (int d = 0; ok && d < pos->rank; d++) {
            int64_t p = pos->shape[pos->rank - 1 - d], f = x->shape[x->rank - 2 - d];
            ok = p == f || p == 1;
        }
        if (!ok) {
            char b1[GAD_SHAPE_BUF], b2[GAD_SHAPE_BUF];
            gad__err(GAD_ERR_SHAPE, op, "positions %s do not broadcast to x's %s without d",
                     gad__shape_str(b1, pos->shape, pos->rank),
                     gad__shape_str(b2, x->shape, x->rank - 1));
            return -1;
        }
    }
    return 0;
}

/* y (x's shape, fresh) = rope(x) or its inverse, through the kernel; pos:
 * i64, or NULL for 0..T-1 on axis -2. 0 or -1. */
static int rope_apply(const char *op, gad_tensor *x, gad_tensor *pos, double base,
                      int interleaved, int inverse, gad_tensor *y) {
    int r = x->rank, rc = -1;
    gad_scope_begin();
    gad_tensor *xp = packed(op, x), *pp, *pb;
    if (pos) {
        pp = packed(op, pos);
    } else {
        int64_t T = x->shape[r - 2];
        pp = gad_arange(0, (double)T, 1, GAD_I64);
        if (pp && x->dev) pp = gad_to_device(pp, x->dev);
    }
    pb = pp ? gad_broadcast_to(pp, x->shape, r - 1) : NULL;
    if (xp && pb)
        rc = GAD_BE(x)->attention->rope(op, xp, pp, pb, base, interleaved, inverse, y);
    gad_scope_end();
    return rc;
}

gad_tensor *gad_rope(gad_tensor *x, gad_tensor *positions, double base, int interleaved) {
    const char *op = "rope";
    GAD_HALF_VIA_F32(op, &x, 1, gad_rope(x, positions, base, interleaved));
    if (rope_check(op, x, positions, base) || GAD_LACKS_FAM(op, x, attention, rope)) return NULL;
    gad_tensor *y = gad__tensor_like(op, x);
    if (!y) return NULL;
    if (rope_apply(op, x, positions, base, interleaved, 0, y)) {
        gad_release(y);
        return NULL;
    }
    gad_tensor *save[1] = {positions}, *in[1] = {x};
    y = gad__track(y, GAD_OP(ROPE), in, 1, save, 1);
    if (y && y->node) {
        gad_np_rope *p = GAD_NODE_P(y->node, rope);
        p->base = base;
        p->interleaved = !!interleaved;
    }
    return gad__own(y);
}

/* The rotation is orthogonal: its VJP is the inverse rotation, a rope
 * again (tracked, so it is differentiable any number of times). */
int gad__vjp_rope(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    gad_np_rope *p = GAD_NODE_P(n, rope);
    gad_tensor *pos = n->saved[0];
    if (gad_grad_enabled()) {
        /* rope(g, -positions) is the inverse rotation */
        gad_tensor *neg;
        if (pos) neg = gad_mul_scalar(gad_cast(pos, GAD_F64), -1);
        else {
            int64_t T = gy->shape[gy->rank - 2];
            neg = gad_arange(0, -(double)T, -1, GAD_F64);
            if (neg && gy->dev) neg = gad_to_device(neg, gy->dev);
        }
        neg = gad_cast(neg, GAD_I64);
        gin[0] = neg ? gad_rope(gy, neg, p->base, (int)p->interleaved) : NULL;
        return gin[0] ? 0 : -1;
    }
    if (GAD_LACKS_FAM("rope", gy, attention, rope)) return -1;
    gad_tensor *g = gad__own(gad__tensor_like("rope", gy));
    if (!g || rope_apply("rope", gy, pos, p->base, (int)p->interleaved, 1, g)) return -1;
    gin[0] = g;
    return 0;
}

gad_tensor *gad_sinusoidal_positions(int64_t T, int64_t d, double base, gad_dtype_t dtype) {
    const char *op = "sinusoidal_positions";
    if (T < 0 || d < 0 || d % 2)
        return gad__err(GAD_ERR_SHAPE, op, "needs T >= 0 and an even d >= 0, got T %lld d %lld",
                        (long long)T, (long long)d);
    if (!(base > 0) || isinf(base))
        return gad__err(GAD_ERR_DOMAIN, op, "base must be finite and > 0, got %g", base);
    if (dtype != GAD_F32 && dtype != GAD_F64)
        return gad__err(GAD_ERR_DTYPE, op, "dtype must be f32 or f64, got %s",
                        gad_dtype_name(dtype));
    int64_t shape[2] = {T, d};
    gad_tensor *y = gad__tensor_new(op, 0, dtype, shape, 2);
    if (!y) return NULL;
    /* d = 0: an empty [T, 0] of any T (the loop over T would be empty work) */
    if (d == 0) return gad__own(y);
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < d / 2; i++) {
            double th = (double)t * pow(base, -2.0 * (double)i / (double)d);
            double s = sin(th), c = cos(th);
            if (dtype == GAD_F32) {
                ((float *)gad__ptr(y))[t * d + 2 * i] = (float)s;
                ((float *)gad__ptr(y))[t * d + 2 * i + 1] = (float)c;
            } else {
                ((double *)gad__ptr(y))[t * d + 2 * i] = s;
                ((double *)gad__ptr(y))[t * d + 2 * i + 1] = c;
            }
        }
    return gad__own(y);
}

/* ================================================================ samples */

static gad_tensor *apply_attention(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    if (s->i[0] == GAD_OP_ROPE)
        return gad_rope(in[0], n > 1 ? in[1] : NULL, s->d[0], (int)s->i[1]);
    /* dropout: the same key at every call (a fresh rng of a fixed seed) */
    gad_rng *r = s->d[1] > 0 ? gad_rng_new(17) : NULL;
    gad_tensor *y = gad_scaled_dot_product_attention(in[0], in[1], in[2], n > 3 ? in[3] : NULL,
                                                     (int)s->i[1], s->d[1], s->d[0], r);
    gad_rng_free(r);
    return y;
}

int gad__sample_scaled_dot_product_attention(gad_op_sample *s, gad_rng *r, int v) {
    /* q [B, Hq, Tq, d], k/v [B, Hk, Tk, d(v)], mask kind: 0 none, 1 causal,
     * 2 a float mask [Tq, Tk] with one row fully masked, 3 a bool mask
     * [B, 1, Tq, Tk] with one row fully masked */
    static const int64_t cases[][8] = {
        {2, 2, 3, 4, 2, 5, 3, 0}, {1, 4, 5, 3, 2, 5, 2, 1}, {1, 2, 4, 3, 1, 6, 3, 1},
        {2, 1, 3, 2, 1, 4, 2, 2}, {1, 2, 0, 3, 2, 4, 3, 0}, {1, 2, 3, 2, 2, 0, 2, 0},
        {1, 2, 4, 3, 1, 5, 2, 1}, {2, 2, 3, 2, 1, 4, 2, 3}};
    if (v >= 8) return 0;
    const int64_t *c = cases[v];
    int64_t qs[4] = {c[0], c[1], c[2], c[3]}, ks[4] = {c[0], c[4], c[5], c[3]};
    int64_t vs[4] = {c[0], c[4], c[5], c[6]};
    *s = (gad_op_sample){.n = 3, .apply = apply_attention, .smooth = 1};
    s->i[0] = GAD_OP_SDPA;
    s->i[1] = c[7] == 1;
    s->d[0] = v == 1 ? 0.7 : 0;
    s->d[1] = v == 6 ? 0.4 : 0; /* dropout */
    s->in[0] = gad__sample_leaf(r, qs, 4, -1, 1, 0);
    s->in[1] = gad__sample_leaf(r, ks, 4, -1, 1, 0);
    s->in[2] = gad__sample_leaf(r, vs, 4, -1, 1, 0);
    if (c[7] == 2) {
        double m[3 * 4];
        for (int i = 0; i < 12; i++) m[i] = i / 4 == 1 ? -INFINITY : (i % 3) * 0.25 - 0.3;
        s->in[3] = gad_from_f64(m, (int64_t[]){c[2], c[5]}, 2);
        s->n = 4;
    } else if (c[7] == 3) {
        uint8_t m[2 * 3 * 4];
        for (int i = 0; i < 24; i++) m[i] = i % 12 / 4 != 1 && i % 5 != 2;
        s->in[3] = gad_from_bool(m, (int64_t[]){c[0], 1, c[2], c[5]}, 4);
        s->n = 4;
    }
    snprintf(s->what, sizeof s->what, "q %lldx%lldx%lldx%lld k/v heads %lld Tk %lld dv %lld %s",
             (long long)c[0], (long long)c[1], (long long)c[2], (long long)c[3],
             (long long)c[4], (long long)c[5], (long long)c[6],
             c[7] == 1 ? (v == 6 ? "causal dropout 0.4" : "causal")
             : c[7] == 2 ? "float mask"
             : c[7] == 3 ? "bool mask" : "");
    return s->in[0] && s->in[1] && s->in[2] && (c[7] < 2 || s->in[3]);
}

int gad__sample_rope(gad_op_sample *s, gad_rng *r, int v) {
    static const int64_t shapes[][4] = {{2, 3, 4, 0}, {1, 2, 5, 6}, {3, 0, 0, 0}, {2, 0, 4, 0}};
    static const int ranks[] = {3, 4, 1, 3};
    if (v >= 4) return 0;
    *s = (gad_op_sample){.n = 1, .apply = apply_attention, .smooth = 1};
    s->i[0] = GAD_OP_ROPE;
    s->i[1] = v % 2;
    s->d[0] = v == 1 ? 100 : 10000;
    int rank = ranks[v];
    int64_t shp[4] = {shapes[v][0], shapes[v][1], shapes[v][2], shapes[v][3]};
    if (v == 2) { /* [3, 2] with positions given */
        rank = 2;
        shp[1] = 2;
        s->in[1] = gad_from_i64((int64_t[]){7, -2, 40}, (int64_t[]){3}, 1);
        s->n = 2;
    }
    s->in[0] = gad__sample_leaf(r, shp, rank, -1, 1, 0);
    gad__shape_str(s->what, shp, rank);
    if (v % 2) strncat(s->what, " interleaved", sizeof s->what - strlen(s->what) - 1);
    return s->in[0] && (v != 2 || s->in[1]);
}

/* ---- composite (ops.def's COMPOSITE row): sinusoidal_positions, a
 * constant of no tensor input; i[0..1]: T and d, i[2]: f64, d[0]: base */
static gad_tensor *apply_positions(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    (void)in, (void)n;
    return gad_sinusoidal_positions(s->i[0], s->i[1], s->d[0], s->i[2] ? GAD_F64 : GAD_F32);
}

int gad__sample_sinusoidal_positions(gad_op_sample *s, gad_rng *r, int v) {
    static const int64_t c[][3] = {{5, 8, 1}, {3, 2, 0}, {0, 4, 1}, {7, 6, 1}};
    static const double base[] = {10000, 10000, 100, 3};
    (void)r;
    if (v >= 4) return 0;
    *s = (gad_op_sample){.n = 0, .apply = apply_positions};
    for (int k = 0; k < 3; k++) s->i[k] = c[v][k];
    s->d[0] = base[v];
    snprintf(s->what, sizeof s->what, "T %lld d %lld base %g", (long long)c[v][0],
             (long long)c[v][1], base[v]);
    return 1;
}
