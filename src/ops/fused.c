/* fused.c: the fused ops of docs/helix.md (gated scan, RMS norm, masked
 * cross-entropy, embedding, the HELIX block), each one tape node with a
 * hand-written backward (the back end's fused families, backend/scan.h and
 * the others; the CPU's are in src/cpu, a file each), beside the unfused composition of ordinary ops
 * that defines it. Under GAD_CREATE_GRAPH the VJPs are taken through
 * tracked ops instead, so that their results are differentiable again. */
#include "ops_int.h"
#include "backend/embedding.h"
#include "backend/helix.h"
#include "backend/masked_ce.h"
#include "backend/rms_norm.h"
#include "backend/scan.h"

#include <math.h>
#include <stdio.h>

/* A packed version of t for a kernel (gad__contig), owned by the current
 * scope: every caller here runs inside a scope of its own or a VJP's. */
static gad_tensor *packed(const char *op, gad_tensor *t) {
    return gad__own(gad__contig(op, t));
}

/* All of ts[0..n) on ts[0]'s device, else a device error. */
static int same_devs(const char *op, gad_tensor *const *ts, int n) {
    for (int i = 1; i < n; i++)
        if (GAD_UNLIKELY(ts[i]->dev != ts[0]->dev))
            return (gad__err_device(op, ts[0]->dev, ts[i]->dev), -1);
    return 0;
}

static int need_rank(const char *op, const char *what, const gad_tensor *t, int rank) {
    if (t->rank == rank) return 0;
    char b[GAD_SHAPE_BUF];
    gad__err(GAD_ERR_SHAPE, op, "%s must have rank %d, got %s", what, rank,
             gad__shape_str(b, t->shape, t->rank));
    return -1;
}

static int need_shape(const char *op, const char *what, const gad_tensor *t,
                      const int64_t *shape, int rank) {
    if (gad__same_shape(t->shape, t->rank, shape, rank)) return 0;
    char b1[GAD_SHAPE_BUF], b2[GAD_SHAPE_BUF];
    gad__err(GAD_ERR_SHAPE, op, "%s must be %s, got %s", what, gad__shape_str(b1, shape, rank),
             gad__shape_str(b2, t->shape, t->rank));
    return -1;
}

/* ============================================================= gated scan */

gad_tensor *gad__gated_scan_unfused(gad_tensor *a, gad_tensor *b) {
    GAD_NEED("gated_scan", a);
    GAD_NEED("gated_scan", b);
    int64_t T = a->rank == 3 ? a->shape[1] : 0;
    gad_scope_begin();
    gad_tensor **hs = gad__alloc((size_t)(T ? T : 1) * sizeof *hs), *h = NULL, *y = NULL;
    for (int64_t t = 0; hs && t < T; t++) {
        gad_tensor *bt = gad_select(b, 1, t);
        h = h ? gad_add(gad_mul(gad_select(a, 1, t), h), bt) : bt;
        hs[t] = h;
    }
    if (hs) y = T ? gad_keep(gad_stack(hs, (int)T, 1)) : gad_keep(gad_zeros_like(a));
    gad__free(hs, (size_t)(T ? T : 1) * sizeof *hs);
    gad_scope_end();
    return y;
}

gad_tensor *gad_gated_scan(gad_tensor *a, gad_tensor *b) {
    const char *op = "gated_scan";
    if (gad__bad_tensor(a) || gad__bad_tensor(b)) return gad__bad_of(op, 2, (const gad_tensor *const[]){a, b});
    gad_tensor *in[2] = {a, b}, *save[2] = {a, NULL};
    GAD_HALF_VIA_F32_UNLESS(scan, a, op, in, 2, gad_gated_scan(in[0], in[1]));
    if (gad__need_floating(op, a) || gad__need_same_dtype(op, a, b) || same_devs(op, in, 2) ||
        need_rank(op, "a", a, 3) || need_shape(op, "b", b, a->shape, 3) ||
        GAD_LACKS_FAM(op, a, scan, fwd))
        return NULL;
    gad_tensor *h = gad__tensor_like(op, a);
    if (!h) return NULL;
    gad_scope_begin();
    gad_tensor *ap = packed(op, a), *bp = packed(op, b);
    int ok = ap && bp && GAD_BE(a)->scan->fwd(ap, bp, h) == 0;
    gad_scope_end();
    if (!ok) {
        gad_release(h);
        return NULL;
    }
    save[1] = h;
    return gad__own(gad__track(h, GAD_OP(GATED_SCAN), in, 2, save, 2));
}

/* x shifted by one step along time (axis 1): forward (x_{t-1}, zeros first)
 * or backward (x_{t+1}, zeros last). */
static gad_tensor *shift_time(gad_tensor *x, int forward) {
    int64_t T = x->shape[1];
    int64_t zs[3] = {x->shape[0], T ? 1 : 0, x->shape[2]};
    gad_tensor *z = gad__full_on(x->dev, zs, 3, x->dtype, 0);
    if (T <= 1) return gad_zeros_like(x);
    gad_range r[2] = {GAD_ALL, forward ? GAD_RANGE(0, T - 1) : GAD_RANGE(1, T)};
    gad_tensor *part = gad_slice(x, r, 2);
    gad_tensor *pieces[2] = {forward ? z : part, forward ? part : z};
    return gad_cat(pieces, 2, 1);
}

static gad_tensor *reverse_time(gad_tensor *x) {
    gad_range r[2] = {GAD_ALL, GAD_RANGE_STEP(GAD_NIL, GAD_NIL, -1)};
    return x->shape[1] ? gad_contiguous(gad_slice(x, r, 2)) : x;
}

/* G_t = gh_t + a_{t+1} G_{t+1}, ga_t = G_t h_{t-1} (ga_0 = 0), gb = G */
int gad__vjp_gated_scan(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    gad_tensor *a = n->saved[0], *h = n->saved[1];
    if (gad_grad_enabled()) {
        /* on the tape: the reverse recurrence is a scan in reversed time */
        a = gad__saved(n, 0);
        h = gad__saved(n, 1);
        gad_tensor *G = reverse_time(
            gad_gated_scan(reverse_time(shift_time(a, 0)), reverse_time(gy)));
        if (need[1] && !(gin[1] = G)) return -1;
        if (need[0] && !(gin[0] = gad_mul(G, shift_time(h, 1)))) return -1;
        return G ? 0 : -1;
    }
    if (GAD_LACKS_FAM("gated_scan", h, scan, bwd)) return -1;
    gad_tensor *ga = need[0] ? gad__own(gad__tensor_like("gated_scan", h)) : NULL;
    gad_tensor *gb = need[1] ? gad__own(gad__tensor_like("gated_scan", h)) : NULL;
    gad_tensor *g = packed("gated_scan", gy);
    a = packed("gated_scan", a); /* h is the op's own output: packed */
    if ((need[0] && !ga) || (need[1] && !gb) || !g || !a) return -1;
    if (GAD_BE(a)->scan->bwd(a, h, g, ga, gb)) return -1;
    gin[0] = ga;
    gin[1] = gb;
    return 0;
}

/* =============================================================== rms norm */

gad_tensor *gad__rms_norm_unfused(gad_tensor *x, double eps) {
    GAD_NEED("rms_norm", x);
    gad_scope_begin();
    gad_tensor *ms = gad_mean(gad_square(x), (int[]){-1}, 1, 1);
    gad_tensor *y = gad_keep(gad_div(x, gad_sqrt(gad_add_scalar(ms, eps))));
    gad_scope_end();
    return y;
}

static int check_eps(const char *op, double eps) {
    if (eps >= 0 && isfinite(eps)) return 0;
    gad__err(GAD_ERR_DOMAIN, op, "eps must be finite and >= 0, got %g", eps);
    return -1;
}

gad_tensor *gad_rms_norm(gad_tensor *x, double eps) {
    const char *op = "rms_norm";
    GAD_NEED(op, x);
    if (gad__need_floating(op, x) || check_eps(op, eps)) return NULL; /* half: native */
    if (x->rank == 0) return gad__err(GAD_ERR_SHAPE, op, "needs rank >= 1, got a scalar");
    GAD_HALF_VIA_F32_UNLESS(rms_norm, x, op, &x, 1, gad_rms_norm(x, eps));
    if (GAD_LACKS_FAM(op, x, rms_norm, fwd)) return NULL;
    gad_tensor *y = gad__tensor_like(op, x);
    if (!y) return NULL;
    gad_scope_begin();
    gad_tensor *xp = packed(op, x);
    if (xp) GAD_BE(x)->rms_norm->fwd(xp, y, eps);
    gad_scope_end();
    if (!xp) {
        gad_release(y);
        return NULL;
    }
    y = gad__track(y, GAD_OP(RMS_NORM), &x, 1, &x, 1);
    if (y && y->node) GAD_NODE_P(y->node, eps)->eps = eps;
    return gad__own(y);
}

int gad__vjp_rms_norm(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    double eps = GAD_NODE_P(n, eps)->eps;
    if (gad_grad_enabled())
        return gad__vjp_composed(n, gy, need, gin, gad__rms_norm_unfused(gad__saved(n, 0), eps));
    if (GAD_LACKS_FAM("rms_norm", gy, rms_norm, bwd)) return -1;
    gad_tensor *x = packed("rms_norm", n->saved[0]), *g = packed("rms_norm", gy);
    gad_tensor *dx = x ? gad__own(gad__tensor_like("rms_norm", x)) : NULL;
    if (!x || !g || !dx) return -1;
    GAD_BE(x)->rms_norm->bwd(x, g, dx, eps);
    gin[0] = dx;
    return 0;
}

/* ================================================== masked cross-entropy */

/* The shapes, dtypes and devices of a masked cross-entropy's arguments. */
static int mce_check(const char *op, gad_tensor *logits, gad_tensor *targets, gad_tensor *mask,
                     int64_t *N, int64_t *V) {
    gad_tensor *in[3] = {logits, targets, mask};
    if (gad__need_floating(op, logits) || gad__need_same_dtype(op, logits, mask) ||
        gad__need_i64(op, targets) || same_devs(op, in, 3))
        return -1;
    if (logits->rank != 2) {
        char b[GAD_SHAPE_BUF];
        gad__err(GAD_ERR_SHAPE, op, "logits must be [N,V], got %s",
                 gad__shape_str(b, logits->shape, logits->rank));
        return -1;
    }
    *N = logits->shape[0];
    *V = logits->shape[1];
    if (targets->numel != *N || mask->numel != *N) {
        gad__err(GAD_ERR_SHAPE, op,
                 "targets (%lld) and mask (%lld) must have N = %lld entries (logits N x V = "
                 "%lld x %lld)",
                 (long long)targets->numel, (long long)mask->numel, (long long)*N,
                 (long long)*N, (long long)*V);
        return -1;
    }
    return 0;
}

/* What the loss and its gradient need of targets and mask, made by the back
 * end on their device (backend.h's mce_prep): the targets with every
 * weighted row's checked against V and the unweighted rows' replaced by 0
 * (they are never read), the total weight, and -1/total. Scope-owned. */
typedef struct mce_prep {
    gad_tensor *safe, *count, *nscale, *mask; /* mask: packed, [N] */
} mce_prep;

static int mce_prepare(const char *op, gad_tensor *logits, gad_tensor *targets,
                       gad_tensor *mask, int64_t N, int64_t V, mce_prep *p) {
    int dev = logits->dev;
    if (GAD_LACKS_FAM(op, logits, masked_ce, prep)) return -1;
    p->safe = gad__own(gad__tensor_new(op, dev, GAD_I64, &N, 1));
    p->count = gad__own(gad__tensor_new(op, dev, GAD_F64, NULL, 0));
    p->nscale = gad__own(gad__tensor_new(op, dev, logits->dtype, NULL, 0));
    /* off the tape: the mask gets no gradient, in the fused VJP and in the
     * composition that GAD_CREATE_GRAPH differentiates alike */
    gad_tensor *m = gad_reshape(gad_detach(mask), &N, 1); /* NULL: out of memory */
    p->mask = m ? packed(op, m) : NULL;
    if (!p->safe || !p->count || !p->nscale || !p->mask) return -1;
    return GAD_BE(logits)->masked_ce->prep(op, targets, p->mask, V, p->safe, p->count, p->nscale);
}

/* loss = -(1/sum|m|) sum_i m_i log softmax(logits_i)[t_i] */
static gad_tensor *mce_compose(gad_tensor *logits, const mce_prep *p) {
    gad_tensor *lp = gad_log_softmax(logits, -1);
    gad_tensor *picked = gad_take(lp, 1, p->safe);
    gad_tensor *s = gad_sum_all(gad_mul(picked, p->mask));
    return gad_mul(s, p->nscale); /* nscale is -1/count, or 0 for no weight */
}

gad_tensor *gad__masked_ce_unfused(gad_tensor *logits, gad_tensor *targets, gad_tensor *mask) {
    const char *op = "masked_ce";
    if (gad__bad_tensor(logits) || gad__bad_tensor(targets) || gad__bad_tensor(mask)) return gad__bad_of(op, 3, (const gad_tensor *const[]){logits, targets, mask});
    int64_t N, V;
    if (mce_check(op, logits, targets, mask, &N, &V)) return NULL;
    gad_scope_begin();
    mce_prep p;
    gad_tensor *y = mce_prepare(op, logits, targets, mask, N, V, &p) == 0
                        ? gad_keep(mce_compose(logits, &p)) : NULL;
    gad_scope_end();
    return y;
}

enum { MCE_LOGITS, MCE_SAFE, MCE_MASK, MCE_PROBS, MCE_COUNT, MCE_NSCALE, MCE_NSAVE };

gad_tensor *gad_masked_ce(gad_tensor *logits, gad_tensor *targets, gad_tensor *mask) {
    const char *op = "masked_ce";
    if (gad__bad_tensor(logits) || gad__bad_tensor(targets) || gad__bad_tensor(mask)) return gad__bad_of(op, 3, (const gad_tensor *const[]){logits, targets, mask});
    int64_t N, V;
    gad_tensor *hin[3] = {logits, targets, mask};
    GAD_HALF_VIA_F32_UNLESS(masked_ce, logits, op, hin, 3,
                            gad_masked_ce(hin[0], hin[1], hin[2]));
    if (mce_check(op, logits, targets, mask, &N, &V) ||
        GAD_LACKS_FAM(op, logits, masked_ce, fwd))
        return NULL;
    gad_tensor *y = NULL;
    gad_scope_begin();
    mce_prep p;
    gad_tensor *lp = NULL, *probs = NULL;
    if (mce_prepare(op, logits, targets, mask, N, V, &p) == 0 && (lp = packed(op, logits)))
        probs = gad__own(gad__tensor_like(op, lp));
    if (probs) {
        y = gad__tensor_new(op, logits->dev, logits->dtype, NULL, 0);
        if (y && GAD_BE(logits)->masked_ce->fwd(op, lp, p.safe, p.mask, probs, y)) {
            gad_release(y);
            y = NULL;
        }
        if (y) {
            gad_tensor *in[3] = {logits, targets, mask};
            gad_tensor *save[MCE_NSAVE] = {logits, p.safe, p.mask, probs, p.count, p.nscale};
            y = gad__track(y, GAD_OP(MASKED_CE), in, 3, save, MCE_NSAVE);
        }
    }
    gad_scope_end();
    return gad__own(y);
}

int gad__vjp_masked_ce(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    if (!need[0]) return 0; /* no gradient to targets or mask */
    if (gad_grad_enabled()) {
        mce_prep p = {n->saved[MCE_SAFE], n->saved[MCE_COUNT], n->saved[MCE_NSCALE],
                      n->saved[MCE_MASK]};
        return gad__vjp_composed(n, gy, need, gin, mce_compose(gad__saved(n, MCE_LOGITS), &p));
    }
    if (GAD_LACKS_FAM("masked_ce", gy, masked_ce, bwd)) return -1;
    gad_tensor *d = gad__own(gad__tensor_like("masked_ce", n->saved[MCE_PROBS]));
    if (!d) return -1;
    if (GAD_BE(d)->masked_ce->bwd(n->saved[MCE_PROBS], n->saved[MCE_SAFE],
                                  n->saved[MCE_MASK], n->saved[MCE_COUNT], gy, d))
        return -1;
    gin[0] = d;
    return 0;
}

/* ============================================================== embedding */

/* idx as a packed i64 tensor whose values are checked against [0, V) by
 * the back end (at once, or at the device's next synchronising call: the
 * kernels then skip a bad one), owned by the current scope. */
static gad_tensor *emb_index(const char *op, gad_tensor *idx, int64_t V) {
    gad_tensor *p = packed(op, idx);
    int64_t v;
    if (p && GAD_BE(p)->index_check(op, p, 0, V, &v) >= 0)
        return gad__err(GAD_ERR_INDEX, op, "index %lld out of bounds for %lld rows",
                        (long long)v, (long long)V);
    return p;
}

static int emb_check(const char *op, gad_tensor *table, gad_tensor *idx) {
    gad_tensor *in[2] = {table, idx};
    if (gad__need_floating(op, table) || gad__need_i64(op, idx) || same_devs(op, in, 2) ||
        need_rank(op, "table", table, 2))
        return -1;
    if (idx->rank >= GAD_MAX_RANK)
        return (gad__err(GAD_ERR_SHAPE, op, "index rank %d leaves no room for D", idx->rank), -1);
    return GAD_LACKS(op, idx, index_check) ? -1 : 0;
}

gad_tensor *gad__embedding_unfused(gad_tensor *table, gad_tensor *idx) {
    const char *op = "embedding_fused";
    if (gad__bad_tensor(table) || gad__bad_tensor(idx)) return gad__bad_of(op, 2, (const gad_tensor *const[]){table, idx});
    if (emb_check(op, table, idx)) return NULL;
    int64_t R = idx->numel, D = table->shape[1];
    int64_t out[GAD_MAX_RANK];
    memcpy(out, idx->shape, (size_t)idx->rank * sizeof *out);
    out[idx->rank] = D;
    gad_scope_begin();
    gad_tensor *ix = emb_index(op, idx, table->shape[0]), *y = NULL;
    if (ix) {
        gad_tensor *cols = gad_broadcast_to(gad_reshape(ix, (int64_t[]){R, 1}, 2),
                                            (int64_t[]){R, D}, 2);
        y = gad_keep(gad_reshape(gad_gather(table, 0, cols), out, idx->rank + 1));
    }
    gad_scope_end();
    return y;
}

gad_tensor *gad_embedding_fused(gad_tensor *table, gad_tensor *idx) {
    const char *op = "embedding_fused";
    if (gad__bad_tensor(table) || gad__bad_tensor(idx)) return gad__bad_of(op, 2, (const gad_tensor *const[]){table, idx});
    gad_tensor *hin[2] = {table, idx};
    GAD_HALF_VIA_F32_UNLESS(embedding, table, op, hin, 2, gad_embedding_fused(hin[0], hin[1]));
    if (emb_check(op, table, idx) || GAD_LACKS_FAM(op, table, embedding, fwd)) return NULL;
    int64_t D = table->shape[1];
    int64_t out[GAD_MAX_RANK];
    memcpy(out, idx->shape, (size_t)idx->rank * sizeof *out);
    out[idx->rank] = D;
    gad_tensor *y = gad__tensor_new(op, table->dev, table->dtype, out, idx->rank + 1);
    if (!y) return NULL;
    gad_scope_begin();
    gad_tensor *ix = emb_index(op, idx, table->shape[0]);
    gad_tensor *tp = ix ? packed(op, table) : NULL;
    if (tp) GAD_BE(tp)->embedding->fwd(tp, ix, y);
    gad_tensor *in[2] = {table, idx}, *save[2] = {table, ix};
    if (tp) y = gad__track(y, GAD_OP(EMBEDDING_FUSED), in, 2, save, 2);
    gad_scope_end();
    if (!tp) {
        gad_release(y);
        return NULL;
    }
    return gad__own(y);
}

int gad__vjp_embedding_fused(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    if (!need[0]) return 0;
    gad_tensor *ix = n->saved[1];
    if (gad_grad_enabled())
        return gad__vjp_composed(n, gy, need, gin,
                                 gad__embedding_unfused(gad__saved(n, 0), ix));
    if (GAD_LACKS_FAM("embedding_fused", gy, embedding, bwd)) return -1;
    gad_node *t = n->parents[0];
    gad_tensor *gt = gad__own(gad__tensor_zeros("embedding_fused", gy->dev, gy->dtype, t->shape, 2));
    gad_tensor *g = packed("embedding_fused", gy);
    if (!gt || !g) return -1;
    GAD_BE(gt)->embedding->bwd(ix, g, gt);
    gin[0] = gt;
    return 0;
}

/* ============================================================ HELIX block */

/* The tensors of a block in one array (backend/helix.h's GAD_HX order): the node
 * saves the inputs and a, h, out1, f1, f2; s2 and xn2 are the forward's
 * scratch (the backward recomputes them). */
enum {
    HX_X = GAD_HX_X, HX_WA = GAD_HX_WA, HX_WB = GAD_HX_WB, HX_WO = GAD_HX_WO,
    HX_WF1 = GAD_HX_WF1, HX_WF2 = GAD_HX_WF2, HX_G1 = GAD_HX_G1, HX_G2 = GAD_HX_G2,
    HX_G3 = GAD_HX_G3, HX_G4 = GAD_HX_G4, HX_NIN = GAD_HX_NIN, HX_A = GAD_HX_A,
    HX_F1 = GAD_HX_F1, HX_NSAVE = GAD_HX_NSAVE, HX_NALL = GAD_HX_NALL
};

static const char *const helix_names[HX_NIN] = {"x",  "wa",  "wb", "wo", "wf1",
                                                "wf2", "g1", "g2", "g3", "g4"};

/* The inputs in gad_helix_weights' order, and their shapes checked. */
static int helix_inputs(const char *op, gad_tensor *x, const gad_helix_weights *w,
                        gad_tensor **in) {
    if (!x || !w) return (gad__null_arg(op), -1); /* x is checked below */
    gad_tensor *const list[HX_NIN] = {x, w->wa, w->wb, w->wo, w->wf1, w->wf2,
                                      w->g1, w->g2, w->g3, w->g4};
    for (int i = 0; i < HX_NIN; i++) {
        if (gad__bad_tensor(list[i])) return (gad__bad_arg(op, list[i]), -1);
        in[i] = list[i];
    }
    if (gad__need_floating(op, x) || need_rank(op, "x", x, 3) || same_devs(op, in, HX_NIN))
        return -1;
    int64_t D = x->shape[2];
    const int64_t shapes[HX_NIN][2] = {{0, 0},     {D + 1, D}, {D, D}, {D, D}, {D, 2 * D},
                                       {2 * D, D}, {D, 0},     {D, 0}, {D, 0}, {D, 0}};
    for (int i = 1; i < HX_NIN; i++) {
        if (gad__need_same_dtype(op, x, in[i])) return -1;
        if (need_shape(op, helix_names[i], in[i], shapes[i], i >= HX_G1 ? 1 : 2)) return -1;
    }
    return 0;
}

/* The block's equations (docs/helix.md) as ordinary ops, with the ones
 * column built explicitly. */
static gad_tensor *helix_compose(gad_tensor *const *in, double eps) {
    gad_tensor *x = in[HX_X];
    int64_t B = x->shape[0], T = x->shape[1];
    gad_tensor *xn = gad_mul(gad__rms_norm_unfused(x, eps), in[HX_G1]);
    gad_tensor *ones = gad__full_on(x->dev, (int64_t[]){B, T, 1}, 3, x->dtype, 1);
    gad_tensor *xna = gad_cat((gad_tensor *[]){xn, ones}, 2, -1);
    gad_tensor *a = gad_sigmoid(gad_matmul(xna, in[HX_WA]));
    gad_tensor *h = gad__gated_scan_unfused(a, gad_matmul(xn, in[HX_WB]));
    gad_tensor *s2 = gad_silu(gad_mul(h, in[HX_G2]));
    gad_tensor *out1 = gad_add(x, gad_matmul(s2, in[HX_WO]));
    gad_tensor *xn2 = gad_mul(gad__rms_norm_unfused(out1, eps), in[HX_G3]);
    gad_tensor *f2 = gad_matmul(gad_silu(gad_matmul(xn2, in[HX_WF1])), in[HX_WF2]);
    return gad_add(out1, gad_mul(f2, in[HX_G4]));
}

gad_tensor *gad__helix_block_unfused(gad_tensor *x, const gad_helix_weights *w, double eps) {
    gad_tensor *in[HX_NIN];
    if (helix_inputs("helix_block", x, w, in) || check_eps("helix_block", eps)) return NULL;
    gad_scope_begin();
    gad_tensor *y = gad_keep(helix_compose(in, eps));
    gad_scope_end();
    return y;
}

/* gad_helix_block on its inputs in[] (helix_inputs' order). */
static gad_tensor *helix_call(gad_tensor *const *in, double eps) {
    gad_helix_weights w = {.wa = in[1], .wb = in[2], .wo = in[3], .wf1 = in[4], .wf2 = in[5],
                           .g1 = in[6], .g2 = in[7], .g3 = in[8], .g4 = in[9]};
    return gad_helix_block(in[0], &w, eps);
}

gad_tensor *gad_helix_block(gad_tensor *x, const gad_helix_weights *w, double eps) {
    const char *op = "helix_block";
    gad_tensor *in[HX_NIN];
    if (helix_inputs(op, x, w, in)) return NULL;
    GAD_HALF_VIA_F32_UNLESS(helix, x, op, in, HX_NIN, helix_call(in, eps));
    if (check_eps(op, eps) || GAD_LACKS_FAM(op, x, helix, fwd)) return NULL;
    int64_t B = x->shape[0], T = x->shape[1], D = x->shape[2];
    gad_tensor *y = gad__tensor_like(op, x);
    if (!y) return NULL;
    gad_tensor *all[HX_NALL];
    int ok = 1;
    gad_scope_begin();
    for (int i = 0; i < HX_NIN && ok; i++) ok = (all[i] = packed(op, in[i])) != NULL;
    for (int i = HX_A; i < HX_NALL && ok; i++) {
        int64_t shp[3] = {B, T, i == HX_F1 ? 2 * D : D};
        ok = (all[i] = gad__own(gad__tensor_new(op, x->dev, x->dtype, shp, 3))) != NULL;
    }
    if (ok) ok = GAD_BE(x)->helix->fwd(op, all, y, eps) == 0;
    if (ok) { /* the node saves the inputs themselves and the buffers */
        for (int i = 0; i < HX_NIN; i++) all[i] = in[i];
        y = gad__track(y, GAD_OP(HELIX_BLOCK), in, HX_NIN, all, HX_NSAVE);
        if (y && y->node) GAD_NODE_P(y->node, eps)->eps = eps;
    } else {
        gad_release(y);
        y = NULL;
    }
    gad_scope_end();
    return gad__own(y);
}

int gad__vjp_helix_block(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    double eps = GAD_NODE_P(n, eps)->eps;
    if (gad_grad_enabled()) {
        gad_tensor *in[HX_NIN];
        for (int i = 0; i < HX_NIN; i++)
            if (!(in[i] = gad__saved(n, i))) return -1;
        return gad__vjp_composed(n, gy, need, gin, helix_compose(in, eps));
    }
    if (GAD_LACKS_FAM("helix_block", gy, helix, bwd)) return -1;
    gad_tensor *pk[HX_NSAVE], *g = packed("helix_block", gy);
    for (int i = 0; i < HX_NSAVE; i++)
        if (!(pk[i] = packed("helix_block", n->saved[i]))) return -1;
    for (int i = 0; i < HX_NIN; i++) {
        gin[i] = NULL;
        if (need[i] && !(gin[i] = gad__own(gad__tensor_like("helix_block", n->saved[i]))))
            return -1;
    }
    if (!g) return -1;
    return GAD_BE(g)->helix->bwd("helix_block", pk, g, gin, eps);
}

/* ================================================================ samples */

static gad_tensor *apply_fused(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    (void)n;
    switch (s->i[0]) {
    case GAD_OP_GATED_SCAN: return gad_gated_scan(in[0], in[1]);
    case GAD_OP_RMS_NORM: return gad_rms_norm(in[0], s->d[0]);
    case GAD_OP_MASKED_CE: return gad_masked_ce(in[0], in[1], in[2]);
    case GAD_OP_EMBEDDING_FUSED: return gad_embedding_fused(in[0], in[1]);
    default: {
        gad_helix_weights w = {in[1], in[2], in[3], in[4], in[5],
                               in[6], in[7], in[8], in[9]};
        return gad_helix_block(in[0], &w, s->d[0]);
    }
    }
}

int gad__sample_gated_scan(gad_op_sample *s, gad_rng *r, int v) {
    static const int64_t shapes[][3] = {{2, 5, 3}, {1, 1, 4}, {3, 4, 1}, {2, 0, 3}, {1, 9, 70}};
    if (v >= 5) return 0;
    *s = (gad_op_sample){.n = 2, .apply = apply_fused, .smooth = 1};
    s->i[0] = GAD_OP_GATED_SCAN;
    s->in[0] = gad__sample_leaf(r, shapes[v], 3, 0.2, 0.95, 0);
    s->in[1] = gad__sample_leaf(r, shapes[v], 3, -1, 1, 0);
    gad__shape_str(s->what, shapes[v], 3);
    return s->in[0] && s->in[1];
}

int gad__sample_rms_norm(gad_op_sample *s, gad_rng *r, int v) {
    static const int64_t shapes[][3] = {{3, 6, 0}, {4, 0, 0}, {2, 1, 5}, {2, 0, 3}};
    static const int ranks[] = {2, 1, 3, 2};
    if (v >= 4) return 0;
    *s = (gad_op_sample){.n = 1, .apply = apply_fused, .smooth = 1};
    s->i[0] = GAD_OP_RMS_NORM;
    s->d[0] = 1e-5;
    s->in[0] = gad__sample_leaf(r, shapes[v], ranks[v], -1.5, 1.5, 0.2);
    gad__shape_str(s->what, shapes[v], ranks[v]);
    return s->in[0] != NULL;
}

int gad__sample_masked_ce(gad_op_sample *s, gad_rng *r, int v) {
    static const int64_t nv[][2] = {{5, 6}, {4, 5}, {1, 3}};
    static const double masks[][5] = {{1, 0, 1, 1, 0}, {1, -0.75, 0, 0.4, 0}, {2, 0, 0, 0, 0}};
    if (v >= 3) return 0;
    int64_t N = nv[v][0], V = nv[v][1];
    *s = (gad_op_sample){.n = 3, .apply = apply_fused, .smooth = 1};
    s->i[0] = GAD_OP_MASKED_CE;
    s->in[0] = gad__sample_leaf(r, nv[v], 2, -2, 2, 0);
    s->in[1] = gad_rng_int_tensor(r, &N, 1, 0, V);
    s->in[2] = gad_from_f64(masks[v], &N, 1);
    snprintf(s->what, sizeof s->what, "N=%lld V=%lld", (long long)N, (long long)V);
    return s->in[0] && s->in[1] && s->in[2];
}

int gad__sample_embedding_fused(gad_op_sample *s, gad_rng *r, int v) {
    static const int64_t ishape[][2] = {{6, 0}, {2, 3}, {0, 0}};
    static const int iranks[] = {1, 2, 0};
    if (v >= 3) return 0;
    *s = (gad_op_sample){.n = 2, .apply = apply_fused, .smooth = 1};
    s->i[0] = GAD_OP_EMBEDDING_FUSED;
    s->in[0] = gad__sample_leaf(r, (int64_t[]){5, 4}, 2, -2, 2, 0);
    s->in[1] = gad_rng_int_tensor(r, ishape[v], iranks[v], 0, 5); /* duplicates too */
    gad__shape_str(s->what, ishape[v], iranks[v]);
    return s->in[0] && s->in[1];
}

int gad__sample_helix_block(gad_op_sample *s, gad_rng *r, int v) {
    static const int64_t btd[][3] = {{2, 3, 4}, {1, 5, 2}};
    if (v >= 2) return 0;
    int64_t B = btd[v][0], T = btd[v][1], D = btd[v][2];
    *s = (gad_op_sample){.n = HX_NIN, .apply = apply_fused, .smooth = 1};
    s->i[0] = GAD_OP_HELIX_BLOCK;
    s->d[0] = 1e-5;
    const int64_t shapes[HX_NIN][3] = {{B, T, D}, {D + 1, D}, {D, D}, {D, D}, {D, 2 * D},
                                       {2 * D, D}, {D},       {D},    {D},    {D}};
    const int ranks[HX_NIN] = {3, 2, 2, 2, 2, 2, 1, 1, 1, 1};
    for (int i = 0; i < HX_NIN; i++) {
        double lo = i >= HX_G1 ? 0.5 : -0.8, hi = i >= HX_G1 ? 1.5 : 0.8;
        if (!(s->in[i] = gad__sample_leaf(r, shapes[i], ranks[i], lo, hi, 0))) return 0;
    }
    snprintf(s->what, sizeof s->what, "B=%lld T=%lld D=%lld", (long long)B, (long long)T,
             (long long)D);
    return 1;
}
