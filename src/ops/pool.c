/* pool.c: pooling over the last one or two axes (SPEC §3.8), as
 * torch.nn.functional's max_pool1d/2d, avg_pool1d/2d, adaptive_avg_pool2d
 * and adaptive_max_pool2d: NCHW (NCL), a batch dim optional, PyTorch's
 * output sizes and windows. The kernels are the back end's pool family
 * (backend/pool.h); the windows of each axis are worked out here, once per
 * call, as arrays the kernels read.
 *
 * Four ops on the tape: max_pool (its VJP scatters the gradient to the
 * saved argmax positions: max_pool_backward), max_pool_backward (its VJP
 * gathers through the same positions), avg_pool and avg_pool_backward
 * (linear; each is the other's VJP), so that every pooling is twice
 * differentiable. */
#include "ops_int.h"
#include "backend/pool.h"

#include <stdio.h>

/* ------------------------------------------------------------- geometry */

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* PyTorch's pooling_output_shape: the last window must start inside the
 * input or its left padding in ceil mode. */
static int64_t out_size(int64_t n, int64_t k, int64_t s, int64_t p, int64_t d, int ceil) {
    int64_t o = floor_div(n + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0), s) + 1;
    if (ceil && (o - 1) * s >= n + p) o--;
    return o;
}

/* The windows of one axis (n_out set): the fixed ones of a kernel k,
 * stride s, padding p, dilation d, or the adaptive ones (k = 0) of PyTorch's
 * start_index/end_index: [floor(o n / m), ceil((o + 1) n / m)). mem holds
 * 3 n_out words. */
static void axis_windows(gad_pool_axis *a, int64_t k, int64_t s, int64_t p, int64_t d,
                         int exclude_pad, int64_t *mem) {
    int64_t n = a->n_in, m = a->n_out, *beg = mem, *len = mem + m, *cnt = mem + 2 * m;
    a->beg = beg;
    a->len = len;
    a->cnt = cnt;
    a->dil = k ? d : 1;
    for (int64_t o = 0; o < m; o++) {
        if (!k) {
            int64_t b = o * n / m, e = ((o + 1) * n + m - 1) / m;
            beg[o] = b;
            len[o] = cnt[o] = e - b;
            continue;
        }
        int64_t st = o * s - p; /* the first tap, maybe in the padding */
        int64_t jlo = st < 0 ? (-st + d - 1) / d : 0;
        int64_t jhi = st + (k - 1) * d < n ? k : (n - 1 - st) / d + 1;
        if (n - 1 - st < 0) jhi = 0;
        beg[o] = st + jlo * d;
        len[o] = jhi > jlo ? jhi - jlo : 0;
        /* avg pooling (d = 1): the window cut at the padded end, counted
         * with its padding unless exclude_pad (PyTorch's pool_size) */
        int64_t e = st + k < n + p ? st + k : n + p;
        cnt[o] = exclude_pad ? len[o] : e - st;
    }
}

/* The first window of an axis with no tap inside [0, n), or -1. Only an
 * axis shorter than the dilation can have one (padding <= kernel / 2 and
 * ceil mode's rule keep every other window's taps reaching the input), so
 * the loop runs over at most 2n + 2 windows. */
static int64_t padding_only(int64_t n, int64_t m, int64_t k, int64_t s, int64_t p, int64_t d) {
    if (n >= d) return -1;
    for (int64_t o = 0; o < m; o++) {
        int64_t st = o * s - p, j = st < 0 ? (-st + d - 1) / d : 0;
        if (j >= k || st + j * d >= n) return o;
    }
    return -1;
}

/* A pooling's windows over an input of H x W, with storage for the arrays
 * (a small buffer, or an allocation when the output is large). */
typedef struct geom {
    gad_pool_geom g;
    int64_t small[6 * 64], *mem;
    size_t bytes;
} geom;

/* The windows (arrays) are built only when `arrays`: an empty output (an
 * empty batch) needs the sizes alone, whatever its H and W. */
static int geom_build(const char *op, const gad_np_pool *p, int64_t H, int64_t W, int arrays,
                      geom *G) {
    gad_pool_geom *g = &G->g;
    g->h.n_in = H;
    g->w.n_in = W;
    if (p->adaptive) {
        g->h.n_out = p->kernel[0];
        g->w.n_out = p->kernel[1];
    } else {
        g->h.n_out = out_size(H, p->kernel[0], p->stride[0], p->pad[0], p->dil[0], (int)p->ceil);
        g->w.n_out = out_size(W, p->kernel[1], p->stride[1], p->pad[1], p->dil[1], (int)p->ceil);
    }
    g->divisor = p->divisor;
    G->bytes = 0;
    G->mem = G->small;
    g->h.beg = g->h.len = g->h.cnt = g->w.beg = g->w.len = g->w.cnt = NULL;
    if (!arrays || g->h.n_out < 1 || g->w.n_out < 1) return 0;
    int64_t words = 3 * (g->h.n_out + g->w.n_out);
    if (words > (int64_t)(sizeof G->small / sizeof *G->small)) {
        G->bytes = (size_t)words * sizeof *G->mem;
        if (!(G->mem = gad__alloc(G->bytes))) {
            G->bytes = 0;
            gad__err(GAD_ERR_MEMORY, op, "cannot allocate the windows of %lld outputs",
                     (long long)(g->h.n_out + g->w.n_out));
            return -1;
        }
    }
    int64_t ka = p->adaptive ? 0 : 1;
    axis_windows(&g->h, ka * p->kernel[0], p->stride[0], p->pad[0], p->dil[0],
                 (int)p->exclude_pad, G->mem);
    axis_windows(&g->w, ka * p->kernel[1], p->stride[1], p->pad[1], p->dil[1],
                 (int)p->exclude_pad, G->mem + 3 * g->h.n_out);
    return 0;
}

static void geom_free(geom *G) {
    if (G->bytes) gad__free(G->mem, G->bytes);
}

/* The pooled axes' sizes of t (H = 1 for 1-d). */
static void plane_of(const gad_tensor *t, int nd, int64_t *H, int64_t *W) {
    *W = t->shape[t->rank - 1];
    *H = nd == 2 ? t->shape[t->rank - 2] : 1;
}

/* t's shape with the pooled axes replaced by (Ho, Wo). */
static void pooled_shape(const int64_t *shape, int rank, int nd, int64_t Ho, int64_t Wo,
                         int64_t *out) {
    memcpy(out, shape, (size_t)rank * sizeof *out);
    out[rank - 1] = Wo;
    if (nd == 2) out[rank - 2] = Ho;
}

/* ------------------------------------------------------------ checks */

static const char *const dimname[2] = {"H", "W"};

/* The input of an nd-d pooling: float, of rank nd + 1 (unbatched) or
 * nd + 2, every dim but the batch non-empty. */
static int check_input(const char *op, const gad_tensor *x, int nd) {
    if (gad__need_float(op, x)) return -1;
    char b[GAD_SHAPE_BUF];
    if (x->rank != nd + 1 && x->rank != nd + 2)
        return (gad__err(GAD_ERR_SHAPE, op,
                         "expected a %dD or %dD (batch mode) input, got %s", nd + 1, nd + 2,
                         gad__shape_str(b, x->shape, x->rank)),
                -1);
    for (int d = x->rank == nd + 2 ? 1 : 0; d < x->rank; d++)
        if (x->shape[d] == 0)
            return (gad__err(GAD_ERR_SHAPE, op,
                             "expected a non-empty input but for the batch dim, got %s "
                             "(dim %d empty)",
                             gad__shape_str(b, x->shape, x->rank), d),
                    -1);
    return 0;
}

/* The options of a fixed-window pooling into p (defaults filled in), and
 * PyTorch's checks of them; max: dilation allowed. Axis a of the options
 * is the pooled axis nd - 1 - a from the end... for 1-d only [0] is read
 * and lands on W. */
static int check_opts(const char *op, const gad_pool_opts *o, int nd, int max, int avg,
                      gad_np_pool *p) {
    if (!o) return (gad__null_arg(op), -1);
    memset(p, 0, sizeof *p);
    p->nd = nd;
    p->ceil = o->ceil_mode != 0;
    p->exclude_pad = avg && o->exclude_pad;
    p->divisor = avg ? o->divisor_override : 0;
    for (int a = 0; a < 2; a++) {
        int src = nd == 2 ? a : 0, on = nd == 2 || a == 1; /* 1-d: H is a unit axis */
        p->kernel[a] = on ? o->kernel[src] : 1;
        p->stride[a] = on ? (o->stride[src] ? o->stride[src] : p->kernel[a]) : 1;
        p->pad[a] = on ? o->padding[src] : 0;
        p->dil[a] = on && max ? (o->dilation[src] ? o->dilation[src] : 1) : 1;
        if (on && !max && o->dilation[src] > 1)
            return (gad__err(GAD_ERR_DOMAIN, op, "takes no dilation (got %lld)",
                             (long long)o->dilation[src]),
                    -1);
    }
    for (int a = 2 - nd; a < 2; a++) {
        const char *ax = nd == 2 ? dimname[a] : "";
        if (p->kernel[a] <= 0)
            return (gad__err(GAD_ERR_DOMAIN, op,
                             "kernel_size must be greater than zero, but got k%s=%lld", ax,
                             (long long)p->kernel[a]),
                    -1);
        if (p->stride[a] <= 0)
            return (gad__err(GAD_ERR_DOMAIN, op,
                             "stride must be greater than zero, but got stride%s=%lld", ax,
                             (long long)p->stride[a]),
                    -1);
        if (p->dil[a] <= 0)
            return (gad__err(GAD_ERR_DOMAIN, op,
                             "dilation must be greater than zero, but got dilation%s=%lld",
                             ax, (long long)p->dil[a]),
                    -1);
        if (p->pad[a] < 0)
            return (gad__err(GAD_ERR_DOMAIN, op, "pad must be non-negative, but got pad%s=%lld",
                             ax, (long long)p->pad[a]),
                    -1);
        if (p->pad[a] > p->kernel[a] / 2)
            return (gad__err(GAD_ERR_DOMAIN, op,
                             "pad should be at most half of kernel size, but got pad%s=%lld "
                             "and kernel_size%s=%lld",
                             ax, (long long)p->pad[a], ax, (long long)p->kernel[a]),
                    -1);
    }
    if (p->divisor < 0)
        return (gad__err(GAD_ERR_DOMAIN, op,
                         "divisor_override must be > 0 (0: none), got %lld",
                         (long long)p->divisor),
                -1);
    return 0;
}

/* ------------------------------------------------------------ forward */

/* The pooling p of x (checked), with the argmax positions in *indices
 * when asked (max). */
static gad_tensor *pool_run(const char *op, gad_tensor *x, const gad_np_pool *p, int max,
                            gad_tensor **indices) {
    GAD_NEED(op, x);
    int64_t H, W;
    plane_of(x, (int)p->nd, &H, &W);
    if (max ? GAD_LACKS_FAM(op, x, pool, max_fwd) : GAD_LACKS_FAM(op, x, pool, avg_fwd))
        return NULL;
    geom G;
    if (geom_build(op, p, H, W, x->numel > 0, &G)) return NULL;
    if (G.g.h.n_out < 1 || G.g.w.n_out < 1) {
        if (!p->adaptive) {
            char b[GAD_SHAPE_BUF];
            geom_free(&G);
            return gad__err(GAD_ERR_SHAPE, op,
                            "input %s gives an output of %lldx%lld: output size is too small",
                            gad__shape_str(b, x->shape, x->rank), (long long)G.g.h.n_out,
                            (long long)G.g.w.n_out);
        }
    }
    /* With dilation a window may read only padding: PyTorch gives -inf and
     * a position outside the plane, here an error. */
    for (int a = 0; a < 2 && max && !p->adaptive; a++) {
        const gad_pool_axis *ax = a ? &G.g.w : &G.g.h;
        int64_t o = padding_only(ax->n_in, ax->n_out, p->kernel[a], p->stride[a], p->pad[a],
                                 p->dil[a]);
        if (o >= 0) {
            char b[GAD_SHAPE_BUF];
            geom_free(&G);
            return gad__err(GAD_ERR_SHAPE, op,
                            "window %lld along %s reads only padding (input %s, kernel "
                            "%lld, dilation %lld, padding %lld)",
                            (long long)o, dimname[a], gad__shape_str(b, x->shape, x->rank),
                            (long long)p->kernel[a], (long long)p->dil[a], (long long)p->pad[a]);
        }
    }
    int64_t shape[GAD_MAX_RANK];
    pooled_shape(x->shape, x->rank, (int)p->nd, G.g.h.n_out, G.g.w.n_out, shape);
    gad_tensor *in[1] = {x};
    bool track = gad__tracks(in, 1);
    gad_tensor *y = gad__tensor_new(op, x->dev, x->dtype, shape, x->rank), *idx = NULL;
    if (y && max && (track || indices))
        idx = gad__tensor_new(op, x->dev, GAD_I64, shape, x->rank);
    gad_tensor *xc = y && (idx || !(max && (track || indices))) ? gad__contig(op, x) : NULL;
    if (!xc) {
        gad_release(y);
        gad_release(idx);
        geom_free(&G);
        return NULL;
    }
    if (max) GAD_BE(x)->pool->max_fwd(xc, y, idx, &G.g);
    else GAD_BE(x)->pool->avg_fwd(xc, y, &G.g);
    gad_release(xc);
    geom_free(&G);
    y = gad__track(y, max ? GAD_OP(MAX_POOL) : GAD_OP(AVG_POOL), in, 1, &idx, idx ? 1 : 0);
    if (y && y->node) *GAD_NODE_P(y->node, pool) = *p;
    if (indices && y) *indices = gad__own(idx);
    else gad_release(idx);
    return gad__own(y);
}

static gad_tensor *pool_public(const char *op, gad_tensor *x, const gad_pool_opts *o, int nd,
                               int max, gad_tensor **indices) {
    if (indices) *indices = NULL;
    GAD_NEED(op, x);
    GAD_HALF_VIA_F32_OUT(op, &x, 1, indices, pool_public(op, x, o, nd, max, indices));
    gad_np_pool p;
    if (check_opts(op, o, nd, max, !max, &p) || check_input(op, x, nd)) return NULL;
    return pool_run(op, x, &p, max, indices);
}

gad_tensor *gad_max_pool2d(gad_tensor *x, const gad_pool_opts *o, gad_tensor **indices) {
    return pool_public("max_pool2d", x, o, 2, 1, indices);
}

gad_tensor *gad_max_pool1d(gad_tensor *x, const gad_pool_opts *o, gad_tensor **indices) {
    return pool_public("max_pool1d", x, o, 1, 1, indices);
}

gad_tensor *gad_avg_pool2d(gad_tensor *x, const gad_pool_opts *o) {
    return pool_public("avg_pool2d", x, o, 2, 0, NULL);
}

gad_tensor *gad_avg_pool1d(gad_tensor *x, const gad_pool_opts *o) {
    return pool_public("avg_pool1d", x, o, 1, 0, NULL);
}

static gad_tensor *adaptive(const char *op, gad_tensor *x, int64_t oh, int64_t ow, int max,
                            gad_tensor **indices) {
    if (indices) *indices = NULL;
    GAD_NEED(op, x);
    GAD_HALF_VIA_F32_OUT(op, &x, 1, indices, adaptive(op, x, oh, ow, max, indices));
    if (oh < 0 || ow < 0)
        return gad__err(GAD_ERR_DOMAIN, op,
                        "elements of output_size must be >= 0, got (%lld, %lld)",
                        (long long)oh, (long long)ow);
    if (check_input(op, x, 2)) return NULL;
    if (!max && oh == 1 && ow == 1 && x->shape[x->rank - 1] * x->shape[x->rank - 2] > 0) {
        /* Global average pooling (a CNN's head) is the mean over each
         * plane: the reduction is faster than the window loop on the small
         * planes it meets (7x7: 1.6x torch's time through the loop). */
        GAD_COMPOSITE(op);
        static const int plane[2] = {-2, -1};
        return gad_mean(x, plane, 2, 1);
    }
    gad_np_pool p = {.kernel = {oh, ow}, .stride = {1, 1}, .dil = {1, 1}, .adaptive = 1, .nd = 2};
    return pool_run(op, x, &p, max, indices);
}

gad_tensor *gad_adaptive_avg_pool2d(gad_tensor *x, int64_t oh, int64_t ow) {
    return adaptive("adaptive_avg_pool2d", x, oh, ow, 0, NULL);
}

gad_tensor *gad_adaptive_max_pool2d(gad_tensor *x, int64_t oh, int64_t ow,
                                    gad_tensor **indices) {
    return adaptive("adaptive_max_pool2d", x, oh, ow, 1, indices);
}

/* ------------------------------------------------------------ backward */

/* zeros of x's shape (shape, rank) with gy's values added at idx, plane by
 * plane: max pooling's VJP, on the tape as max_pool_backward. */
static gad_tensor *max_scatter(gad_tensor *gy, gad_tensor *idx, const int64_t *shape, int rank,
                               const gad_np_pool *p) {
    const char *op = "max_pool_backward";
    GAD_NEED(op, gy);
    GAD_NEED(op, idx);
    GAD_HALF_VIA_F32(op, &gy, 1, max_scatter(gy, idx, shape, rank, p));
    if (GAD_UNLIKELY(idx->dev != gy->dev)) return (gad__err_device(op, gy->dev, idx->dev), NULL);
    if (GAD_LACKS_FAM(op, gy, pool, max_bwd)) return NULL;
    gad_tensor *gx = gad__tensor_new(op, gy->dev, gy->dtype, shape, rank);
    gad_tensor *gc = gx ? gad__contig(op, gy) : NULL;
    if (!gc) {
        gad_release(gx);
        return NULL;
    }
    int64_t H, W;
    plane_of(gx, (int)p->nd, &H, &W);
    GAD_BE(gy)->pool->max_bwd(gc, idx, gx, H * W);
    gad_release(gc);
    gx = gad__track(gx, GAD_OP(MAX_POOL_BACKWARD), &gy, 1, &idx, 1);
    if (gx && gx->node) *GAD_NODE_P(gx->node, pool) = *p;
    return gad__own(gx);
}

/* avg pooling's transpose: gx of x's shape from gy (avg_pool_backward). */
static gad_tensor *avg_scatter(gad_tensor *gy, const int64_t *shape, int rank,
                               const gad_np_pool *p) {
    const char *op = "avg_pool_backward";
    GAD_NEED(op, gy);
    GAD_HALF_VIA_F32(op, &gy, 1, avg_scatter(gy, shape, rank, p));
    if (GAD_LACKS_FAM(op, gy, pool, avg_bwd)) return NULL;
    int64_t H = p->nd == 2 ? shape[rank - 2] : 1, W = shape[rank - 1];
    geom G;
    if (geom_build(op, p, H, W, gy->numel > 0, &G)) return NULL;
    gad_tensor *gx = gad__tensor_new(op, gy->dev, gy->dtype, shape, rank);
    gad_tensor *gc = gx ? gad__contig(op, gy) : NULL;
    if (!gc) {
        gad_release(gx);
        geom_free(&G);
        return NULL;
    }
    GAD_BE(gy)->pool->avg_bwd(gc, gx, &G.g);
    gad_release(gc);
    geom_free(&G);
    gx = gad__track(gx, GAD_OP(AVG_POOL_BACKWARD), &gy, 1, NULL, 0);
    if (gx && gx->node) *GAD_NODE_P(gx->node, pool) = *p;
    return gad__own(gx);
}

int gad__vjp_max_pool(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    gad_node *x = n->parents[0];
    gin[0] = max_scatter(gy, n->saved[0], x->shape, x->rank, GAD_NODE_P(n, pool));
    return gin[0] ? 0 : -1;
}

/* The gather through the argmax positions: gg [.., H, W] seen as planes
 * [P, H*W], the positions as [P, L]. */
int gad__vjp_max_pool_backward(gad_node *n, gad_tensor *gy, const bool *need,
                               gad_tensor **gin) {
    (void)need;
    gad_node *g = n->parents[0];
    gad_tensor *idx = n->saved[0];
    int64_t H, W, Ho, Wo;
    int nd = (int)GAD_NODE_P(n, pool)->nd;
    W = n->shape[n->rank - 1];
    H = nd == 2 ? n->shape[n->rank - 2] : 1;
    Wo = g->shape[g->rank - 1];
    Ho = nd == 2 ? g->shape[g->rank - 2] : 1;
    int64_t P = (H * W) != 0 ? gy->numel / (H * W) : 0;
    gad_tensor *r = gad_gather(gad_reshape(gy, (int64_t[]){P, H * W}, 2), 1,
                               gad_reshape(idx, (int64_t[]){P, Ho * Wo}, 2));
    gin[0] = gad_reshape(r, g->shape, g->rank);
    return gin[0] ? 0 : -1;
}

int gad__vjp_avg_pool(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    gad_node *x = n->parents[0];
    gin[0] = avg_scatter(gy, x->shape, x->rank, GAD_NODE_P(n, pool));
    return gin[0] ? 0 : -1;
}

int gad__vjp_avg_pool_backward(gad_node *n, gad_tensor *gy, const bool *need,
                               gad_tensor **gin) {
    (void)need;
    gin[0] = pool_run("avg_pool_backward", gy, GAD_NODE_P(n, pool), 0, NULL);
    return gin[0] ? 0 : -1;
}

/* --------------------------------------------------------------- samples */

/* i[0]: the op; i[1]: nd; i[2..3] kernel (or the adaptive output size),
 * i[4..5] stride, i[6..7] padding, i[8..9] dilation, i[10] ceil_mode,
 * i[11] exclude_pad, i[12] divisor_override, i[13] adaptive. in[1]: the
 * argmax positions (max_pool_backward). */
static gad_np_pool sample_np(const gad_op_sample *s) {
    gad_np_pool p = {.nd = s->i[1], .ceil = s->i[10], .exclude_pad = s->i[11],
                     .divisor = s->i[12], .adaptive = s->i[13]};
    for (int a = 0; a < 2; a++) {
        p.kernel[a] = s->i[2 + a];
        p.stride[a] = s->i[4 + a];
        p.pad[a] = s->i[6 + a];
        p.dil[a] = s->i[8 + a];
    }
    return p;
}

static gad_tensor *apply_pool(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    (void)n;
    gad_np_pool p = sample_np(s);
    gad_tensor *x = in[0];
    int max = s->i[0] == GAD_OP_MAX_POOL;
    if (s->i[0] == GAD_OP_MAX_POOL || s->i[0] == GAD_OP_AVG_POOL) {
        /* the forward through the public functions (their option checks
         * and names), but for adaptive 1x1 averaging, which gad_adaptive_
         * avg_pool2d computes as a mean (the adaptive_avg_pool2d row) */
        if (p.adaptive && (max || p.kernel[0] != 1 || p.kernel[1] != 1))
            return max ? gad_adaptive_max_pool2d(x, p.kernel[0], p.kernel[1], NULL)
                       : gad_adaptive_avg_pool2d(x, p.kernel[0], p.kernel[1]);
        if (p.adaptive) return pool_run("avg_pool", x, &p, 0, NULL);
        gad_pool_opts o = {.ceil_mode = (int)p.ceil, .exclude_pad = (int)p.exclude_pad,
                           .divisor_override = p.divisor};
        for (int a = 0; a < (int)p.nd; a++) {
            int from = p.nd == 2 ? a : 1; /* 1-d: the W axis */
            o.kernel[a] = p.kernel[from];
            o.stride[a] = p.stride[from];
            o.padding[a] = p.pad[from];
            o.dilation[a] = max ? p.dil[from] : 0;
        }
        return max ? (p.nd == 2 ? gad_max_pool2d : gad_max_pool1d)(x, &o, NULL)
                   : (p.nd == 2 ? gad_avg_pool2d : gad_avg_pool1d)(x, &o);
    }
    switch (s->i[0]) {
    case GAD_OP_AVG_POOL_BACKWARD: {
        int64_t shape[GAD_MAX_RANK];
        memcpy(shape, x->shape, (size_t)x->rank * sizeof *shape);
        shape[x->rank - 1] = s->i[15];
        if (p.nd == 2) shape[x->rank - 2] = s->i[14];
        return avg_scatter(x, shape, x->rank, &p);
    }
    default: { /* MAX_POOL_BACKWARD */
        int64_t shape[GAD_MAX_RANK];
        memcpy(shape, x->shape, (size_t)x->rank * sizeof *shape);
        shape[x->rank - 1] = s->i[15];
        if (p.nd == 2) shape[x->rank - 2] = s->i[14];
        return max_scatter(x, in[1], shape, x->rank, &p);
    }
    }
}

/* The cases: input shape (rank 4: N, C, H, W; rank 3 for 1-d: N, C, L;
 * rank 3 for unbatched 2-d), then the node's parameters as sample_np reads
 * them (1-d: H a unit axis, k = s = d = 1, no padding). */
typedef struct pool_case {
    int rank;
    int64_t shape[4];
    int64_t o[12]; /* nd, k[2], s[2], p[2], d[2], ceil, exclude, divisor */
    int adaptive;
} pool_case;

static const pool_case max_cases[] = {
    {4, {2, 2, 5, 6}, {2, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 0}, 0},
    {4, {1, 1, 7, 7}, {2, 3, 2, 2, 3, 1, 0, 2, 1, 1, 0, 0}, 0},
    {3, {2, 3, 9}, {1, 1, 3, 1, 2, 0, 1, 1, 2, 1, 0, 0}, 0},
    {3, {2, 5, 4}, {2, 2, 2, 2, 2, 0, 1, 1, 1, 0, 0, 0}, 0},
    {4, {0, 2, 4, 4}, {2, 2, 2, 2, 2, 0, 0, 1, 1, 0, 0, 0}, 0},
    {4, {2, 1, 5, 7}, {2, 3, 4, 1, 1, 1, 1, 1, 1, 0, 0, 0}, 1},
};

static const pool_case avg_cases[] = {
    {4, {2, 2, 5, 6}, {2, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 0}, 0},
    {4, {1, 2, 7, 6}, {2, 3, 2, 2, 3, 1, 1, 1, 1, 1, 1, 0}, 0},
    {3, {2, 3, 9}, {1, 1, 3, 1, 2, 0, 1, 1, 1, 1, 0, 0}, 0},
    {4, {1, 1, 5, 5}, {2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 0, 3}, 0},
    {4, {0, 2, 4, 4}, {2, 2, 2, 2, 2, 0, 0, 1, 1, 0, 0, 0}, 0},
    {4, {2, 1, 5, 7}, {2, 3, 4, 1, 1, 1, 1, 1, 1, 0, 0, 0}, 1},
    {4, {2, 3, 4, 3}, {2, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0}, 1},
};

static int pool_sample(gad_op_sample *s, gad_rng *r, int op, const pool_case *c) {
    *s = (gad_op_sample){.n = 1, .apply = apply_pool, .smooth = 1};
    s->i[0] = op;
    for (int k = 0; k < 12; k++) s->i[1 + k] = c->o[k];
    s->i[13] = c->adaptive;
    gad_np_pool p = sample_np(s);
    int64_t H = p.nd == 2 ? c->shape[c->rank - 2] : 1, W = c->shape[c->rank - 1];
    s->i[14] = H;
    s->i[15] = W;
    snprintf(s->what, sizeof s->what, "%s%s [%lld..%lld,%lld] k=%lldx%lld s=%lldx%lld",
             gad__ops[op].info.name, c->adaptive ? " adaptive" : "", (long long)c->shape[0],
             (long long)H, (long long)W, (long long)p.kernel[0], (long long)p.kernel[1],
             (long long)p.stride[0], (long long)p.stride[1]);
    /* values well apart, so that no finite difference crosses a tie */
    gad_tensor *x = gad__sample_leaf(r, c->shape, c->rank, -2, 2, 0);
    if (!x) return 0;
    if (op == GAD_OP_MAX_POOL || op == GAD_OP_AVG_POOL) {
        s->in[0] = x;
        return 1;
    }
    /* the backward ops: their input is a gradient of the output's shape */
    gad_tensor *idx = NULL;
    gad_tensor *y = pool_run("pool", gad_detach(x), &p, op == GAD_OP_MAX_POOL_BACKWARD,
                             op == GAD_OP_MAX_POOL_BACKWARD ? &idx : NULL);
    if (!y) return 0;
    s->in[0] = gad__sample_leaf(r, y->shape, y->rank, -1, 1, 0);
    if (op == GAD_OP_MAX_POOL_BACKWARD) {
        s->in[1] = idx;
        s->n = 2;
    }
    return s->in[0] != NULL;
}

int gad__sample_max_pool(gad_op_sample *s, gad_rng *r, int v) {
    if (v >= (int)(sizeof max_cases / sizeof *max_cases)) return 0;
    return pool_sample(s, r, GAD_OP_MAX_POOL, &max_cases[v]);
}

int gad__sample_max_pool_backward(gad_op_sample *s, gad_rng *r, int v) {
    if (v >= (int)(sizeof max_cases / sizeof *max_cases)) return 0;
    return pool_sample(s, r, GAD_OP_MAX_POOL_BACKWARD, &max_cases[v]);
}

int gad__sample_avg_pool(gad_op_sample *s, gad_rng *r, int v) {
    if (v >= (int)(sizeof avg_cases / sizeof *avg_cases)) return 0;
    return pool_sample(s, r, GAD_OP_AVG_POOL, &avg_cases[v]);
}

int gad__sample_avg_pool_backward(gad_op_sample *s, gad_rng *r, int v) {
    if (v >= (int)(sizeof avg_cases / sizeof *avg_cases)) return 0;
    return pool_sample(s, r, GAD_OP_AVG_POOL_BACKWARD, &avg_cases[v]);
}

/* ---- composite (ops.def's COMPOSITE row): adaptive_avg_pool2d, through
 * the public function; to 1x1 it is the mean over each plane (no avg_pool
 * node). i[0..1]: the output's plane */
static gad_tensor *apply_adaptive_avg(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    (void)n;
    return gad_adaptive_avg_pool2d(in[0], s->i[0], s->i[1]);
}

int gad__sample_adaptive_avg_pool2d(gad_op_sample *s, gad_rng *r, int v) {
    static const int64_t shapes[][4] = {{2, 3, 4, 5}, {3, 2, 3, 0}, {0, 2, 3, 3}, {1, 1, 1, 1},
                                        {2, 2, 5, 7}};
    static const int ranks[] = {4, 3, 4, 4, 4};
    static const int64_t out[][2] = {{1, 1}, {1, 1}, {1, 1}, {1, 1}, {2, 3}};
    if (v >= 5) return 0;
    *s = (gad_op_sample){.n = 1, .apply = apply_adaptive_avg, .smooth = 1};
    s->i[0] = out[v][0];
    s->i[1] = out[v][1];
    s->in[0] = gad__sample_leaf(r, shapes[v], ranks[v], -2, 2, 0);
    int k = gad__shape_str(s->what, shapes[v], ranks[v]) ? (int)strlen(s->what) : 0;
    snprintf(s->what + k, sizeof s->what - (size_t)k, " -> %lldx%lld", (long long)out[v][0],
             (long long)out[v][1]);
    return s->in[0] != NULL;
}
