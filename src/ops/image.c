/* image.c: the shape ops for images (SPEC §3.9), as torch.nn.functional's
 * pad, interpolate, pixel_shuffle/unshuffle and unfold/fold.
 *
 * pad is an op of its own (PAD): constant mode is strided copies (the
 * memory table's, so every back end runs it, as flip and roll); reflect,
 * replicate and circular read x through an index map per padded axis in
 * the back end's kernel (the pool family's pad), a row's centre in one
 * copy, so corners come out as PyTorch's. Its VJP is made of
 * tracked ops: a slice (and a zero pad back, for crops) in constant mode,
 * else a scatter_add per padded axis through the axis's index map, so that
 * pad is twice differentiable.
 *
 * unfold and fold are ops of their own (UNFOLD, FOLD) on the pool family's
 * im2col and col2im, each the other's VJP (so twice differentiable).
 *
 * interpolate is an op (INTERPOLATE) on the pool family's interp_fwd, its
 * VJP another (INTERPOLATE_BACKWARD: the weighted scatter, interp_bwd),
 * each the other's transpose. pixel_shuffle/unshuffle are a reshape, a
 * permute and a reshape (views, no entry of their own). */
#include "ops_int.h"
#include "backend/pool.h"

#include <math.h>
#include <stdio.h>

static const char *const mode_names[4] = {"constant", "reflect", "replicate", "circular"};

/* ------------------------------------------------------------------ pad */

/* Input position of output position o along an axis of n padded by lo on
 * the left (mode reflect, replicate or circular; lo may be 0). */
static int64_t pad_src(int mode, int64_t o, int64_t n, int64_t lo) {
    int64_t i = o - lo;
    if (mode == GAD_PAD_REPLICATE) return i < 0 ? 0 : i >= n ? n - 1 : i;
    if (mode == GAD_PAD_CIRCULAR) return ((i % n) + n) % n;
    if (i < 0) return -i; /* reflect, without the edge */
    if (i >= n) return 2 * (n - 1) - i;
    return i;
}

/* y = x padded in mode reflect, replicate or circular (at most the last
 * three axes padded) by the back end's kernel (pool family): 0, or -1 (a
 * memory error, recorded). */
static int pad_kernel(const char *op, gad_tensor *x, gad_tensor *y, const int64_t *lo, int mode) {
    int r = x->rank;
    int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, l[3] = {0, 0, 0};
    for (int a = 0; a < 3 && a < r; a++) { /* a = 2: the last axis */
        int d = r - 1 - a;
        in[2 - a] = x->shape[d];
        out[2 - a] = y->shape[d];
        l[2 - a] = lo[d];
    }
    int64_t n = out[0] + out[1] + out[2], small[256];
    int64_t *m = n <= 256 ? small : gad__alloc((size_t)n * sizeof *m);
    if (!m) return (gad__err(GAD_ERR_MEMORY, op, "cannot allocate the index maps"), -1);
    const int64_t *map[3] = {m, m + out[0], m + out[0] + out[1]};
    for (int a = 0, k = 0; a < 3; a++)
        for (int64_t o = 0; o < out[a]; o++) m[k++] = pad_src(mode, o, in[a], l[a]);
    gad_tensor *xc = gad__contig(op, x);
    if (xc) GAD_BE(x)->pool->pad(xc, y, map, in, out, l[2]);
    gad_release(xc);
    if (m != small) gad__free(m, (size_t)n * sizeof *m);
    return xc ? 0 : -1;
}

static gad_tensor *pad_run(const char *op, gad_tensor *x, const int64_t *lo, const int64_t *hi,
                           int mode, double value) {
    int r = x->rank;
    int64_t shape[GAD_MAX_RANK];
    for (int d = 0; d < r; d++) shape[d] = x->shape[d] + lo[d] + hi[d];
    gad_tensor *y = gad__tensor_new(op, x->dev, x->dtype, shape, r);
    if (!y) return NULL;
    if (mode != GAD_PAD_CONSTANT) {
        if (y->numel > 0 && pad_kernel(op, x, y, lo, mode)) {
            gad_release(y);
            return NULL;
        }
    } else if (y->numel > 0) { /* the centre, x cropped by negative pads, at the positive pads */
        size_t es = gad__dsize(x->dtype);
        int64_t cs[GAD_MAX_RANK], xoff = x->offset, yoff = 0;
        int any_pad = 0;
        for (int d = 0; d < r; d++) {
            int64_t l = lo[d] < 0 ? -lo[d] : 0, h = hi[d] < 0 ? -hi[d] : 0;
            cs[d] = x->shape[d] - l - h;
            xoff += l * x->strides[d];
            yoff += (lo[d] > 0 ? lo[d] : 0) * y->strides[d];
            any_pad |= lo[d] > 0 || hi[d] > 0;
        }
        if (any_pad) gad__fill(y, value);
        int64_t cn = 1;
        for (int d = 0; d < r; d++) cn *= cs[d];
        if (cn > 0) {
            gad_tensor *v = gad__view_new(op, x, cs, x->strides, r, xoff);
            if (!v) {
                gad_release(y);
                return NULL;
            }
            gad__copy_strided(v, (char *)gad__ptr(y) + yoff * (int64_t)es, y->strides);
            gad_release(v);
        }
    }
    y = gad__track(y, GAD_OP(PAD), &x, 1, NULL, 0);
    if (y && y->node) {
        gad_np_pad *p = GAD_NODE_P(y->node, pad);
        for (int d = 0; d < GAD_MAX_RANK; d++) p->lo[d] = d < r ? lo[d] : 0;
        p->mode = mode;
        p->value = value;
    }
    return gad__own(y);
}

gad_tensor *gad_pad(gad_tensor *x, const int64_t *pads, int npads, gad_pad_mode mode,
                    double value) {
    const char *op = "pad";
    GAD_NEED(op, x);
    char b[GAD_SHAPE_BUF];
    if ((unsigned)mode > GAD_PAD_CIRCULAR)
        return gad__err(GAD_ERR_DOMAIN, op, "unknown mode %d", (int)mode);
    if (npads < 0 || npads % 2)
        return gad__err(GAD_ERR_SHAPE, op, "padding length must be divisible by 2, got %d",
                        npads);
    if (npads && !pads) return gad__null_arg(op);
    int r = x->rank, k = npads / 2;
    if (k > r)
        return gad__err(GAD_ERR_SHAPE, op, "padding length %d too large for input %s", npads,
                        gad__shape_str(b, x->shape, r));
    if (mode != GAD_PAD_CONSTANT) {
        /* PyTorch's CPU dtypes: i64 in every mode, bool in circular only
         * (its reflection and replication kernels take no Bool) */
        if (x->dtype == GAD_BOOL && mode != GAD_PAD_CIRCULAR)
            return gad__err(GAD_ERR_DTYPE, op,
                            "%s padding needs f32, f64 or i64 (as PyTorch's), got bool",
                            mode_names[mode]);
        if (k < 1 || k > 3 || r < k + 1 || r > k + 2)
            return gad__err(GAD_ERR_SHAPE, op,
                            "%s padding of %d dims takes a %dD or %dD input, got %s "
                            "(PyTorch's non-constant modes pad the last 1-3 dims)",
                            mode_names[mode], k, k + 1, k + 2, gad__shape_str(b, x->shape, r));
    }
    int64_t lo[GAD_MAX_RANK] = {0}, hi[GAD_MAX_RANK] = {0};
    for (int i = 0; i < k; i++) { /* PyTorch's order: the last dim first */
        int d = r - 1 - i;
        lo[d] = pads[2 * i];
        hi[d] = pads[2 * i + 1];
        int64_t n = x->shape[d];
        if (mode == GAD_PAD_CONSTANT) {
            if ((lo[d] < 0 && -lo[d] > n) || (hi[d] < 0 && -hi[d] > n) || n + lo[d] + hi[d] < 0)
                return gad__err(GAD_ERR_SHAPE, op,
                                "input size %lld of dim %d with padding (%lld, %lld) gives a "
                                "negative size",
                                (long long)n, d, (long long)lo[d], (long long)hi[d]);
            continue;
        }
        if (lo[d] < 0 || hi[d] < 0)
            return gad__err(GAD_ERR_DOMAIN, op,
                            "%s padding must be >= 0, got (%lld, %lld) at dim %d of %s",
                            mode_names[mode], (long long)lo[d], (long long)hi[d], d,
                            gad__shape_str(b, x->shape, r));
        if ((lo[d] || hi[d]) && n == 0)
            return gad__err(GAD_ERR_SHAPE, op, "%s padding of an empty dim %d of %s",
                            mode_names[mode], d, gad__shape_str(b, x->shape, r));
        if (mode == GAD_PAD_REFLECT && (lo[d] >= n || hi[d] >= n))
            return gad__err(GAD_ERR_SHAPE, op,
                            "padding size should be less than the corresponding input "
                            "dimension, but got padding (%lld, %lld) at dim %d of %s",
                            (long long)lo[d], (long long)hi[d], d,
                            gad__shape_str(b, x->shape, r));
        if (mode == GAD_PAD_CIRCULAR && (lo[d] > n || hi[d] > n))
            return gad__err(GAD_ERR_SHAPE, op,
                            "padding (%lld, %lld) at dim %d of %s wraps around more than once",
                            (long long)lo[d], (long long)hi[d], d,
                            gad__shape_str(b, x->shape, r));
    }
    if (mode != GAD_PAD_CONSTANT && GAD_LACKS_FAM(op, x, pool, pad)) return NULL;
    return pad_run(op, x, lo, hi, (int)mode, value);
}

/* t (a host constant made here) on device dev, owned by the scope. */
static gad_tensor *on_dev(gad_tensor *t, int dev) {
    if (!t || t->dev == dev) return t;
    return gad__own(gad__to_dev("pad", t, dev));
}

/* The index map of a padded axis d as an i64 tensor broadcast to shape
 * (n_out at d, 1 elsewhere, then stretched): owned by the scope. */
static gad_tensor *pad_map(int mode, int64_t n, int64_t lo, int64_t hi, int d,
                           const int64_t *shape, int r, int dev) {
    int64_t m = n + lo + hi, one[GAD_MAX_RANK];
    int64_t *v = gad__alloc((size_t)(m ? m : 1) * sizeof *v);
    if (!v) return gad__err(GAD_ERR_MEMORY, "pad", "cannot allocate an index map of %lld",
                            (long long)m);
    for (int64_t o = 0; o < m; o++) v[o] = pad_src(mode, o, n, lo);
    for (int e = 0; e < r; e++) one[e] = e == d ? m : 1;
    gad_tensor *t = on_dev(gad_from_i64(v, one, r), dev);
    gad__free(v, (size_t)(m ? m : 1) * sizeof *v);
    return gad_broadcast_to(t, shape, r);
}

int gad__vjp_pad(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    const gad_np_pad *p = GAD_NODE_P(n, pad);
    gad_node *x = n->parents[0];
    int r = x->rank;
    int64_t hi[GAD_MAX_RANK];
    for (int d = 0; d < r; d++) hi[d] = n->shape[d] - x->shape[d] - p->lo[d];
    if (p->mode == GAD_PAD_CONSTANT) { /* the centre, then zeros where x was cropped */
        gad_range rg[GAD_MAX_RANK] = {GAD_ALL};
        int64_t back[2 * GAD_MAX_RANK];
        int crop = 0;
        for (int d = 0; d < r; d++) {
            int64_t l = p->lo[d] > 0 ? p->lo[d] : 0, h = hi[d] > 0 ? hi[d] : 0;
            rg[d] = GAD_RANGE(l, gy->shape[d] - h);
            back[2 * (r - 1 - d)] = p->lo[d] < 0 ? -p->lo[d] : 0;
            back[2 * (r - 1 - d) + 1] = hi[d] < 0 ? -hi[d] : 0;
            crop |= p->lo[d] < 0 || hi[d] < 0;
        }
        gad_tensor *g = gad_slice(gy, rg, r);
        if (crop) g = gad_pad(g, back, 2 * r, GAD_PAD_CONSTANT, 0);
        return (gin[0] = g) ? 0 : -1;
    }
    /* each padded axis folded back by a scatter_add through its map */
    gad_tensor *g = gy;
    for (int d = 0; d < r && g; d++) {
        if (!p->lo[d] && !hi[d]) continue;
        int64_t shape[GAD_MAX_RANK];
        memcpy(shape, g->shape, (size_t)r * sizeof *shape);
        shape[d] = x->shape[d];
        gad_tensor *idx = pad_map((int)p->mode, x->shape[d], p->lo[d], hi[d], d, g->shape, r,
                                   gy->dev);
        g = idx ? gad_scatter_add(gad__full_on(gy->dev, shape, r, gy->dtype, 0), d, idx, g)
                : NULL;
    }
    return (gin[0] = g) ? 0 : -1;
}

/* i[0]: the mode, i[1]: the number of pads, i[2..]: them; d[0]: value. */
static gad_tensor *apply_pad(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    (void)n;
    return gad_pad(in[0], s->i + 2, (int)s->i[1], (gad_pad_mode)s->i[0], s->d[0]);
}

int gad__sample_pad(gad_op_sample *s, gad_rng *r, int v) {
    static const struct {
        int rank;
        int64_t shape[4];
        int mode, npads;
        int64_t pads[6];
    } cases[] = {
        {2, {3, 4}, GAD_PAD_CONSTANT, 4, {1, 2, 0, 1}},
        {3, {2, 3, 4}, GAD_PAD_CONSTANT, 6, {-1, 2, 1, -1, 1, 0}},
        {4, {1, 2, 3, 4}, GAD_PAD_REFLECT, 4, {2, 3, 1, 2}},
        {3, {2, 3, 4}, GAD_PAD_REPLICATE, 2, {2, 3}},
        {4, {2, 1, 3, 4}, GAD_PAD_CIRCULAR, 4, {1, 4, 3, 2}},
        {4, {1, 2, 3, 3}, GAD_PAD_REFLECT, 6, {1, 1, 2, 0, 1, 0}},
        {4, {0, 2, 3, 3}, GAD_PAD_REPLICATE, 4, {1, 1, 2, 0}},
    };
    if (v >= (int)(sizeof cases / sizeof *cases)) return 0;
    *s = (gad_op_sample){.n = 1, .apply = apply_pad, .smooth = 1};
    s->i[0] = cases[v].mode;
    s->i[1] = cases[v].npads;
    for (int k = 0; k < cases[v].npads; k++) s->i[2 + k] = cases[v].pads[k];
    s->d[0] = cases[v].mode == GAD_PAD_CONSTANT ? 0.5 : 0;
    s->in[0] = gad__sample_leaf(r, cases[v].shape, cases[v].rank, -2, 2, 0);
    snprintf(s->what, sizeof s->what, "pad %s %d pads", mode_names[cases[v].mode],
             cases[v].npads);
    return s->in[0] != NULL;
}

/* ---------------------------------------------------------- interpolate */

/* One axis of an interpolation (PyTorch's upsample kernels): the scale
 * (in / out, or 1 / scale_factor when one is given; (in - 1) / (out - 1)
 * with align_corners), then for nearest floor(dst * scale) capped at in - 1,
 * for linear the source dst * scale (align_corners) or (dst + 0.5) * scale
 * - 0.5 clamped at 0, its floor i0, i1 = i0 + 1 (but at the edge) and the
 * weights 1 - l, l. In the input's precision (float for f32), as PyTorch's
 * opmath. m: 2 out i64 then 2 out doubles. */
static void interp_maps(gad_interp_axis *ax, int64_t in, int64_t out, double sf, int linear,
                        int align, int f32, void *m) {
    int64_t *i0 = m, *i1 = i0 + out;
    double *w0 = (double *)(i1 + out), *w1 = w0 + out;
    *ax = (gad_interp_axis){.n_in = in, .n_out = out, .i0 = i0, .i1 = i1, .w0 = w0, .w1 = w1};
    double sd = sf > 0 ? 1.0 / sf : (double)in / (double)out;
    float sfl = sf > 0 ? (float)(1.0 / sf) : (float)in / (float)out;
    if (linear && align) {
        sd = out > 1 ? (double)(in - 1) / (double)(out - 1) : 0;
        sfl = out > 1 ? (float)(in - 1) / (float)(out - 1) : 0;
    }
    for (int64_t o = 0; o < out; o++) {
        if (!linear) {
            int64_t i = f32 ? (int64_t)floorf((float)o * sfl) : (int64_t)floor((double)o * sd);
            i0[o] = i1[o] = i < in - 1 ? i : in - 1;
            w0[o] = 1;
            w1[o] = 0;
            continue;
        }
        double src;
        if (f32) {
            float s = align ? sfl * (float)o : sfl * ((float)o + 0.5f) - 0.5f;
            src = s < 0 ? 0 : s;
        } else {
            double s = align ? sd * (double)o : sd * ((double)o + 0.5) - 0.5;
            src = s < 0 ? 0 : s;
        }
        int64_t i = (int64_t)floor(src);
        if (i > in - 1) i = in - 1;
        double l = src - (double)i;
        l = l < 0 ? 0 : l > 1 ? 1 : l;
        i0[o] = i;
        i1[o] = i + (i < in - 1 ? 1 : 0);
        w1[o] = f32 ? (double)(float)l : l;
        w0[o] = f32 ? (double)(1.0f - (float)l) : 1.0 - l;
    }
}

/* The interpolation p from x's planes (x [N, C, (H,) W]) to y's, through
 * the pool family's kernel: forward (bwd 0: src x, dst y) or its transpose
 * (bwd 1: src gy, dst gx); the node INTERPOLATE or INTERPOLATE_BACKWARD.
 * dst_shape: the output's shape. */
static gad_tensor *interp_run(const char *op, gad_tensor *src, const int64_t *dst_shape,
                              const gad_np_interp *p, int bwd) {
    GAD_NEED(op, src);
    GAD_HALF_VIA_F32(op, &src, 1, interp_run(op, src, dst_shape, p, bwd));
    if (bwd ? GAD_LACKS_FAM(op, src, pool, interp_bwd) : GAD_LACKS_FAM(op, src, pool, interp_fwd))
        return NULL;
    int r = src->rank, nd = (int)p->nd;
    const int64_t *xs = bwd ? dst_shape : src->shape, *ys = bwd ? src->shape : dst_shape;
    int64_t in[2] = {1, xs[r - 1]}, out[2] = {1, ys[r - 1]};
    if (nd == 2) {
        in[0] = xs[r - 2];
        out[0] = ys[r - 2];
    }
    size_t bytes = (size_t)(2 * (out[0] + out[1])) * (sizeof(int64_t) + sizeof(double));
    void *m = gad__alloc(bytes);
    if (!m) return gad__err(GAD_ERR_MEMORY, op, "cannot allocate the index maps");
    gad_interp_geom g = {.nearest = p->mode == GAD_INTERP_NEAREST};
    int f32 = src->dtype == GAD_F32;
    char *mh = m, *mw = mh + (size_t)(2 * out[0]) * (sizeof(int64_t) + sizeof(double));
    interp_maps(&g.h, in[0], out[0], nd == 2 ? p->sf[0] : 0, !g.nearest, (int)p->align, f32, mh);
    interp_maps(&g.w, in[1], out[1], p->sf[nd - 1], !g.nearest, (int)p->align, f32, mw);
    gad_tensor *y = gad__tensor_new(op, src->dev, src->dtype, dst_shape, r);
    gad_tensor *sc = y ? gad__contig(op, src) : NULL;
    if (sc) {
        if (bwd) GAD_BE(src)->pool->interp_bwd(sc, y, &g);
        else GAD_BE(src)->pool->interp_fwd(sc, y, &g);
    }
    gad_release(sc);
    gad__free(m, bytes);
    if (!sc) {
        gad_release(y);
        return NULL;
    }
    y = gad__track(y, bwd ? GAD_OP(INTERPOLATE_BACKWARD) : GAD_OP(INTERPOLATE), &src, 1, NULL, 0);
    if (y && y->node) *GAD_NODE_P(y->node, interp) = *p;
    return gad__own(y);
}

/* Each is the other's transpose (linear in its input): twice
 * differentiable. */
int gad__vjp_interpolate(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    gin[0] = interp_run("interpolate_backward", gy, n->parents[0]->shape,
                        GAD_NODE_P(n, interp), 1);
    return gin[0] ? 0 : -1;
}

int gad__vjp_interpolate_backward(gad_node *n, gad_tensor *gy, const bool *need,
                                  gad_tensor **gin) {
    (void)need;
    gin[0] = interp_run("interpolate", gy, n->parents[0]->shape, GAD_NODE_P(n, interp), 0);
    return gin[0] ? 0 : -1;
}

/* The cases: x's shape, the mode, align_corners, the output size, the
 * scale factors (0: by size). i[0..2]: mode, align, nd; i[3..4]: the
 * output size; i[5]: backward; d[0..1]: the scale factors. */
typedef struct interp_case {
    int rank;
    int64_t shape[4];
    int mode, align;
    int64_t out[2];
    double sf[2];
} interp_case;

static const interp_case interp_cases[] = {
    {4, {2, 2, 3, 4}, GAD_INTERP_BILINEAR, 0, {5, 7}, {0, 0}},
    {4, {1, 2, 4, 3}, GAD_INTERP_BILINEAR, 1, {6, 2}, {0, 0}},
    {4, {1, 1, 3, 3}, GAD_INTERP_BILINEAR, 0, {6, 4}, {2.0, 1.5}},
    {3, {2, 3, 5}, GAD_INTERP_LINEAR, 0, {1, 8}, {0, 0}},
    {3, {1, 2, 6}, GAD_INTERP_LINEAR, 1, {1, 4}, {0, 0}},
    {4, {2, 1, 3, 5}, GAD_INTERP_NEAREST, 0, {7, 3}, {0, 0}},
    {3, {1, 2, 4}, GAD_INTERP_NEAREST, 0, {1, 10}, {2.5, 0}},
    {4, {0, 2, 3, 3}, GAD_INTERP_BILINEAR, 0, {4, 4}, {0, 0}},
};

static gad_tensor *apply_interp(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    (void)n;
    gad_np_interp p = {.mode = s->i[0], .align = s->i[1], .nd = s->i[2],
                       .sf = {s->d[0], s->d[1]}};
    if (!s->i[5]) { /* the forward through gad_interpolate: a size or the scales */
        int nd = (int)p.nd;
        int64_t size[2] = {nd == 2 ? s->i[3] : s->i[4], s->i[4]};
        return gad_interpolate(in[0], s->d[0] > 0 ? NULL : size, s->d[0] > 0 ? s->d : NULL,
                               nd, (gad_interp_mode)p.mode, (int)p.align);
    }
    int64_t shape[GAD_MAX_RANK];
    int r = in[0]->rank;
    memcpy(shape, in[0]->shape, (size_t)r * sizeof *shape);
    shape[r - 1] = s->i[4];
    if (p.nd == 2) shape[r - 2] = s->i[3];
    return interp_run(s->i[5] ? "interpolate_backward" : "interpolate", in[0], shape, &p,
                      (int)s->i[5]);
}

static int interp_sample(gad_op_sample *s, gad_rng *r, int v, int bwd) {
    if (v >= (int)(sizeof interp_cases / sizeof *interp_cases)) return 0;
    const interp_case *c = &interp_cases[v];
    static const char *const names[3] = {"nearest", "linear", "bilinear"};
    *s = (gad_op_sample){.n = 1, .apply = apply_interp, .smooth = 1};
    int nd = c->rank - 2;
    s->i[0] = c->mode;
    s->i[1] = c->align;
    s->i[2] = nd;
    s->d[0] = c->sf[0];
    s->d[1] = c->sf[1];
    snprintf(s->what, sizeof s->what, "%s%s %s -> %lldx%lld", bwd ? "backward of " : "",
             names[c->mode], c->align ? "align" : "", (long long)c->out[0], (long long)c->out[1]);
    int64_t ys[4];
    memcpy(ys, c->shape, sizeof ys);
    ys[c->rank - 1] = c->out[1];
    if (nd == 2) ys[c->rank - 2] = c->out[0];
    /* the forward: i[3..4] the output's plane; the backward: x's */
    const int64_t *to = bwd ? c->shape : ys;
    s->i[3] = nd == 2 ? to[c->rank - 2] : 1;
    s->i[4] = to[c->rank - 1];
    s->i[5] = bwd;
    s->in[0] = gad__sample_leaf(r, bwd ? ys : c->shape, c->rank, -2, 2, 0);
    return s->in[0] != NULL;
}

int gad__sample_interpolate(gad_op_sample *s, gad_rng *r, int v) {
    return interp_sample(s, r, v, 0);
}

int gad__sample_interpolate_backward(gad_op_sample *s, gad_rng *r, int v) {
    return interp_sample(s, r, v, 1);
}

gad_tensor *gad_interpolate(gad_tensor *x, const int64_t *size, const double *scale_factor,
                            int n, gad_interp_mode mode, int align_corners) {
    const char *op = "interpolate";
    GAD_NEED(op, x);
    char b[GAD_SHAPE_BUF];
    if (gad__need_floating(op, x)) return NULL;
    if ((unsigned)mode > GAD_INTERP_BILINEAR)
        return gad__err(GAD_ERR_DOMAIN, op, "unknown mode %d", (int)mode);
    int want = mode == GAD_INTERP_LINEAR ? 1 : mode == GAD_INTERP_BILINEAR ? 2 : x->rank - 2;
    if (x->rank != want + 2 || want < 1 || want > 2)
        return gad__err(GAD_ERR_SHAPE, op, "%s takes a %s input, got %s",
                        mode == GAD_INTERP_LINEAR     ? "linear"
                        : mode == GAD_INTERP_BILINEAR ? "bilinear"
                                                      : "nearest",
                        mode == GAD_INTERP_LINEAR     ? "3D"
                        : mode == GAD_INTERP_BILINEAR ? "4D"
                                                      : "3D or 4D",
                        gad__shape_str(b, x->shape, x->rank));
    if (!size == !scale_factor)
        return gad__err(GAD_ERR_DOMAIN, op, "%s", size ? "only one of size or scale_factor"
                                                       : "either size or scale_factor");
    if (n != want)
        return gad__err(GAD_ERR_SHAPE, op, "%d sizes or scale factors for %d spatial dims of %s",
                        n, want, gad__shape_str(b, x->shape, x->rank));
    if (align_corners && mode == GAD_INTERP_NEAREST)
        return gad__err(GAD_ERR_DOMAIN, op,
                        "align_corners can only be set with the interpolating modes "
                        "(linear, bilinear)");
    int64_t out[2] = {1, 1};
    for (int i = 0; i < n; i++) {
        int64_t in = x->shape[2 + i];
        if (scale_factor) {
            double s = scale_factor[i];
            if (!(s > 0) || !isfinite(s))
                return gad__err(GAD_ERR_DOMAIN, op, "scale_factor must be > 0 and finite, got %g",
                                s);
            double o = floor((double)in * s);
            if (o > 1e15) return gad__err(GAD_ERR_SHAPE, op, "output size %g too large", o);
            out[i] = (int64_t)o;
        } else {
            out[i] = size[i];
        }
        if (in <= 0 || out[i] <= 0)
            return gad__err(GAD_ERR_SHAPE, op,
                            "input and output sizes should be greater than 0, but got input "
                            "%s and output size %lld for dim %d",
                            gad__shape_str(b, x->shape, x->rank), (long long)out[i], 2 + i);
    }
    gad_np_interp p = {.mode = mode, .align = align_corners != 0, .nd = n};
    int64_t shape[4] = {x->shape[0], x->shape[1], out[0], out[1]};
    if (scale_factor)
        for (int i = 0; i < n; i++) p.sf[i] = scale_factor[i];
    return interp_run(op, x, shape, &p, 0);
}

/* -------------------------------------------------------- pixel shuffle */

static gad_tensor *shuffle(const char *op, gad_tensor *x, int64_t f, int up) {
    GAD_NEED(op, x);
    char b[GAD_SHAPE_BUF];
    int r = x->rank;
    if (r < 3 || r > GAD_MAX_RANK - 2)
        return gad__err(GAD_ERR_SHAPE, op, "takes an input of rank 3 to %d ([*, C, H, W]), got %s",
                        GAD_MAX_RANK - 2, gad__shape_str(b, x->shape, r));
    if (f <= 0) return gad__err(GAD_ERR_DOMAIN, op, "factor must be > 0, got %lld", (long long)f);
    int64_t C = x->shape[r - 3], H = x->shape[r - 2], W = x->shape[r - 1];
    if (up && C % (f * f))
        return gad__err(GAD_ERR_SHAPE, op,
                        "channels %lld of %s are not divisible by the square of the factor %lld",
                        (long long)C, gad__shape_str(b, x->shape, r), (long long)f);
    if (!up && (H % f || W % f))
        return gad__err(GAD_ERR_SHAPE, op,
                        "height and width of %s are not divisible by the factor %lld",
                        gad__shape_str(b, x->shape, r), (long long)f);
    int64_t s6[GAD_MAX_RANK], out[GAD_MAX_RANK];
    int perm[GAD_MAX_RANK], lead = r - 3;
    for (int d = 0; d < lead; d++) {
        s6[d] = out[d] = x->shape[d];
        perm[d] = d;
    }
    int q = lead;
    if (up) { /* [*, C', f, f, H, W] -> [*, C', H, f, W, f] */
        int64_t s[6] = {C / (f * f), f, f, H, W};
        memcpy(s6 + q, s, 5 * sizeof *s);
        int p[5] = {0, 3, 1, 4, 2};
        for (int k = 0; k < 5; k++) perm[q + k] = q + p[k];
        out[q] = C / (f * f);
        out[q + 1] = H * f;
        out[q + 2] = W * f;
    } else { /* [*, C, H', f, W', f] -> [*, C, f, f, H', W'] */
        int64_t s[6] = {C, H / f, f, W / f, f};
        memcpy(s6 + q, s, 5 * sizeof *s);
        int p[5] = {0, 2, 4, 1, 3};
        for (int k = 0; k < 5; k++) perm[q + k] = q + p[k];
        out[q] = C * f * f;
        out[q + 1] = H / f;
        out[q + 2] = W / f;
    }
    gad_scope_begin();
    gad_tensor *y = gad_keep(gad_reshape(gad_permute(gad_reshape(x, s6, r + 2), perm, r + 2), out, r));
    gad_scope_end();
    return y;
}

gad_tensor *gad_pixel_shuffle(gad_tensor *x, int64_t upscale_factor) {
    return shuffle("pixel_shuffle", x, upscale_factor, 1);
}

gad_tensor *gad_pixel_unshuffle(gad_tensor *x, int64_t downscale_factor) {
    return shuffle("pixel_unshuffle", x, downscale_factor, 0);
}

/* -------------------------------------------------------- unfold, fold */

/* Checks of the block options (kernel, dilation, stride > 0, padding >=
 * 0) and the blocks along H and W of an input of H x W: 0, or -1. */
static int blocks(const char *op, const gad_fold_opts *o, int64_t H, int64_t W, int64_t *L) {
    if (!o) return (gad__null_arg(op), -1);
    for (int a = 0; a < 2; a++) {
        if (o->kernel[a] <= 0 || o->dilation[a] < 0 || o->stride[a] < 0 || o->padding[a] < 0)
            return (gad__err(GAD_ERR_DOMAIN, op,
                             "kernel (%lld, %lld) must be > 0, dilation (%lld, %lld) and stride "
                             "(%lld, %lld) > 0 (0: 1), padding (%lld, %lld) >= 0",
                             (long long)o->kernel[0], (long long)o->kernel[1],
                             (long long)o->dilation[0], (long long)o->dilation[1],
                             (long long)o->stride[0], (long long)o->stride[1],
                             (long long)o->padding[0], (long long)o->padding[1]),
                    -1);
        int64_t n = a ? W : H, d = o->dilation[a] ? o->dilation[a] : 1;
        int64_t s = o->stride[a] ? o->stride[a] : 1;
        int64_t num = n + 2 * o->padding[a] - d * (o->kernel[a] - 1) - 1;
        L[a] = num < 0 ? 0 : num / s + 1;
        if (L[a] < 1)
            return (gad__err(GAD_ERR_SHAPE, op,
                             "an input of %lldx%lld with kernel (%lld, %lld), dilation (%lld, "
                             "%lld), padding (%lld, %lld) and stride (%lld, %lld) has no "
                             "sliding block",
                             (long long)H, (long long)W, (long long)o->kernel[0],
                             (long long)o->kernel[1], (long long)o->dilation[0],
                             (long long)o->dilation[1], (long long)o->padding[0],
                             (long long)o->padding[1], (long long)o->stride[0],
                             (long long)o->stride[1]),
                    -1);
    }
    return 0;
}

#define DIL(o, a) ((o)->dilation[a] ? (o)->dilation[a] : 1)
#define STR(o, a) ((o)->stride[a] ? (o)->stride[a] : 1)

/* The node parameters of the blocks o over a plane of H x W. */
static gad_np_fold fold_np(const gad_fold_opts *o, int64_t H, int64_t W) {
    gad_np_fold p = {.H = H, .W = W};
    for (int a = 0; a < 2; a++) {
        p.k[a] = o->kernel[a];
        p.s[a] = STR(o, a);
        p.p[a] = o->padding[a];
        p.d[a] = DIL(o, a);
    }
    return p;
}

static gad_fold_geom fold_geom(const gad_np_fold *p) {
    gad_fold_geom g = {.H = p->H, .W = p->W};
    for (int a = 0; a < 2; a++) {
        int64_t n = a ? p->W : p->H;
        g.k[a] = p->k[a];
        g.s[a] = p->s[a];
        g.p[a] = p->p[a];
        g.d[a] = p->d[a];
        g.L[a] = (n + 2 * p->p[a] - p->d[a] * (p->k[a] - 1) - 1) / p->s[a] + 1;
    }
    return g;
}

/* unfold (checked) by the back end's im2col: x [N, C, H, W] or [C, H, W]
 * -> [N, C kk, L] or [C kk, L]. */
static gad_tensor *unfold_run(const char *op, gad_tensor *x, const gad_np_fold *p) {
    GAD_NEED(op, x);
    GAD_HALF_VIA_F32(op, &x, 1, unfold_run(op, x, p));
    if (GAD_LACKS_FAM(op, x, pool, im2col)) return NULL;
    gad_fold_geom g = fold_geom(p);
    int r = x->rank;
    int64_t kk = p->k[0] * p->k[1], C = x->shape[r - 3];
    int64_t out[3] = {x->shape[0], C * kk, g.L[0] * g.L[1]};
    gad_tensor *y = gad__tensor_new(op, x->dev, x->dtype, r == 4 ? out : out + 1, r - 1);
    gad_tensor *xc = y ? gad__contig(op, x) : NULL;
    if (!xc) {
        gad_release(y);
        return NULL;
    }
    GAD_BE(x)->pool->im2col(xc, y, &g);
    gad_release(xc);
    y = gad__track(y, GAD_OP(UNFOLD), &x, 1, NULL, 0);
    if (y && y->node) *GAD_NODE_P(y->node, fold) = *p;
    return gad__own(y);
}

/* fold (checked) by the back end's col2im: cols [N, C kk, L] or [C kk, L]
 * -> [N, C, H, W] or [C, H, W]. */
static gad_tensor *fold_run(const char *op, gad_tensor *cols, const gad_np_fold *p) {
    GAD_NEED(op, cols);
    GAD_HALF_VIA_F32(op, &cols, 1, fold_run(op, cols, p));
    if (GAD_LACKS_FAM(op, cols, pool, col2im)) return NULL;
    gad_fold_geom g = fold_geom(p);
    int r = cols->rank;
    int64_t kk = p->k[0] * p->k[1];
    int64_t out[4] = {cols->shape[0], cols->shape[r - 2] / kk, p->H, p->W};
    gad_tensor *y = gad__tensor_new(op, cols->dev, cols->dtype, r == 3 ? out : out + 1, r + 1);
    gad_tensor *cc = y ? gad__contig(op, cols) : NULL;
    if (!cc) {
        gad_release(y);
        return NULL;
    }
    GAD_BE(cols)->pool->col2im(cc, y, &g);
    gad_release(cc);
    y = gad__track(y, GAD_OP(FOLD), &cols, 1, NULL, 0);
    if (y && y->node) *GAD_NODE_P(y->node, fold) = *p;
    return gad__own(y);
}

gad_tensor *gad_unfold(gad_tensor *x, const gad_fold_opts *o) {
    const char *op = "unfold";
    GAD_NEED(op, x);
    char b[GAD_SHAPE_BUF];
    if (gad__need_floating(op, x)) return NULL;
    if (x->rank != 3 && x->rank != 4)
        return gad__err(GAD_ERR_SHAPE, op, "takes a 3D or 4D input, got %s",
                        gad__shape_str(b, x->shape, x->rank));
    int r = x->rank;
    int64_t L[2];
    if (blocks(op, o, x->shape[r - 2], x->shape[r - 1], L)) return NULL;
    gad_np_fold p = fold_np(o, x->shape[r - 2], x->shape[r - 1]);
    return unfold_run(op, x, &p);
}

gad_tensor *gad_fold(gad_tensor *cols, const int64_t *output_size, const gad_fold_opts *o) {
    const char *op = "fold";
    GAD_NEED(op, cols);
    char b[GAD_SHAPE_BUF];
    if (gad__need_floating(op, cols)) return NULL;
    if (!output_size) return gad__null_arg(op);
    if (cols->rank != 2 && cols->rank != 3)
        return gad__err(GAD_ERR_SHAPE, op, "takes a 2D or 3D input, got %s",
                        gad__shape_str(b, cols->shape, cols->rank));
    int r = cols->rank;
    int64_t H = output_size[0], W = output_size[1], L[2];
    if (H <= 0 || W <= 0)
        return gad__err(GAD_ERR_SHAPE, op, "output_size (%lld, %lld) must be > 0",
                        (long long)H, (long long)W);
    if (blocks(op, o, H, W, L)) return NULL;
    int64_t kk = o->kernel[0] * o->kernel[1], CK = cols->shape[r - 2];
    if (CK % kk)
        return gad__err(GAD_ERR_SHAPE, op,
                        "dim %d of %s is not divisible by the kernel's %lld taps", r - 2,
                        gad__shape_str(b, cols->shape, r), (long long)kk);
    if (cols->shape[r - 1] != L[0] * L[1])
        return gad__err(GAD_ERR_SHAPE, op,
                        "dim %d of %s must be the %lld (%lldx%lld) sliding blocks of output "
                        "%lldx%lld",
                        r - 1, gad__shape_str(b, cols->shape, r), (long long)(L[0] * L[1]),
                        (long long)L[0], (long long)L[1], (long long)H, (long long)W);
    gad_np_fold p = fold_np(o, H, W);
    return fold_run(op, cols, &p);
}

/* Each is the other's transpose, so each VJP is the other op (tracked:
 * twice differentiable). */
int gad__vjp_unfold(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    gin[0] = fold_run("fold", gy, GAD_NODE_P(n, fold));
    return gin[0] ? 0 : -1;
}

int gad__vjp_fold(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    gin[0] = unfold_run("unfold", gy, GAD_NODE_P(n, fold));
    return gin[0] ? 0 : -1;
}

/* The cases: the image [N, C, H, W] (rank 3: no batch), then kernel,
 * stride, padding, dilation per axis. i[0..9]: the node's parameters in
 * gad_np_fold's order; i[10]: fold (1) or unfold. */
typedef struct fold_case {
    int rank;
    int64_t shape[4];
    int64_t k[2], s[2], p[2], d[2];
} fold_case;

static const fold_case fold_cases[] = {
    {4, {2, 2, 4, 5}, {2, 3}, {1, 1}, {0, 1}, {1, 1}},
    {4, {1, 3, 6, 5}, {3, 2}, {2, 1}, {1, 0}, {1, 2}},
    {3, {2, 5, 5}, {2, 2}, {2, 3}, {1, 1}, {2, 1}},
    {4, {0, 2, 3, 3}, {2, 2}, {1, 1}, {0, 0}, {1, 1}},
};

static gad_tensor *apply_fold(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    (void)n;
    gad_np_fold p;
    memcpy(&p, s->i, sizeof p);
    /* through the public functions (their checks of the blocks) */
    gad_fold_opts o;
    for (int a = 0; a < 2; a++) {
        o.kernel[a] = p.k[a];
        o.stride[a] = p.s[a];
        o.padding[a] = p.p[a];
        o.dilation[a] = p.d[a];
    }
    return s->i[10] ? gad_fold(in[0], (int64_t[]){p.H, p.W}, &o) : gad_unfold(in[0], &o);
}

static int fold_sample(gad_op_sample *s, gad_rng *r, int v, int fold) {
    if (v >= (int)(sizeof fold_cases / sizeof *fold_cases)) return 0;
    const fold_case *c = &fold_cases[v];
    *s = (gad_op_sample){.n = 1, .apply = apply_fold, .smooth = 1};
    int64_t H = c->shape[c->rank - 2], W = c->shape[c->rank - 1];
    gad_np_fold p = {.H = H, .W = W};
    for (int a = 0; a < 2; a++) {
        p.k[a] = c->k[a];
        p.s[a] = c->s[a];
        p.p[a] = c->p[a];
        p.d[a] = c->d[a];
    }
    memcpy(s->i, &p, sizeof p);
    s->i[10] = fold;
    snprintf(s->what, sizeof s->what, "%s [%lld..%lld,%lld] k=%lldx%lld s=%lldx%lld",
             fold ? "fold" : "unfold", (long long)c->shape[0], (long long)H, (long long)W,
             (long long)p.k[0], (long long)p.k[1], (long long)p.s[0], (long long)p.s[1]);
    gad_tensor *x = gad__sample_leaf(r, c->shape, c->rank, -2, 2, 0);
    if (!x || !fold) return (s->in[0] = x) != NULL;
    gad_tensor *y = unfold_run("unfold", gad_detach(x), &p);
    s->in[0] = y ? gad__sample_leaf(r, y->shape, y->rank, -1, 1, 0) : NULL;
    return s->in[0] != NULL;
}

int gad__sample_unfold(gad_op_sample *s, gad_rng *r, int v) {
    return fold_sample(s, r, v, 0);
}

int gad__sample_fold(gad_op_sample *s, gad_rng *r, int v) {
    return fold_sample(s, r, v, 1);
}

/* ---- composites (ops.def's COMPOSITE rows): pixel_shuffle and
 * pixel_unshuffle (reshape and permute); i[0]: the row, i[1]: the factor */
static gad_tensor *apply_shuffle(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    (void)n;
    return s->i[0] == GAD_OP_PIXEL_SHUFFLE ? gad_pixel_shuffle(in[0], s->i[1])
                                           : gad_pixel_unshuffle(in[0], s->i[1]);
}

static int shuffle_sample(gad_op_sample *s, gad_rng *r, int v, int op) {
    static const struct {
        int rank;
        int64_t shape[5], shape_un[5], f;
    } c[] = {
        {4, {1, 8, 2, 3}, {1, 2, 4, 6}, 2},
        {4, {2, 9, 2, 1}, {2, 1, 3, 6}, 3},
        {3, {4, 2, 2}, {1, 4, 2}, 2},
        {5, {2, 1, 4, 1, 2}, {2, 1, 1, 2, 4}, 2},
        {4, {0, 4, 2, 2}, {0, 1, 2, 2}, 2},
        {4, {1, 3, 2, 2}, {1, 3, 2, 2}, 1},
    };
    if (v >= (int)(sizeof c / sizeof c[0])) return 0;
    *s = (gad_op_sample){.n = 1, .apply = apply_shuffle, .smooth = 1};
    s->i[0] = op;
    s->i[1] = c[v].f;
    const int64_t *shape = op == GAD_OP_PIXEL_SHUFFLE ? c[v].shape : c[v].shape_un;
    s->in[0] = gad__sample_leaf(r, shape, c[v].rank, -2, 2, 0);
    int k = gad__shape_str(s->what, shape, c[v].rank) ? (int)strlen(s->what) : 0;
    snprintf(s->what + k, sizeof s->what - (size_t)k, " factor %lld", (long long)c[v].f);
    return s->in[0] != NULL;
}

int gad__sample_pixel_shuffle(gad_op_sample *s, gad_rng *r, int v) {
    return shuffle_sample(s, r, v, GAD_OP_PIXEL_SHUFFLE);
}
int gad__sample_pixel_unshuffle(gad_op_sample *s, gad_rng *r, int v) {
    return shuffle_sample(s, r, v, GAD_OP_PIXEL_UNSHUFFLE);
}
