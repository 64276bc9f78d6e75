/* conv.c: convolution (gad_conv1d/2d/3d) and transposed convolution
 * (gad_conv_transpose1d/2d/3d), PyTorch's functional conventions (SPEC
 * §3.10). Three tracked ops carry them, each the others' gradient, so that
 * every derivative is again made of tracked ops (twice differentiable):
 *   conv           (x, w)  -> y   the convolution
 *   conv_transpose (g, w)  -> z   its transpose: conv's input gradient
 *   conv_weight    (x, g)  -> dw  conv's weight gradient
 * A node keeps the geometry as 3-D (a 1-D or 2-D one has size-1 leading
 * dims) and the one spatial size its inputs do not give. The back end's
 * conv family (backend/conv.h) makes the products, with the bias added in
 * conv's and conv_transpose's (an optional third input). */
#include "ops_int.h"
#include "backend/conv.h"

#include <stdio.h>
#include <string.h>

enum { K_CONV, K_TRANS, K_WEIGHT };
static const char *const kind_name[3] = {"conv", "conv_transpose", "conv_weight"};

/* The 3-D spatial sizes of t's dims from 2 on (nd of them), leading 1s. */
static void spatial3(const gad_tensor *t, int nd, int64_t s[3]) {
    for (int d = 0; d < 3; d++) s[d] = d < 3 - nd ? 1 : t->shape[2 + d - (3 - nd)];
}
static void spatial3_of(const int64_t *shape, int nd, int64_t s[3]) {
    for (int d = 0; d < 3; d++) s[d] = d < 3 - nd ? 1 : shape[2 + d - (3 - nd)];
}

/* One of the three ops on a (x or g) and b (w or g), geometry p; packed
 * inputs of one float dtype and device, shapes already consistent. */
static gad_tensor *conv_kind(const char *op, int kind, gad_tensor *a, gad_tensor *b,
                             gad_tensor *bias, const gad_np_conv *p) {
    if (!a || !b) return NULL;
    gad_tensor *hin[3] = {a, b, bias}; /* half precision (issue 29) */
    GAD_HALF_VIA_F32(op, hin, 3, conv_kind(op, kind, hin[0], hin[1], hin[2], p));
    if (GAD_UNLIKELY(a->dev != b->dev)) return gad__err_device(op, a->dev, b->dev);
    int nd = (int)p->nd;
    if (GAD_LACKS_FAM(op, a, conv, fwd) || GAD_LACKS_FAM(op, a, conv, bwd_data) ||
        GAD_LACKS_FAM(op, a, conv, bwd_weight))
        return NULL;
    gad_conv_geom g = {.groups = p->groups};
    for (int d = 0; d < 3; d++) {
        g.stride[d] = p->stride[d];
        g.pad[d] = p->pad[d];
        g.dil[d] = p->dil[d];
    }
    int64_t shape[GAD_MAX_RANK];
    if (kind == K_CONV) { /* x [N, Cin, in], w [Cout, Cin/G, k] */
        g.n = a->shape[0], g.cin = a->shape[1], g.cout = b->shape[0];
        spatial3(a, nd, g.in), spatial3(b, nd, g.k);
        memcpy(g.out, p->size, sizeof g.out);
        shape[0] = g.n, shape[1] = g.cout;
    } else if (kind == K_TRANS) { /* g [N, Cout, out], w [Cout, Cin/G, k] */
        g.n = a->shape[0], g.cout = a->shape[1], g.cin = b->shape[1] * g.groups;
        spatial3(a, nd, g.out), spatial3(b, nd, g.k);
        memcpy(g.in, p->size, sizeof g.in);
        shape[0] = g.n, shape[1] = g.cin;
    } else { /* x [N, Cin, in], g [N, Cout, out] */
        g.n = a->shape[0], g.cin = a->shape[1], g.cout = b->shape[1];
        spatial3(a, nd, g.in), spatial3(b, nd, g.out);
        memcpy(g.k, p->size, sizeof g.k);
        shape[0] = g.cout, shape[1] = g.cin / g.groups;
    }
    for (int d = 0; d < nd; d++) shape[2 + d] = p->size[3 - nd + d];
    gad_tensor *y = gad__tensor_new(op, a->dev, a->dtype, shape, nd + 2);
    if (!y) return NULL;
    gad_scope_begin();
    gad_tensor *ap = gad__own(gad__contig(op, a)), *bp = gad__own(gad__contig(op, b));
    gad_tensor *cp = bias ? gad__own(gad__contig(op, bias)) : NULL;
    const gad_be_conv *be = GAD_BE(a)->conv;
    int rc = !ap || !bp || (bias && !cp) ? -1
             : kind == K_CONV  ? be->fwd(op, ap, bp, cp, y, &g)
             : kind == K_TRANS ? be->bwd_data(op, ap, bp, cp, y, &g)
                               : be->bwd_weight(op, ap, bp, y, &g);
    gad_scope_end();
    if (rc) {
        gad_release(y);
        return NULL;
    }
    static const gad_op_info *const info[3] = {GAD_OP(CONV), GAD_OP(CONV_TRANSPOSE),
                                               GAD_OP(CONV_WEIGHT)};
    gad_tensor *in[3] = {a, b, bias};
    y = gad__track(y, info[kind], in, bias ? 3 : 2, in, 2);
    if (y && y->node) *GAD_NODE_P(y->node, conv) = *p;
    return gad__own(y);
}

/* The parent i's 3-D spatial sizes (its shape is on its node). */
static void parent_spatial(const gad_node *n, int i, int nd, int64_t s[3]) {
    spatial3_of(n->parents[i]->shape, nd, s);
}

static int conv_vjp(int kind, gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    gad_np_conv p = *GAD_NODE_P(n, conv);
    int nd = (int)p.nd;
    gad_tensor *a = gad__saved(n, 0), *b = gad__saved(n, 1);
    if (!a || !b) return -1;
    const char *op = kind_name[kind];
    gad_np_conv q = p;
    if (kind == K_CONV) { /* y = conv(x, w) */
        if (need[0]) {
            parent_spatial(n, 0, nd, q.size);
            if (!(gin[0] = conv_kind(op, K_TRANS, gy, b, NULL, &q))) return -1;
        }
        if (need[1]) {
            parent_spatial(n, 1, nd, q.size);
            if (!(gin[1] = conv_kind(op, K_WEIGHT, a, gy, NULL, &q))) return -1;
        }
    } else if (kind == K_TRANS) { /* z = conv_transpose(g, w) */
        if (need[0]) {
            parent_spatial(n, 0, nd, q.size);
            if (!(gin[0] = conv_kind(op, K_CONV, gy, b, NULL, &q))) return -1;
        }
        if (need[1]) {
            parent_spatial(n, 1, nd, q.size);
            if (!(gin[1] = conv_kind(op, K_WEIGHT, gy, a, NULL, &q))) return -1;
        }
    } else { /* dw = conv_weight(x, g) */
        if (need[0]) {
            parent_spatial(n, 0, nd, q.size);
            if (!(gin[0] = conv_kind(op, K_TRANS, b, gy, NULL, &q))) return -1;
        }
        if (need[1]) {
            parent_spatial(n, 1, nd, q.size);
            if (!(gin[1] = conv_kind(op, K_CONV, a, gy, NULL, &q))) return -1;
        }
    }
    /* a bias (conv, conv_transpose) gets gy summed over the batch and the
     * spatial dims */
    if (n->nparents == 3 && need[2]) {
        int axes[4] = {0, 2, 3, 4};
        if (!(gin[2] = gad_sum(gy, axes, nd + 1, 0))) return -1;
    }
    return 0;
}

int gad__vjp_conv(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    return conv_vjp(K_CONV, n, gy, need, gin);
}
int gad__vjp_conv_transpose(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    return conv_vjp(K_TRANS, n, gy, need, gin);
}
int gad__vjp_conv_weight(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    return conv_vjp(K_WEIGHT, n, gy, need, gin);
}

/* ---------------------------------------------------------- public ops */

/* "(a x b x c)" of the nd values v. */
static const char *dims_str(char *buf, size_t cap, const int64_t *v, int nd) {
    size_t k = (size_t)snprintf(buf, cap, "(");
    for (int d = 0; d < nd && k < cap; d++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", d ? " x " : "", (long long)v[d]);
    if (k < cap) snprintf(buf + k, cap - k, ")");
    return buf;
}

/* Checks common to conv and conv_transpose: tensors, dtypes, devices,
 * ranks, options. Fills p's stride, dilation, groups and nd. On success
 * *xb is x with a batch dim (added for an unbatched x, *unbatched set). */
static int conv_common(const char *op, int nd, gad_tensor *x, gad_tensor *w, gad_tensor *bias,
                       const gad_conv_opts *o, gad_np_conv *p, gad_tensor **xb,
                       int *unbatched) {
    if (gad__bad_tensor(x) || gad__bad_tensor(w) || (bias && gad__bad_tensor(bias))) {
        gad__bad_of(op, bias ? 3 : 2, (const gad_tensor *const[]){x, w, bias});
        return -1;
    }
    if (gad__need_floating(op, x) || gad__need_same_dtype(op, x, w) ||
        (bias && gad__need_same_dtype(op, x, bias)))
        return -1;
    if (GAD_UNLIKELY(w->dev != x->dev)) return (gad__err_device(op, x->dev, w->dev), -1);
    if (bias && GAD_UNLIKELY(bias->dev != x->dev))
        return (gad__err_device(op, x->dev, bias->dev), -1);
    char s1[GAD_SHAPE_BUF], s2[GAD_SHAPE_BUF];
    if (x->rank != nd + 1 && x->rank != nd + 2) {
        gad__err(GAD_ERR_SHAPE, op, "expected %dD (unbatched) or %dD (batched) input, got %s",
                 nd + 1, nd + 2, gad__shape_str(s1, x->shape, x->rank));
        return -1;
    }
    if (w->rank != nd + 2) {
        gad__err(GAD_ERR_SHAPE, op, "expected %d-dimensional weight for input %s, got weight %s",
                 nd + 2, gad__shape_str(s1, x->shape, x->rank),
                 gad__shape_str(s2, w->shape, w->rank));
        return -1;
    }
    gad_conv_opts zero = {0};
    if (!o) o = &zero;
    memset(p, 0, sizeof *p);
    p->nd = nd;
    p->groups = o->groups ? o->groups : 1;
    if (p->groups < 0) {
        gad__err(GAD_ERR_DOMAIN, op, "non-positive groups is not supported (got %lld)",
                 (long long)o->groups);
        return -1;
    }
    for (int d = 0; d < 3; d++) p->stride[d] = p->dil[d] = 1;
    for (int d = 0; d < nd; d++) {
        int e = 3 - nd + d;
        int64_t s = o->stride[d] ? o->stride[d] : 1, di = o->dilation[d] ? o->dilation[d] : 1;
        if (s < 0 || di < 0) {
            gad__err(GAD_ERR_DOMAIN, op, "non-positive %s is not supported (dim %d: %lld)",
                     s < 0 ? "stride" : "dilation", d, (long long)(s < 0 ? s : di));
            return -1;
        }
        if (o->padding[d] < 0) {
            gad__err(GAD_ERR_DOMAIN, op, "negative padding is not supported (dim %d: %lld)", d,
                     (long long)o->padding[d]);
            return -1;
        }
        p->stride[e] = s, p->dil[e] = di;
    }
    if (o->padding_mode != GAD_CONV_PAD_EXPLICIT && o->padding_mode != GAD_CONV_PAD_VALID &&
        o->padding_mode != GAD_CONV_PAD_SAME) {
        gad__err(GAD_ERR_DOMAIN, op, "unknown padding mode %d", (int)o->padding_mode);
        return -1;
    }
    *unbatched = x->rank == nd + 1;
    *xb = *unbatched ? gad_unsqueeze(x, 0) : x;
    return *xb ? 0 : -1;
}

/* bias: [c] or NULL, c the output's channels. */
static int check_bias(const char *op, gad_tensor *bias, int64_t c, const gad_tensor *w) {
    if (!bias) return 0;
    if (bias->rank != 1 || bias->shape[0] != c) {
        char s1[GAD_SHAPE_BUF], s2[GAD_SHAPE_BUF];
        gad__err(GAD_ERR_SHAPE, op,
                 "given weight of size %s, expected bias to be 1-dimensional with %lld "
                 "elements, but got bias of size %s instead",
                 gad__shape_str(s1, w->shape, w->rank), (long long)c,
                 gad__shape_str(s2, bias->shape, bias->rank));
        return -1;
    }
    return 0;
}

static gad_tensor *finish(gad_tensor *y, int unbatched) {
    return y && unbatched ? gad_squeeze(y, 0) : y;
}

static gad_tensor *conv_nd(const char *op, int nd, gad_tensor *x, gad_tensor *w,
                           gad_tensor *bias, const gad_conv_opts *o) {
    GAD_COMPOSITE(op); /* its unbatched views name it */
    gad_np_conv p;
    gad_tensor *xb;
    int unb;
    if (conv_common(op, nd, x, w, bias, o, &p, &xb, &unb)) return NULL;
    char s1[GAD_SHAPE_BUF], s2[GAD_SHAPE_BUF];
    int64_t G = p.groups, cin = xb->shape[1], cout = w->shape[0];
    if (cout % G) {
        gad__err(GAD_ERR_SHAPE, op,
                 "given groups=%lld, expected weight to be divisible by %lld at dimension 0, "
                 "but got weight of size %s instead",
                 (long long)G, (long long)G, gad__shape_str(s1, w->shape, w->rank));
        return NULL;
    }
    if (w->shape[1] * G != cin) {
        gad__err(GAD_ERR_SHAPE, op,
                 "given groups=%lld, weight of size %s, expected input %s to have %lld "
                 "channels, but got %lld channels instead",
                 (long long)G, gad__shape_str(s1, w->shape, w->rank),
                 gad__shape_str(s2, xb->shape, xb->rank), (long long)(w->shape[1] * G),
                 (long long)cin);
        return NULL;
    }
    int mode = o ? (int)o->padding_mode : 0;
    int64_t padded[3], eff[3];
    for (int d = 0; d < nd; d++) {
        int e = 3 - nd + d;
        int64_t in = xb->shape[2 + d], k = w->shape[2 + d], ext = p.dil[e] * (k - 1);
        if (mode == GAD_CONV_PAD_SAME && p.stride[e] != 1) {
            gad__err(GAD_ERR_DOMAIN, op,
                     "padding='same' is not supported for strided convolutions");
            return NULL;
        }
        /* "same": the total d(k-1) split with the extra one on the right, as
         * PyTorch does for an even kernel */
        p.pad[e] = mode == GAD_CONV_PAD_SAME ? ext / 2
                   : mode == GAD_CONV_PAD_VALID ? 0 : (o ? o->padding[d] : 0);
        padded[d] = mode == GAD_CONV_PAD_SAME ? in + ext : in + 2 * p.pad[e];
        eff[d] = ext + 1;
    }
    for (int d = 0; d < nd; d++)
        if (padded[d] < eff[d]) {
            char b1[96], b2[96];
            gad__err(GAD_ERR_SHAPE, op,
                     "calculated padded input size per channel: %s; kernel size (dilated): %s; "
                     "kernel size can't be greater than actual input size",
                     dims_str(b1, sizeof b1, padded, nd), dims_str(b2, sizeof b2, eff, nd));
            return NULL;
        }
    for (int d = 0; d < nd; d++) {
        int e = 3 - nd + d;
        p.size[e] = (padded[d] - eff[d]) / p.stride[e] + 1;
    }
    for (int e = 0; e < 3 - nd; e++) p.size[e] = 1;
    if (check_bias(op, bias, cout, w)) return NULL;
    return finish(conv_kind(op, K_CONV, xb, w, bias, &p), unb);
}

static gad_tensor *conv_transpose_nd(const char *op, int nd, gad_tensor *x, gad_tensor *w,
                                     gad_tensor *bias, const gad_conv_opts *o) {
    GAD_COMPOSITE(op);
    gad_np_conv p;
    gad_tensor *xb;
    int unb;
    if (conv_common(op, nd, x, w, bias, o, &p, &xb, &unb)) return NULL;
    char s1[GAD_SHAPE_BUF], s2[GAD_SHAPE_BUF];
    if (o && o->padding_mode != GAD_CONV_PAD_EXPLICIT) {
        gad__err(GAD_ERR_DOMAIN, op, "takes explicit padding only (got padding mode %s)",
                 o->padding_mode == GAD_CONV_PAD_SAME ? "'same'" : "'valid'");
        return NULL;
    }
    int64_t G = p.groups, cin = xb->shape[1];
    if (w->shape[0] % G) {
        gad__err(GAD_ERR_SHAPE, op,
                 "given groups=%lld, expected weight to be divisible by %lld at dimension 0, "
                 "but got weight of size %s instead",
                 (long long)G, (long long)G, gad__shape_str(s1, w->shape, w->rank));
        return NULL;
    }
    if (w->shape[0] != cin) {
        gad__err(GAD_ERR_SHAPE, op,
                 "given transposed=1, weight of size %s, expected input %s to have %lld "
                 "channels, but got %lld channels instead",
                 gad__shape_str(s1, w->shape, w->rank), gad__shape_str(s2, xb->shape, xb->rank),
                 (long long)w->shape[0], (long long)cin);
        return NULL;
    }
    for (int d = 0; d < nd; d++) {
        int e = 3 - nd + d;
        int64_t op_ = o ? o->output_padding[d] : 0;
        if (op_ < 0 || (op_ >= p.stride[e] && op_ >= p.dil[e])) {
            gad__err(GAD_ERR_DOMAIN, op,
                     "output padding must be smaller than either stride or dilation, but got "
                     "output_padding %lld, stride %lld, dilation %lld (dim %d)",
                     (long long)op_, (long long)p.stride[e], (long long)p.dil[e], d);
            return NULL;
        }
    }
    for (int d = 0; d < nd; d++) {
        int e = 3 - nd + d;
        int64_t op_ = o ? o->output_padding[d] : 0;
        p.pad[e] = o ? o->padding[d] : 0;
        int64_t out = (xb->shape[2 + d] - 1) * p.stride[e] - 2 * p.pad[e] +
                      p.dil[e] * (w->shape[2 + d] - 1) + op_ + 1;
        if (out <= 0) {
            gad__err(GAD_ERR_SHAPE, op,
                     "output size %lld is too small (dim %d of input %s, weight %s)",
                     (long long)out, d, gad__shape_str(s1, xb->shape, xb->rank),
                     gad__shape_str(s2, w->shape, w->rank));
            return NULL;
        }
        p.size[e] = out;
    }
    for (int e = 0; e < 3 - nd; e++) p.size[e] = 1;
    if (check_bias(op, bias, w->shape[1] * G, w)) return NULL;
    return finish(conv_kind(op, K_TRANS, xb, w, bias, &p), unb);
}

gad_tensor *gad_conv1d(gad_tensor *x, gad_tensor *w, gad_tensor *bias,
                       const gad_conv_opts *opts) {
    return conv_nd("conv1d", 1, x, w, bias, opts);
}
gad_tensor *gad_conv2d(gad_tensor *x, gad_tensor *w, gad_tensor *bias,
                       const gad_conv_opts *opts) {
    return conv_nd("conv2d", 2, x, w, bias, opts);
}
gad_tensor *gad_conv3d(gad_tensor *x, gad_tensor *w, gad_tensor *bias,
                       const gad_conv_opts *opts) {
    return conv_nd("conv3d", 3, x, w, bias, opts);
}
gad_tensor *gad_conv_transpose1d(gad_tensor *x, gad_tensor *w, gad_tensor *bias,
                                 const gad_conv_opts *opts) {
    return conv_transpose_nd("conv_transpose1d", 1, x, w, bias, opts);
}
gad_tensor *gad_conv_transpose2d(gad_tensor *x, gad_tensor *w, gad_tensor *bias,
                                 const gad_conv_opts *opts) {
    return conv_transpose_nd("conv_transpose2d", 2, x, w, bias, opts);
}
gad_tensor *gad_conv_transpose3d(gad_tensor *x, gad_tensor *w, gad_tensor *bias,
                                 const gad_conv_opts *opts) {
    return conv_transpose_nd("conv_transpose3d", 3, x, w, bias, opts);
}

/* ------------------------------------------------------------ samples */

/* Gradcheck cases: dims, x's shape, w's shape, options, bias. */
typedef struct conv_case {
    int nd, bias;
    int64_t x[5], w[5];
    gad_conv_opts o;
} conv_case;

static const conv_case conv_cases[] = {
    {2, 1, {2, 2, 5, 4}, {3, 2, 3, 2}, {.padding = {1, 0}}},
    {2, 0, {1, 4, 6, 5}, {4, 2, 3, 3}, {.stride = {2, 1}, .dilation = {1, 2}, .groups = 2}},
    {1, 1, {2, 3, 7}, {2, 3, 2}, {.padding_mode = GAD_CONV_PAD_SAME}},
    {2, 0, {1, 3, 4, 4}, {3, 1, 3, 3}, {.padding = {1, 1}, .groups = 3}},
    {3, 1, {1, 2, 3, 4, 3}, {2, 2, 2, 2, 2}, {.stride = {1, 2, 1}, .padding = {1, 0, 1}}},
    {2, 0, {0, 2, 3, 3}, {2, 2, 1, 1}, {.groups = 1}},
};
static const conv_case trans_cases[] = {
    {2, 1, {2, 2, 3, 3}, {2, 3, 3, 2}, {.stride = {2, 1}, .padding = {1, 0}, .output_padding = {1, 0}}},
    {1, 0, {1, 4, 5}, {4, 1, 3}, {.groups = 2, .dilation = {2}, .stride = {3}, .output_padding = {2}}},
    {3, 0, {1, 1, 2, 2, 2}, {1, 2, 2, 1, 2}, {.stride = {2, 1, 1}}},
};

static gad_tensor *apply_conv(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    const conv_case *c = &conv_cases[s->i[0]];
    gad_tensor *b = n > 2 ? in[2] : NULL;
    return c->nd == 1 ? gad_conv1d(in[0], in[1], b, &c->o)
           : c->nd == 2 ? gad_conv2d(in[0], in[1], b, &c->o)
                        : gad_conv3d(in[0], in[1], b, &c->o);
}

static gad_tensor *apply_trans(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    const conv_case *c = &trans_cases[s->i[0]];
    gad_tensor *b = n > 2 ? in[2] : NULL;
    return c->nd == 1 ? gad_conv_transpose1d(in[0], in[1], b, &c->o)
           : c->nd == 2 ? gad_conv_transpose2d(in[0], in[1], b, &c->o)
                        : gad_conv_transpose3d(in[0], in[1], b, &c->o);
}

/* conv_weight has no public function: its case is conv's weight gradient,
 * the product of x and a g of conv's output shape. */
static gad_tensor *apply_weight(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    (void)n;
    gad_np_conv p;
    memcpy(&p, &s->i[1], sizeof p);
    return conv_kind("conv_weight", K_WEIGHT, in[0], in[1], NULL, &p);
}

static int sample_case(gad_op_sample *s, gad_rng *r, const conv_case *c, int trans, int v) {
    s->n = c->bias ? 3 : 2;
    s->smooth = 1;
    s->i[0] = v;
    s->in[0] = gad__sample_leaf(r, c->x, c->nd + 2, -1, 1, 0);
    s->in[1] = gad__sample_leaf(r, c->w, c->nd + 2, -1, 1, 0);
    int64_t cout = trans ? c->w[1] * (c->o.groups ? c->o.groups : 1) : c->w[0];
    if (c->bias) s->in[2] = gad__sample_leaf(r, &cout, 1, -1, 1, 0);
    snprintf(s->what, sizeof s->what, "case #%d (%dd)", v, c->nd);
    return s->in[0] && s->in[1] && (!c->bias || s->in[2]);
}

int gad__sample_conv(gad_op_sample *s, gad_rng *r, int v) {
    if (v >= (int)(sizeof conv_cases / sizeof conv_cases[0])) return 0;
    s->apply = apply_conv;
    return sample_case(s, r, &conv_cases[v], 0, v);
}

int gad__sample_conv_transpose(gad_op_sample *s, gad_rng *r, int v) {
    if (v >= (int)(sizeof trans_cases / sizeof trans_cases[0])) return 0;
    s->apply = apply_trans;
    return sample_case(s, r, &trans_cases[v], 1, v);
}

/* x [2, 4, 5, 6], g [2, 2, 3, 2] of a stride-(2, 1), dilation-(1, 2),
 * padding-(1, 0), 2-group conv with a [2, 2, 2, 3] kernel; and a 1-D one. */
int gad__sample_conv_weight(gad_op_sample *s, gad_rng *r, int v) {
    if (v > 1) return 0;
    gad_np_conv p = {.nd = v ? 1 : 2, .groups = v ? 1 : 2};
    for (int d = 0; d < 3; d++) p.stride[d] = p.dil[d] = p.size[d] = 1;
    static const int64_t x2[] = {2, 4, 5, 6}, g2[] = {2, 2, 3, 2};
    static const int64_t x1[] = {1, 2, 6}, g1[] = {1, 3, 3};
    if (v == 0) {
        p.stride[1] = 2, p.dil[2] = 2, p.pad[1] = 1, p.size[1] = 2, p.size[2] = 3;
    } else {
        p.stride[2] = 2, p.pad[2] = 1, p.size[2] = 3;
    }
    s->n = 2;
    s->smooth = 1;
    s->apply = apply_weight;
    memcpy(&s->i[1], &p, sizeof p);
    s->in[0] = gad__sample_leaf(r, v ? x1 : x2, v ? 3 : 4, -1, 1, 0);
    s->in[1] = gad__sample_leaf(r, v ? g1 : g2, v ? 3 : 4, -1, 1, 0);
    snprintf(s->what, sizeof s->what, "case #%d", v);
    return s->in[0] && s->in[1];
}
