/* linear.c: linear layers as one tape node, y = act(x @ w + b)
 * (gad_linear_act, and gad_linear through it): the product is gad_matmul's,
 * the bias and the activation one pass of the back end's linear family
 * (backend/linear.h) over the product while it is in cache, and the
 * backward one pass of that family (the activation's derivative and b's
 * gradient together) before its two products. The composition it replaces,
 * gad_relu(gad_add(gad_matmul(x, w), b)) and its kind, is linear_unfused
 * below: it runs where the fused node does not (f16/bf16, a 1-D x) and
 * under GAD_CREATE_GRAPH, whose VJP is taken through it. */
#include "ops_int.h"
#include "backend/linear.h"

#include <stdio.h>

/* x @ w + b, then act, as tracked ops */
static gad_tensor *linear_unfused(gad_tensor *x, gad_tensor *w, gad_tensor *b, int act) {
    gad_tensor *y = gad_matmul(x, w); /* a 1-D x gives [out] (D2) */
    if (b) y = gad_add(y, b);
    switch (act) {
    case GAD_ACT_RELU: return gad_relu(y);
    case GAD_ACT_GELU: return gad_gelu(y);
    case GAD_ACT_GELU_ERF: return gad_gelu_erf(y);
    case GAD_ACT_SILU: return gad_silu(y);
    default: return y;
    }
}

static const char *dt_name(const gad_tensor *t) { return gad_dtype_name(t->dtype); }

/* gad_linear's checks, its messages under op */
static int lin_check(const char *op, gad_tensor *x, gad_tensor *w, gad_tensor *b, int act) {
    if (!x || !w) return (gad_error_set(GAD_ERR_DOMAIN, op, "x or w is NULL"), -1);
    if (GAD_LIVE(op, x, w, b)) return -1;
    if ((unsigned)act > GAD_ACT_SILU)
        return (gad_error_set(GAD_ERR_DOMAIN, op,
                              "act %d is not a gad_act (GAD_ACT_NONE .. GAD_ACT_SILU)", act),
                -1);
    /* f16/bf16 x and w too: the product is gad_matmul's (issue 29) */
    if (!gad__is_floating(x->dtype))
        return (gad_error_set(GAD_ERR_DTYPE, op, "x must be f32 or f64, got %s", dt_name(x)), -1);
    const gad_tensor *o[2] = {w, b};
    const char *on[2] = {"w", "b"};
    for (int i = 0; i < 2; i++)
        if (o[i] && o[i]->dtype != x->dtype)
            return (gad_error_set(GAD_ERR_DTYPE, op, "%s is %s but x is %s (use gad_cast)",
                                  on[i], dt_name(o[i]), dt_name(x)),
                    -1);
    char sx[GAD_SHAPE_BUF], sw[GAD_SHAPE_BUF], sb[GAD_SHAPE_BUF];
    gad__shape_str(sx, x->shape, x->rank);
    gad__shape_str(sw, w->shape, w->rank);
    if (w->rank != 2)
        return (gad_error_set(GAD_ERR_SHAPE, op, "x %s vs w %s: w must be rank 2 [in, out]", sx,
                              sw),
                -1);
    if (x->rank < 1)
        return (gad_error_set(GAD_ERR_SHAPE, op,
                              "x %s vs w %s: x must have rank >= 1 [..., in]", sx, sw),
                -1);
    int64_t in = x->shape[x->rank - 1];
    if (in != w->shape[0])
        return (gad_error_set(GAD_ERR_SHAPE, op, "x %s vs w %s: x [..., %lld] needs w [%lld, out]",
                              sx, sw, (long long)in, (long long)in),
                -1);
    if (b && (b->rank != 1 || b->shape[0] != w->shape[1]))
        return (gad_error_set(GAD_ERR_SHAPE, op, "b %s must be [%lld] (w %s)",
                              gad__shape_str(sb, b->shape, b->rank), (long long)w->shape[1], sw),
                -1);
    return 0;
}

/* The saved tensors: the inputs, and what the backward's pass reads (the
 * output for RELU, the pre-activation for the smooth activations). NONE and
 * RELU keep only what their first derivatives need, as gad_matmul does (x
 * for w's gradient, w for x's), so that an optimizer step taken while the
 * graph lives copies no parameter it need not: their VJP is written with
 * tracked ops, differentiable as it stands (relu's mask is a constant). The
 * smooth ones keep x, w and b for the composition that GAD_CREATE_GRAPH
 * differentiates. */
enum { LIN_X, LIN_W, LIN_B, LIN_V, LIN_NSAVE };

static bool lin_smooth(int act) { return act != GAD_ACT_NONE && act != GAD_ACT_RELU; }

gad_tensor *gad__linear(const char *op, gad_tensor *x, gad_tensor *w, gad_tensor *b, int act) {
    if (lin_check(op, x, w, b, act)) return NULL;
    gad_tensor *in[3] = {x, w, b};
    const gad_backend *be = GAD_BE(x);
    bool fused = x->rank >= 2 && !gad__is_half(x->dtype) && w->dev == x->dev &&
                 (!b || b->dev == x->dev);
    bool have = be->linear && be->linear->fwd && be->linear->bwd;
    /* gad_linear runs wherever gad_matmul and gad_add do; the fused op
     * itself needs the family (backend.h's rule) */
    if (fused && !have && act != GAD_ACT_NONE &&
        (GAD_LACKS_FAM(op, x, linear, fwd) || GAD_LACKS_FAM(op, x, linear, bwd)))
        return NULL;
    if (!fused || !have) {
        gad_scope_begin();
        gad_tensor *y = gad_keep(linear_unfused(x, w, b, act));
        gad_scope_end();
        return y;
    }
    gad_scope_begin();
    gad_no_grad_begin();
    gad_tensor *z = gad_matmul(x, w), *bp = b ? gad__own(gad__contig(op, b)) : NULL;
    gad_no_grad_end();
    gad_tensor *y = NULL; /* not owned by a scope until tracked */
    if (z && (!b || bp)) {
        if (act == GAD_ACT_NONE || act == GAD_ACT_RELU) y = gad_retain(z);
        else y = gad__tensor_like(op, z);
    }
    if (y) be->linear->fwd(z, bp, act, y);
    bool sm = lin_smooth(act);
    gad_tensor *save[LIN_NSAVE] = {sm || w->node ? x : NULL, sm || x->node ? w : NULL,
                                   sm ? b : NULL,
                                   act == GAD_ACT_NONE ? NULL : act == GAD_ACT_RELU ? y : z};
    if (y) y = gad__track(y, GAD_OP(LINEAR_ACT), in, 3, save, LIN_NSAVE);
    gad_scope_end();
    if (y && y->node) GAD_NODE_P(y->node, act)->act = act;
    return gad__own(y);
}

gad_tensor *gad_linear_act(gad_tensor *x, gad_tensor *w, gad_tensor *b, gad_act act) {
    GAD_COMPOSITE("linear_act");
    return gad__linear("linear_act", x, w, b, (int)act);
}

/* gin[0] = gz w^T and gin[1] = x^T gz (x's rows stacked), as gad_matmul's
 * VJP takes them, with tracked ops */
static int lin_products(gad_tensor *x, gad_tensor *w, gad_tensor *gz, const bool *need,
                        gad_tensor **gin) {
    if (need[0] && !(gin[0] = gad_matmul(gz, gad_transpose(w)))) return -1;
    if (need[1]) {
        int64_t k = gad_shape(x)[gad_rank(x) - 1], out = gad_shape(gz)[gad_rank(gz) - 1];
        int64_t rows = k ? gad_numel(x) / k : 0;
        gad_tensor *x2 = gad_rank(x) == 2 ? x : gad_reshape(x, (int64_t[]){rows, k}, 2);
        gad_tensor *g2 = gad_rank(gz) == 2 ? gz : gad_reshape(gz, (int64_t[]){rows, out}, 2);
        if (!(gin[1] = gad_matmul(gad_transpose(x2), g2))) return -1;
    }
    return 0;
}

int gad__vjp_linear_act(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    const char *op = "linear_act";
    int act = (int)GAD_NODE_P(n, act)->act;
    if (gad_grad_enabled()) {
        if (lin_smooth(act)) {
            gad_tensor *b = n->saved[LIN_B] ? gad__saved(n, LIN_B) : NULL;
            return gad__vjp_composed(
                n, gy, need, gin,
                linear_unfused(gad__saved(n, LIN_X), gad__saved(n, LIN_W), b, act));
        }
        gad_tensor *gz = gy;
        if (act == GAD_ACT_RELU)
            gz = gad_mul(gy, gad__const_unary(GAD_UK_RELU_MASK, n->saved[LIN_V], 0, 0));
        if (!gz) return -1;
        if (need[2]) {
            int axes[GAD_MAX_RANK];
            for (int d = 0; d + 1 < gz->rank; d++) axes[d] = d;
            if (!(gin[2] = gad_sum(gz, axes, gz->rank - 1, 0))) return -1;
        }
        return lin_products(need[1] ? gad__saved(n, LIN_X) : NULL,
                            need[0] ? gad__saved(n, LIN_W) : NULL, gz, need, gin);
    }
    if (GAD_LACKS_FAM(op, gy, linear, bwd)) return -1;
    gad_tensor *g = gad__own(gad__contig(op, gy)), *gz = g, *db = NULL;
    if (!g) return -1;
    if (act != GAD_ACT_NONE && !(gz = gad__own(gad__tensor_like(op, g)))) return -1;
    if (need[2]) {
        int64_t out = g->shape[g->rank - 1];
        if (!(db = gad__own(gad__tensor_new(op, g->dev, g->dtype, &out, 1)))) return -1;
    }
    if ((act != GAD_ACT_NONE || db) &&
        GAD_BE(g)->linear->bwd(g, act != GAD_ACT_NONE ? n->saved[LIN_V] : NULL, act, gz, db))
        return -1;
    if (db) gin[2] = db;
    return lin_products(n->saved[LIN_X], n->saved[LIN_W], gz, need, gin);
}

static gad_tensor *apply_linear(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    return gad_linear_act(in[0], in[1], n > 2 ? in[2] : NULL, (gad_act)s->i[0]);
}

/* Every activation, with and without b, batched x, K = 0 and N = 0. The
 * pre-activations stay away from relu's kink (|x @ w| <= 0.64 < |b|), so
 * that its finite differences hold. */
int gad__sample_linear_act(gad_op_sample *s, gad_rng *r, int v) {
    static const struct {
        int act, bias, rx;
        int64_t x[3], out;
    } cs[] = {
        {GAD_ACT_RELU, 1, 2, {3, 4}, 5},     {GAD_ACT_GELU, 1, 3, {2, 3, 4}, 3},
        {GAD_ACT_GELU_ERF, 1, 2, {3, 2}, 4}, {GAD_ACT_SILU, 0, 2, {2, 3}, 2},
        {GAD_ACT_NONE, 1, 3, {2, 2, 3}, 4},  {GAD_ACT_NONE, 0, 2, {3, 4}, 2},
        {GAD_ACT_RELU, 1, 2, {3, 0}, 2},     {GAD_ACT_SILU, 1, 2, {0, 3}, 2},
    };
    if (v >= (int)(sizeof cs / sizeof cs[0])) return 0;
    int rx = cs[v].rx;
    int64_t k = cs[v].x[rx - 1], out = cs[v].out;
    *s = (gad_op_sample){.n = cs[v].bias ? 3 : 2, .apply = apply_linear, .smooth = 1};
    s->i[0] = cs[v].act;
    s->in[0] = gad__sample_leaf(r, cs[v].x, rx, -0.4, 0.4, 0);
    s->in[1] = gad__sample_leaf(r, (int64_t[]){k, out}, 2, -0.4, 0.4, 0);
    if (cs[v].bias) s->in[2] = gad__sample_leaf(r, &out, 1, -2, 2, 1);
    char sx[GAD_SHAPE_BUF];
    snprintf(s->what, sizeof s->what, "act %d x %s out %lld%s", cs[v].act,
             gad__shape_str(sx, cs[v].x, rx), (long long)out, cs[v].bias ? " with b" : "");
    return s->in[0] && s->in[1] && (!cs[v].bias || s->in[2]);
}
