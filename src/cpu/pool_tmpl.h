/* pool_tmpl.h: max and average pooling, forward and backward, written once
 * for an element type T with suffix SFX (included by pool.c for float and
 * double). Threads own whole planes, so no two write the same element and
 * results do not depend on the thread count. */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(CAT(name, _), SFX)

typedef struct {
    const T *x;
    T *y;
    int64_t *idx;
    const int64_t *cidx;
    const gad_pool_geom *g;
} FN(pool_ctx);

/* One plane's max pooling. A window read whole (len = the kernel) takes the
 * unrolled-free inner loop over a row; the comparison keeps the first
 * maximum and lets a NaN through (PyTorch's `val > max || isnan(val)`). */
static void FN(max_plane)(const T *xp, T *yp, int64_t *ip, const gad_pool_geom *g) {
    const gad_pool_axis *h = &g->h, *w = &g->w;
    int64_t W = w->n_in, Wo = w->n_out, dh = h->dil, dw = w->dil;
    for (int64_t oh = 0; oh < h->n_out; oh++) {
        int64_t bh = h->beg[oh], nh = h->len[oh];
        T *yr = yp + oh * Wo;
        int64_t *ir = ip ? ip + oh * Wo : NULL;
        for (int64_t ow = 0; ow < Wo; ow++) {
            int64_t bw = w->beg[ow], nw = w->len[ow], mi = bh * W + bw;
            T m = -INFINITY;
            for (int64_t i = 0; i < nh; i++) {
                int64_t r = (bh + i * dh) * W + bw;
                const T *row = xp + r;
                for (int64_t j = 0; j < nw; j++) {
                    T v = row[j * dw];
                    if (v > m || v != v) {
                        m = v;
                        mi = r + j * dw;
                    }
                }
            }
            yr[ow] = m;
            if (ir) ir[ow] = mi;
        }
    }
}

static void FN(max_fwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(pool_ctx) *c = vc;
    const gad_pool_geom *g = c->g;
    int64_t HW = g->h.n_in * g->w.n_in, L = g->h.n_out * g->w.n_out;
    for (int64_t p = lo; p < hi; p++)
        FN(max_plane)(c->x + p * HW, c->y + p * L, c->idx ? c->idx + p * L : NULL, g);
}

static void FN(pool_max_fwd)(const T *x, T *y, int64_t *idx, int64_t P,
                                  const gad_pool_geom *g) {
    FN(pool_ctx) c = {.x = x, .y = y, .idx = idx, .g = g};
    int64_t work = g->h.n_in * g->w.n_in + g->h.n_out * g->w.n_out;
    gad__parallel_for(P, 32768 / (work + 1) + 1, FN(max_fwd_range), &c);
}

typedef struct {
    const T *gy;
    const int64_t *idx;
    T *gx;
    int64_t L, HW;
} FN(scatter_ctx);

static void FN(max_bwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(scatter_ctx) *c = vc;
    for (int64_t p = lo; p < hi; p++) {
        T *gx = c->gx + p * c->HW;
        const T *gy = c->gy + p * c->L;
        const int64_t *ix = c->idx + p * c->L;
        memset(gx, 0, (size_t)c->HW * sizeof(T));
        for (int64_t o = 0; o < c->L; o++) gx[ix[o]] += gy[o];
    }
}

static void FN(pool_max_bwd)(const T *gy, const int64_t *idx, T *gx, int64_t P,
                                  int64_t L, int64_t HW) {
    FN(scatter_ctx) c = {.gy = gy, .idx = idx, .gx = gx, .L = L, .HW = HW};
    gad__parallel_for(P, 32768 / (L + HW + 1) + 1, FN(max_bwd_range), &c);
}

/* The divisor of output (oh, ow). */
static inline T FN(avg_div)(const gad_pool_geom *g, int64_t oh, int64_t ow) {
    return g->divisor > 0 ? (T)g->divisor : (T)(g->h.cnt[oh] * g->w.cnt[ow]);
}

/* A row segment's sum in four interleaved partial sums (the order fixed by
 * the segment alone), so that long windows (global pooling) vectorise. */
static inline T FN(row_sum)(const T *r, int64_t n) {
    T s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        s0 += r[j];
        s1 += r[j + 1];
        s2 += r[j + 2];
        s3 += r[j + 3];
    }
    for (; j < n; j++) s0 += r[j];
    return (s0 + s1) + (s2 + s3);
}

static void FN(avg_fwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(pool_ctx) *c = vc;
    const gad_pool_geom *g = c->g;
    const gad_pool_axis *h = &g->h, *w = &g->w;
    int64_t W = w->n_in, HW = h->n_in * W, Wo = w->n_out, L = h->n_out * Wo;
    for (int64_t p = lo; p < hi; p++) {
        const T *xp = c->x + p * HW;
        T *yp = c->y + p * L;
        for (int64_t oh = 0; oh < h->n_out; oh++) {
            int64_t bh = h->beg[oh], nh = h->len[oh];
            for (int64_t ow = 0; ow < Wo; ow++) {
                int64_t bw = w->beg[ow], nw = w->len[ow];
                T s = 0;
                if (nw == 2) /* 2x2 and the like: no call, no tail */
                    for (int64_t i = 0; i < nh; i++) {
                        const T *r = xp + (bh + i) * W + bw;
                        s += r[0] + r[1];
                    }
                else
                    for (int64_t i = 0; i < nh; i++) s += FN(row_sum)(xp + (bh + i) * W + bw, nw);
                yp[oh * Wo + ow] = nh && nw ? s / FN(avg_div)(g, oh, ow) : 0;
            }
        }
    }
}

static void FN(pool_avg_fwd)(const T *x, T *y, int64_t P, const gad_pool_geom *g) {
    FN(pool_ctx) c = {.x = x, .y = y, .g = g};
    int64_t work = g->h.n_in * g->w.n_in + g->h.n_out * g->w.n_out;
    gad__parallel_for(P, 32768 / (work + 1) + 1, FN(avg_fwd_range), &c);
}

/* gx = 0, then each output's gradient over its divisor added to its
 * window (in output order, fixed by the shapes). */
static void FN(avg_bwd_range)(void *vc, int64_t lo, int64_t hi) {
    FN(pool_ctx) *c = vc;
    const gad_pool_geom *g = c->g;
    const gad_pool_axis *h = &g->h, *w = &g->w;
    int64_t W = w->n_in, HW = h->n_in * W, Wo = w->n_out, L = h->n_out * Wo;
    for (int64_t p = lo; p < hi; p++) {
        T *gx = c->y + p * HW;
        const T *gy = c->x + p * L;
        memset(gx, 0, (size_t)HW * sizeof(T));
        for (int64_t oh = 0; oh < h->n_out; oh++) {
            int64_t bh = h->beg[oh], nh = h->len[oh];
            for (int64_t ow = 0; ow < Wo; ow++) {
                int64_t bw = w->beg[ow], nw = w->len[ow];
                if (!nh || !nw) continue;
                T v = gy[oh * Wo + ow] / FN(avg_div)(g, oh, ow);
                for (int64_t i = 0; i < nh; i++) {
                    T *r = gx + (bh + i) * W + bw;
                    for (int64_t j = 0; j < nw; j++) r[j] += v;
                }
            }
        }
    }
}

static void FN(pool_avg_bwd)(const T *gy, T *gx, int64_t P, const gad_pool_geom *g) {
    FN(pool_ctx) c = {.x = gy, .y = gx, .g = g};
    int64_t work = g->h.n_in * g->w.n_in + g->h.n_out * g->w.n_out;
    gad__parallel_for(P, 32768 / (work + 1) + 1, FN(avg_bwd_range), &c);
}

/* im2col and col2im (unfold, fold): threads own planes; for each tap the
 * blocks whose column reads inside the row are [lo, hi) (fold_span), so the
 * inner loops run without a bounds test (stride 1: a straight copy or add
 * that vectorises). */
typedef struct {
    const T *src;
    T *dst;
    const gad_fold_geom *g;
} FN(fold_ctx);

static void FN(im2col_range)(void *vc, int64_t p0, int64_t p1) {
    const FN(fold_ctx) *c = vc;
    const gad_fold_geom *g = c->g;
    int64_t H = g->H, W = g->W, Lh = g->L[0], Lw = g->L[1], sh = g->s[0], sw = g->s[1];
    int64_t kk = g->k[0] * g->k[1], L = Lh * Lw;
    for (int64_t p = p0; p < p1; p++) {
        const T *x = c->src + p * H * W;
        T *col = c->dst + p * kk * L;
        for (int64_t i = 0; i < g->k[0]; i++)
            for (int64_t j = 0; j < g->k[1]; j++) {
                int64_t th = i * g->d[0] - g->p[0], tw = j * g->d[1] - g->p[1], lo, hi;
                fold_span(tw, sw, W, Lw, &lo, &hi);
                T *row = col + (i * g->k[1] + j) * L;
                for (int64_t oh = 0; oh < Lh; oh++, row += Lw) {
                    int64_t h = oh * sh + th;
                    if (h < 0 || h >= H || lo >= hi) {
                        for (int64_t ow = 0; ow < Lw; ow++) row[ow] = 0;
                        continue;
                    }
                    const T *xr = x + h * W + tw;
                    for (int64_t ow = 0; ow < lo; ow++) row[ow] = 0;
                    if (sw == 1)
                        for (int64_t ow = lo; ow < hi; ow++) row[ow] = xr[ow];
                    else
                        for (int64_t ow = lo; ow < hi; ow++) row[ow] = xr[ow * sw];
                    for (int64_t ow = hi; ow < Lw; ow++) row[ow] = 0;
                }
            }
    }
}

static void FN(col2im_range)(void *vc, int64_t p0, int64_t p1) {
    const FN(fold_ctx) *c = vc;
    const gad_fold_geom *g = c->g;
    int64_t H = g->H, W = g->W, Lh = g->L[0], Lw = g->L[1], sh = g->s[0], sw = g->s[1];
    int64_t kk = g->k[0] * g->k[1], L = Lh * Lw;
    for (int64_t p = p0; p < p1; p++) {
        T *x = c->dst + p * H * W;
        const T *col = c->src + p * kk * L;
        for (int64_t e = 0; e < H * W; e++) x[e] = 0;
        for (int64_t i = 0; i < g->k[0]; i++)
            for (int64_t j = 0; j < g->k[1]; j++) {
                int64_t th = i * g->d[0] - g->p[0], tw = j * g->d[1] - g->p[1], lo, hi;
                fold_span(tw, sw, W, Lw, &lo, &hi);
                if (lo >= hi) continue;
                const T *row = col + (i * g->k[1] + j) * L;
                for (int64_t oh = 0; oh < Lh; oh++, row += Lw) {
                    int64_t h = oh * sh + th;
                    if (h < 0 || h >= H) continue;
                    T *xr = x + h * W + tw;
                    if (sw == 1)
                        for (int64_t ow = lo; ow < hi; ow++) xr[ow] += row[ow];
                    else
                        for (int64_t ow = lo; ow < hi; ow++) xr[ow * sw] += row[ow];
                }
            }
    }
}

static void FN(pool_im2col)(const T *x, T *cols, int64_t P, const gad_fold_geom *g) {
    FN(fold_ctx) c = {.src = x, .dst = cols, .g = g};
    int64_t work = g->k[0] * g->k[1] * g->L[0] * g->L[1] + 1;
    gad__parallel_for(P, 32768 / work + 1, FN(im2col_range), &c);
}

static void FN(pool_col2im)(const T *cols, T *x, int64_t P, const gad_fold_geom *g) {
    FN(fold_ctx) c = {.src = cols, .dst = x, .g = g};
    int64_t work = g->k[0] * g->k[1] * g->L[0] * g->L[1] + g->H * g->W + 1;
    gad__parallel_for(P, 32768 / work + 1, FN(col2im_range), &c);
}

/* interpolate (PyTorch's upsample_nearest/linear/bilinear order of the
 * products): threads own planes; the backward adds each gradient into its
 * (at most four) sources of the plane, so no two threads write alike. */
typedef struct {
    const T *src;
    T *dst;
    const gad_interp_geom *g;
} FN(interp_ctx);

static void FN(interp_fwd_range)(void *vc, int64_t p0, int64_t p1) {
    const FN(interp_ctx) *c = vc;
    const gad_interp_geom *g = c->g;
    const gad_interp_axis *h = &g->h, *w = &g->w;
    int64_t H = h->n_in, W = w->n_in, Ho = h->n_out, Wo = w->n_out;
    for (int64_t p = p0; p < p1; p++) {
        const T *x = c->src + p * H * W;
        T *y = c->dst + p * Ho * Wo;
        for (int64_t oh = 0; oh < Ho; oh++, y += Wo) {
            const T *r0 = x + h->i0[oh] * W, *r1 = x + h->i1[oh] * W;
            if (g->nearest) {
                for (int64_t ow = 0; ow < Wo; ow++) y[ow] = r0[w->i0[ow]];
                continue;
            }
            T a0 = (T)h->w0[oh], a1 = (T)h->w1[oh];
            if (a1 == 0)
                for (int64_t ow = 0; ow < Wo; ow++)
                    y[ow] = a0 * ((T)w->w0[ow] * r0[w->i0[ow]] + (T)w->w1[ow] * r0[w->i1[ow]]);
            else
                for (int64_t ow = 0; ow < Wo; ow++) {
                    T b0 = (T)w->w0[ow], b1 = (T)w->w1[ow];
                    int64_t j0 = w->i0[ow], j1 = w->i1[ow];
                    y[ow] = a0 * (b0 * r0[j0] + b1 * r0[j1]) + a1 * (b0 * r1[j0] + b1 * r1[j1]);
                }
        }
    }
}

static void FN(interp_bwd_range)(void *vc, int64_t p0, int64_t p1) {
    const FN(interp_ctx) *c = vc;
    const gad_interp_geom *g = c->g;
    const gad_interp_axis *h = &g->h, *w = &g->w;
    int64_t H = h->n_in, W = w->n_in, Ho = h->n_out, Wo = w->n_out;
    for (int64_t p = p0; p < p1; p++) {
        T *x = c->dst + p * H * W;
        const T *gy = c->src + p * Ho * Wo;
        for (int64_t e = 0; e < H * W; e++) x[e] = 0;
        for (int64_t oh = 0; oh < Ho; oh++, gy += Wo) {
            T *r0 = x + h->i0[oh] * W, *r1 = x + h->i1[oh] * W;
            if (g->nearest) {
                for (int64_t ow = 0; ow < Wo; ow++) r0[w->i0[ow]] += gy[ow];
                continue;
            }
            T a0 = (T)h->w0[oh], a1 = (T)h->w1[oh];
            for (int64_t ow = 0; ow < Wo; ow++) {
                T b0 = (T)w->w0[ow], b1 = (T)w->w1[ow], v = gy[ow];
                int64_t j0 = w->i0[ow], j1 = w->i1[ow];
                r0[j0] += a0 * b0 * v;
                r0[j1] += a0 * b1 * v;
                if (a1 != 0) {
                    r1[j0] += a1 * b0 * v;
                    r1[j1] += a1 * b1 * v;
                }
            }
        }
    }
}

static void FN(pool_interp)(const T *src, T *dst, int64_t P, const gad_interp_geom *g, int bwd) {
    FN(interp_ctx) c = {.src = src, .dst = dst, .g = g};
    int64_t work = g->h.n_in * g->w.n_in + g->h.n_out * g->w.n_out + 1;
    gad__parallel_for(P, 32768 / work + 1, bwd ? FN(interp_bwd_range) : FN(interp_fwd_range), &c);
}

#undef FN
#undef CAT
#undef CAT_
