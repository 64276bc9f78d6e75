/* conv_tmpl.h: the convolution family's kernels, written once for an
 * element type T with suffix SFX (included by conv.c for float and double).
 *
 * Each product is a GEMM per (image, group) over the output positions, cut
 * into tiles of TN positions: the tile's patch matrix (im2col, [cin_g * K,
 * tn], K the kernel's taps) is packed into a per-thread buffer of bounded
 * size, never the whole batch's. A 1x1 kernel with stride 1 and no padding
 * reads x in place (the GEMM alone). Every output element is made by one
 * task over a split fixed by the sizes alone, and bwd_weight's sum over the
 * batch runs in chunks fixed by the sizes and is added up in order, so that
 * results do not depend on the thread count. With stride 1 the products
 * are sums of shifted GEMMs over a padded copy (below); in f32 on AVX-512
 * the kernels of conv_kern.h take them instead of the GEMM where the
 * channels fit their tiles. */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(CAT(name, _), SFX)

#if SFX_IS_F32
#define GEMM gad__sgemm_builtin
#else
#define GEMM gad__dgemm_builtin
#endif

/* Rows [r0, r1) of the patch matrix of output positions [j0, j1) of one
 * image's group (xg: its first channel), row r = (ci, kd, kh, kw), written
 * row-major with row length j1 - j0 into col (or, when add, col added back
 * into xg: the transpose, for bwd_data). */
static void FN(patches)(const gad_conv_geom *g, T *xg, T *col, int64_t r0, int64_t r1,
                        int64_t j0, int64_t j1, int add) {
    const int64_t K = g->k[0] * g->k[1] * g->k[2], O1 = g->out[1], O2 = g->out[2];
    const int64_t I1 = g->in[1], I2 = g->in[2], isp = g->in[0] * I1 * I2, tn = j1 - j0;
    const int64_t s2 = g->stride[2];
    for (int64_t r = r0; r < r1; r++) {
        int64_t ci = r / K, t = r % K;
        int64_t kw = t % g->k[2], kh = (t / g->k[2]) % g->k[1], kd = t / (g->k[2] * g->k[1]);
        T *xc = xg + ci * isp, *row = col + (r - r0) * tn;
        int64_t off2 = kw * g->dil[2] - g->pad[2];
        /* the output columns whose input column lies inside [0, I2) */
        int64_t lo = off2 >= 0 ? 0 : (-off2 + s2 - 1) / s2;
        int64_t hi = I2 - 1 - off2 < 0 ? 0 : (I2 - 1 - off2) / s2 + 1;
        if (hi > O2) hi = O2;
        int64_t j = j0;
        while (j < j1) {
            int64_t ow = j % O2, oh = (j / O2) % O1, od = j / (O2 * O1);
            int64_t run = O2 - ow < j1 - j ? O2 - ow : j1 - j; /* to the row's end */
            T *dst = row + (j - j0);
            int64_t id = od * g->stride[0] - g->pad[0] + kd * g->dil[0];
            int64_t ih = oh * g->stride[1] - g->pad[1] + kh * g->dil[1];
            if (id < 0 || id >= g->in[0] || ih < 0 || ih >= I1) {
                if (!add)
                    for (int64_t q = 0; q < run; q++) dst[q] = 0;
            } else {
                T *src = xc + (id * I1 + ih) * I2; /* column w * s2 + off2 */
                int64_t a = lo > ow ? lo : ow, b = hi < ow + run ? hi : ow + run;
                if (add) {
                    for (int64_t w = a; w < b; w++) src[w * s2 + off2] += dst[w - ow];
                } else {
                    for (int64_t w = ow; w < a && w < ow + run; w++) dst[w - ow] = 0;
                    if (s2 == 1)
                        for (int64_t w = a; w < b; w++) dst[w - ow] = src[w + off2];
                    else
                        for (int64_t w = a; w < b; w++) dst[w - ow] = src[w * s2 + off2];
                    for (int64_t w = b > a ? b : a; w < ow + run; w++) dst[w - ow] = 0;
                }
            }
            j += run;
        }
    }
}

/* Whether x is its own patch matrix: a 1x1 kernel, stride 1, no padding. */
static int FN(direct)(const gad_conv_geom *g) {
    for (int d = 0; d < 3; d++)
        if (g->k[d] != 1 || g->stride[d] != 1 || g->pad[d] != 0 || g->in[d] != g->out[d])
            return 0;
    return 1;
}

/* The tile width: a patch tile of about 96K elements (384 KiB in f32), in
 * multiples of 16 positions, at most the whole output. */
static int64_t FN(tile)(const gad_conv_geom *g, int64_t ck) {
    int64_t osp = g->out[0] * g->out[1] * g->out[2];
    int64_t tn = (98304 / (ck ? ck : 1)) & ~(int64_t)15;
    if (tn < 16) tn = 16;
    return tn < osp ? tn : (osp ? osp : 1);
}

typedef struct {
    const gad_conv_geom *g;
    const T *a, *b; /* the entry's two inputs */
    const T *bias;  /* per output channel, or NULL */
    T *y, *part;    /* its output; bwd_weight's partial sums */
    int64_t cin_g, cout_g, ck, isp, osp, tn, ntile, ntask, nchunk;
    int direct, ta, tb;
    int shifted;    /* stride 1: shifted GEMMs over a padded copy (below) */
    const T *wt;    /* shifted: the weights per group and tap, [M, K] each */
    int64_t P[3], psp, np, lo[3], kk; /* shifted: padded extents, taps */
    int64_t sin[3], sout[3];          /* shifted: its source and output extents */
    size_t shbytes;                   /* shifted: a thread's padded buffers */
    int k8;            /* shifted fwd/bwd_data: the 8 x 48 kernel (conv_kern.h) */
    int64_t mr, npr;   /* k8: rows rounded up to 8, positions to 48 */
    int64_t wgs;       /* shifted: wt's elements per group */
    int k8w;           /* shifted bwd_weight: its kernel (conv_kern.h) */
    const int64_t *shift; /* k8, k8w: each tap's shift */
    char *buf;   /* per thread: the patch tile, then GEMM's packing */
    size_t per, colbytes;
    atomic_llong next;
    atomic_int failed;
} FN(conv_ctx);

/* GEMM packing bytes for one tile product of this entry, and its tail. */
static size_t FN(gemm_bytes)(FN(conv_ctx) *c, int64_t M, int64_t K, int64_t lda, int kind) {
    size_t most = 0;
    int64_t tails[2] = {c->tn, c->osp % c->tn};
    for (int i = 0; i < 2; i++) {
        int64_t tn = tails[i];
        if (!tn) continue;
        size_t s;
        if (kind == 0) /* fwd: [cout_g, ck] @ [ck, tn] */
            s = gad__gemm_scratch_bytes(!SFX_IS_F32, 0, 0, M, tn, K, lda,
                                        c->direct ? c->isp : tn);
        else if (kind == 1) /* bwd_data: [ck, cout_g]^T... @ [cout_g, tn] */
            s = gad__gemm_scratch_bytes(!SFX_IS_F32, 1, 0, M, tn, K, lda, c->osp);
        else /* bwd_weight: [cout_g, tn] @ [ck, tn]^T */
            s = gad__gemm_scratch_bytes(!SFX_IS_F32, 0, 1, M, K, tn, c->osp,
                                        c->direct ? c->isp : tn);
        if (s > most) most = s;
    }
    return most;
}

static void FN(fwd_task)(FN(conv_ctx) *c, T *col, int64_t task) {
    const gad_conv_geom *g = c->g;
    int64_t tile = task % c->ntile, ng = task / c->ntile;
    int64_t grp = ng % g->groups, n = ng / g->groups;
    int64_t j0 = tile * c->tn, j1 = j0 + c->tn < c->osp ? j0 + c->tn : c->osp;
    const T *xg = c->a + (n * g->cin + grp * c->cin_g) * c->isp;
    const T *wg = c->b + grp * c->cout_g * c->ck;
    T *yg = c->y + (n * g->cout + grp * c->cout_g) * c->osp + j0;
    const T *B = xg + j0;
    int64_t ldb = c->isp;
    if (!c->direct) {
        FN(patches)(g, (T *)xg, col, 0, c->ck, j0, j1, 0);
        B = col;
        ldb = j1 - j0;
    }
    if (GEMM(0, 0, c->cout_g, j1 - j0, c->ck, 1, wg, c->ck, B, ldb, 0, yg, c->osp))
        atomic_store(&c->failed, 1);
    if (c->bias)
        for (int64_t co = 0; co < c->cout_g; co++) {
            T bv = c->bias[grp * c->cout_g + co], *row = yg + co * c->osp;
            for (int64_t j = 0; j < j1 - j0; j++) row[j] += bv;
        }
}

/* One (image, group): its input gradient, tile after tile (the tiles'
 * patches overlap, so they stay in one task). */
static void FN(bwd_data_task)(FN(conv_ctx) *c, T *col, int64_t task) {
    const gad_conv_geom *g = c->g;
    int64_t grp = task % g->groups, n = task / g->groups;
    const T *gyg = c->a + (n * g->cout + grp * c->cout_g) * c->osp;
    const T *wg = c->b + grp * c->cout_g * c->ck;
    T *dxg = c->y + (n * g->cin + grp * c->cin_g) * c->isp;
    if (!c->direct)
        for (int64_t i = 0; i < c->cin_g * c->isp; i++) dxg[i] = 0;
    for (int64_t j0 = 0; j0 < c->osp; j0 += c->tn) {
        int64_t j1 = j0 + c->tn < c->osp ? j0 + c->tn : c->osp, tn = j1 - j0;
        T *C = c->direct ? dxg + j0 : col;
        if (GEMM(1, 0, c->ck, tn, c->cout_g, 1, wg, c->ck, gyg + j0, c->osp, 0, C,
                 c->direct ? c->isp : tn))
            atomic_store(&c->failed, 1);
        if (!c->direct) FN(patches)(g, dxg, col, 0, c->ck, j0, j1, 1);
    }
    if (c->bias)
        for (int64_t ci = 0; ci < c->cin_g; ci++) {
            T bv = c->bias[grp * c->cin_g + ci], *row = dxg + ci * c->isp;
            for (int64_t i = 0; i < c->isp; i++) row[i] += bv;
        }
}

/* One chunk of images: their weight gradient, summed into the chunk's
 * partial. */
static void FN(bwd_weight_task)(FN(conv_ctx) *c, T *col, int64_t chunk) {
    const gad_conv_geom *g = c->g;
    int64_t per = (g->n + c->nchunk - 1) / c->nchunk, n0 = chunk * per;
    int64_t n1 = n0 + per < g->n ? n0 + per : g->n, wsize = g->cout * c->ck;
    T *part = c->part + chunk * wsize;
    for (int64_t i = 0; i < wsize; i++) part[i] = 0;
    for (int64_t n = n0; n < n1; n++)
        for (int64_t grp = 0; grp < g->groups; grp++) {
            const T *xg = c->a + (n * g->cin + grp * c->cin_g) * c->isp;
            const T *gyg = c->b + (n * g->cout + grp * c->cout_g) * c->osp;
            T *dwg = part + grp * c->cout_g * c->ck;
            for (int64_t j0 = 0; j0 < c->osp; j0 += c->tn) {
                int64_t j1 = j0 + c->tn < c->osp ? j0 + c->tn : c->osp, tn = j1 - j0;
                const T *B = xg + j0;
                int64_t ldb = c->isp;
                if (!c->direct) {
                    FN(patches)(g, (T *)xg, col, 0, c->ck, j0, j1, 0);
                    B = col;
                    ldb = tn;
                }
                if (GEMM(0, 1, c->cout_g, c->ck, tn, 1, gyg + j0, c->osp, B, ldb, 1, dwg,
                         c->ck))
                    atomic_store(&c->failed, 1);
            }
        }
}


/* ---- stride 1: shifted GEMMs over a padded copy, no patch matrix ----
 * With stride 1, output o of tap j reads input o - lo + j*dil. In a copy of
 * the source padded to P = out + dil*(k-1) per dim (lo zeros before, which
 * may be negative: a crop), flattened, and with outputs indexed in the same
 * layout (p = (od*P1 + oh)*P2 + ow; the columns ow >= out2 and rows oh >=
 * out1 in between are computed and dropped), tap j's inputs of every output
 * are the copy shifted by (j0 d0 P1 + j1 d1) P2 + j2 d2. A convolution is
 * then a sum over taps of GEMMs [M, K] @ [K, positions] whose B is read in
 * place, and the weight gradient a sum over positions of such products
 * (convolution as a sum of shifted matrix products: Vasudevan, Anderson and
 * Gregg, "Parallel Multi Channel Convolution using General Matrix
 * Multiplication", ASAP 2017). The transposed convolution with stride 1 is
 * the convolution of gy with the kernel flipped and channels swapped, lo =
 * dil (k - 1) - pad. */

static int FN(unit_stride)(const gad_conv_geom *g) {
    return g->stride[0] == 1 && g->stride[1] == 1 && g->stride[2] == 1;
}

/* The shifted geometry of a source of extents in, an output of extents out,
 * padding lo before. */
static void FN(shift_init)(FN(conv_ctx) *c, const int64_t in[3], const int64_t out[3],
                           const int64_t lo[3]) {
    const gad_conv_geom *g = c->g;
    c->shifted = 1;
    c->kk = g->k[0] * g->k[1] * g->k[2];
    c->psp = 1;
    for (int d = 0; d < 3; d++) {
        c->sin[d] = in[d], c->sout[d] = out[d], c->lo[d] = lo[d];
        c->P[d] = out[d] + g->dil[d] * (g->k[d] - 1);
        c->psp *= c->P[d];
    }
    c->np = out[0] && out[1] && out[2]
                ? ((out[0] - 1) * c->P[1] + out[1] - 1) * c->P[2] + out[2] : 0;
    /* chunks of positions whose output block and source span stay in L2 */
    int64_t m = c->cout_g > c->cin_g ? c->cout_g : c->cin_g;
    int64_t tn = (32768 / (m ? m : 1)) & ~(int64_t)15;
    if (tn < 64) tn = 64;
    c->tn = tn < c->np ? tn : (c->np ? c->np : 1);
}

static int64_t FN(tap_shift)(const FN(conv_ctx) *c, int64_t t) {
    const gad_conv_geom *g = c->g;
    int64_t j2 = t % g->k[2], j1 = (t / g->k[2]) % g->k[1], j0 = t / (g->k[2] * g->k[1]);
    return (j0 * g->dil[0] * c->P[1] + j1 * g->dil[1]) * c->P[2] + j2 * g->dil[2];
}

/* dst [ch, P] = src [ch, sin] placed at offset -lo, zeros elsewhere. */
static void FN(pad_copy)(const FN(conv_ctx) *c, const T *src, int64_t ch, T *dst) {
    const int64_t *P = c->P, *I = c->sin, *lo = c->lo;
    int64_t isp = I[0] * I[1] * I[2];
    int64_t a = lo[2] > 0 ? lo[2] : 0;              /* first q2 inside */
    int64_t b = I[2] + lo[2] < P[2] ? I[2] + lo[2] : P[2]; /* end of inside */
    for (int64_t cc = 0; cc < ch; cc++)
        for (int64_t q0 = 0; q0 < P[0]; q0++)
            for (int64_t q1 = 0; q1 < P[1]; q1++) {
                T *row = dst + ((cc * P[0] + q0) * P[1] + q1) * P[2];
                int64_t i0 = q0 - lo[0], i1 = q1 - lo[1];
                if (i0 < 0 || i0 >= I[0] || i1 < 0 || i1 >= I[1] || b <= a) {
                    memset(row, 0, (size_t)P[2] * sizeof(T));
                    continue;
                }
                const T *sr = src + cc * isp + (i0 * I[1] + i1) * I[2];
                memset(row, 0, (size_t)a * sizeof(T));
                memcpy(row + a, sr + (a - lo[2]), (size_t)(b - a) * sizeof(T));
                memset(row + b, 0, (size_t)(P[2] - b) * sizeof(T));
            }
}

/* Bytes of the shifted fwd/bwd_data buffers of one thread: the padded
 * source (K channels; k8: with slack for the last tile's reads past the
 * end, which np + the largest shift = psp bounds by 48) and the padded
 * output (M rows; k8: mr rows of npr). */
static void FN(shifted_sizes)(const FN(conv_ctx) *c, int64_t K, int64_t M, size_t *a,
                              size_t *b) {
#if SFX_IS_F32 && defined(GEMM_X86)
    int64_t slack = c->k8 ? CONV_K8_NR : 0;
#else
    int64_t slack = 0;
#endif
    int64_t cn = c->k8 ? c->mr * c->npr : M * (c->np ? c->np : 1);
    *a = ((size_t)(K * c->psp + slack) * sizeof(T) + GAD_ALIGN - 1) / GAD_ALIGN * GAD_ALIGN;
    *b = ((size_t)cn * sizeof(T) + GAD_ALIGN - 1) / GAD_ALIGN * GAD_ALIGN;
}

/* One (image, group) of fwd or bwd_data on the shifted path: src [K,
 * sin] -> dst [M, sout] (+ bias [M]); wt: [taps][M][K], or with k8
 * [mr / 8][taps][K][8]. */
static void FN(shifted_task)(FN(conv_ctx) *c, char *mine, const T *src, int64_t K,
                             const T *wt, int64_t M, T *dst, const T *bias) {
    size_t abytes, bbytes;
    FN(shifted_sizes)(c, K, M, &abytes, &bbytes);
    T *spad = (T *)mine, *cpad = (T *)(mine + abytes);
    int64_t ldc = c->k8 ? c->npr : c->np;
    FN(pad_copy)(c, src, K, spad);
#if SFX_IS_F32 && defined(GEMM_X86)
    if (c->k8) {
        memset(spad + K * c->psp, 0, CONV_K8_NR * sizeof(T));
        for (int64_t p0 = 0; p0 < c->npr; p0 += CONV_K8_NR)
            for (int64_t m0 = 0; m0 < c->mr; m0 += CONV_K8_MR)
                gad__conv_s8x48_avx512(c->kk, c->shift, K, wt + m0 * c->kk * K, spad + p0,
                                       c->psp, cpad + m0 * ldc + p0, ldc);
    } else
#endif
        for (int64_t p0 = 0; p0 < c->np; p0 += c->tn) {
            int64_t tn = p0 + c->tn < c->np ? c->tn : c->np - p0;
            for (int64_t t = 0; t < c->kk; t++)
                if (GEMM(0, 0, M, tn, K, 1, wt + t * M * K, K,
                         spad + p0 + FN(tap_shift)(c, t), c->psp, t ? 1 : 0, cpad + p0, c->np))
                    atomic_store(&c->failed, 1);
        }
    const int64_t *O = c->sout;
    int64_t osp = O[0] * O[1] * O[2];
    for (int64_t m = 0; m < M; m++) {
        T bv = bias ? bias[m] : 0;
        for (int64_t o0 = 0; o0 < O[0]; o0++)
            for (int64_t o1 = 0; o1 < O[1]; o1++) {
                const T *sr = cpad + m * ldc + (o0 * c->P[1] + o1) * c->P[2];
                T *dr = dst + m * osp + (o0 * O[1] + o1) * O[2];
                for (int64_t o2 = 0; o2 < O[2]; o2++) dr[o2] = sr[o2] + bv;
            }
    }
}

/* Positions per block of the weight gradient's patch rows: [pb, taps *
 * cin_g] of about 96K elements, so that GEMM reads it in place. */
static int64_t FN(wgrad_block)(const FN(conv_ctx) *c) {
    int64_t row = c->kk * c->cin_g, pb = (98304 / (row ? row : 1)) & ~(int64_t)7;
    if (pb < 8) pb = 8;
    return pb < c->np ? pb : (c->np ? c->np : 1);
}

/* Bytes of one thread's shifted buffers: the padded source (K channels)
 * and the padded output (M), in c->shbytes; returned: GEMM's packing (none
 * with the kernels of conv_kern.h, nor bwd_weight's block of patch rows). */
static size_t FN(shifted_bytes)(FN(conv_ctx) *c, int64_t K, int64_t M, int wgrad) {
    size_t a, b;
    FN(shifted_sizes)(c, K, M, &a, &b);
    /* wgrad: the padded x transposed too, and a block of patch rows */
    size_t r = wgrad && !c->k8w ? (size_t)(FN(wgrad_block)(c) * c->kk * K) * sizeof(T) : 0;
    c->shbytes = a + b + (wgrad ? a + r : 0);
    return c->k8w ? 0
           : wgrad ? gad__gemm_scratch_bytes(!SFX_IS_F32, 1, 0, M, c->kk * K,
                                            FN(wgrad_block)(c), M, c->kk * K)
           : c->k8 ? 0
                   : gad__gemm_scratch_bytes(!SFX_IS_F32, 0, 0, M, c->tn, K, K, c->psp);
}

/* dst [n, ch] = src [ch, n] (row stride ld), in blocks that stay in L1. */
static void FN(transpose)(const T *src, int64_t ch, int64_t n, int64_t ld, T *dst) {
#if SFX_IS_F32 && defined(GEMM_X86)
    if (gad__gemm_isa() == 3) {
        gad__conv_transpose_avx512(src, ch, n, ld, dst);
        return;
    }
#endif
    for (int64_t p0 = 0; p0 < n; p0 += 64) {
        int64_t p1 = p0 + 64 < n ? p0 + 64 : n;
        for (int64_t c0 = 0; c0 < ch; c0 += 64) {
            int64_t c1 = c0 + 64 < ch ? c0 + 64 : ch;
            for (int64_t cc = c0; cc < c1; cc++)
                for (int64_t p = p0; p < p1; p++) dst[p * ch + cc] = src[cc * ld + p];
        }
    }
}

/* One chunk of images of bwd_weight on the shifted path: part [cout, taps,
 * cin_g] += gy (position-major, in the padded layout with zeros between
 * rows)^T @ the patch rows of the padded x, made block by block of
 * positions from a position-major copy of it (each block's row of taps is
 * a copy of cin_g contiguous values per tap): one GEMM over every tap, so
 * that gy is read once per block and no operand is packed twice. */
static void FN(shifted_wgrad_task)(FN(conv_ctx) *c, char *mine, int64_t chunk) {
    const gad_conv_geom *g = c->g;
    int64_t per = (g->n + c->nchunk - 1) / c->nchunk, n0 = chunk * per;
    int64_t n1 = n0 + per < g->n ? n0 + per : g->n;
    int64_t wsize = g->cout * c->ck;
    T *part = c->part + chunk * wsize;
    size_t a = ((size_t)(c->cin_g * c->psp) * sizeof(T) + GAD_ALIGN - 1) / GAD_ALIGN * GAD_ALIGN;
    size_t b = ((size_t)(c->cout_g * c->np) * sizeof(T) + GAD_ALIGN - 1) / GAD_ALIGN * GAD_ALIGN;
    T *spad = (T *)mine, *gT = (T *)(mine + a), *sT = (T *)(mine + a + b);
    T *rows = (T *)(mine + a + b + a);
    for (int64_t i = 0; i < wsize; i++) part[i] = 0;
    const int64_t *O = c->sout;
    int64_t M = c->cout_g, K = c->cin_g, row = c->kk * K, pb = FN(wgrad_block)(c);
    for (int64_t n = n0; n < n1; n++)
        for (int64_t grp = 0; grp < g->groups; grp++) {
            FN(pad_copy)(c, c->a + (n * g->cin + grp * K) * c->isp, K, spad);
            FN(transpose)(spad, K, c->psp, c->psp, sT);
            const T *gyg = c->b + (n * g->cout + grp * M) * c->osp;
            for (int64_t i = 0; i < M * c->np; i++) gT[i] = 0;
            for (int64_t o0 = 0; o0 < O[0]; o0++)
                for (int64_t o1 = 0; o1 < O[1]; o1++)
                    FN(transpose)(gyg + (o0 * O[1] + o1) * O[2], M, O[2], c->osp,
                                  gT + ((o0 * c->P[1] + o1) * c->P[2]) * M);
#if SFX_IS_F32 && defined(GEMM_X86)
            if (c->k8w) { /* part [grp][tap][cin_g][cout_g] */
                /* blocks of 64 positions: gy's and x's rows stay in L1 over
                 * the taps and tiles */
                for (int64_t p0 = 0; p0 < c->np; p0 += 64) {
                    int64_t nb = p0 + 64 < c->np ? 64 : c->np - p0;
                    for (int64_t t = 0; t < c->kk; t++)
                        gad__conv_swgrad_avx512(nb, M, K, gT + p0 * M, M,
                                                sT + (p0 + c->shift[t]) * K, K,
                                                part + (grp * c->kk + t) * K * M, M);
                }
                continue;
            }
#endif
            for (int64_t p0 = 0; p0 < c->np; p0 += pb) {
                int64_t nb = p0 + pb < c->np ? pb : c->np - p0;
                for (int64_t t = 0; t < c->kk; t++) {
                    const T *src = sT + (p0 + FN(tap_shift)(c, t)) * K;
                    for (int64_t q = 0; q < nb; q++)
                        memcpy(rows + q * row + t * K, src + q * K, (size_t)K * sizeof(T));
                }
                if (GEMM(1, 0, M, row, nb, 1, gT + p0 * M, M, rows, row, 1,
                         part + grp * M * row, row))
                    atomic_store(&c->failed, 1);
            }
        }
}

static void FN(conv_part)(void *vc, int t, int nt) {
    FN(conv_ctx) *c = vc;
    (void)nt;
    char *mine = c->buf + (size_t)t * c->per;
    T *col = (T *)mine;
    if (nt > 1) gad__gemm_lend_scratch(mine + c->colbytes, c->per - c->colbytes);
    for (;;) {
        int64_t k = atomic_fetch_add_explicit(&c->next, 1, memory_order_relaxed);
        if (k >= c->ntask) break;
        if (c->shifted) {
            const gad_conv_geom *g = c->g;
            int64_t grp = k % g->groups, n = k / g->groups;
            if (c->part) {
                FN(shifted_wgrad_task)(c, mine, k);
            } else if (c->ta) { /* bwd_data: gy's group -> dx's */
                FN(shifted_task)(c, mine, c->a + (n * g->cout + grp * c->cout_g) * c->osp,
                                 c->cout_g, c->wt + grp * c->wgs,
                                 c->cin_g, c->y + (n * g->cin + grp * c->cin_g) * c->isp,
                                 c->bias ? c->bias + grp * c->cin_g : NULL);
            } else {
                FN(shifted_task)(c, mine, c->a + (n * g->cin + grp * c->cin_g) * c->isp,
                                 c->cin_g, c->wt + grp * c->wgs,
                                 c->cout_g, c->y + (n * g->cout + grp * c->cout_g) * c->osp,
                                 c->bias ? c->bias + grp * c->cout_g : NULL);
            }
        } else if (c->part) FN(bwd_weight_task)(c, col, k);
        else if (c->ta) FN(bwd_data_task)(c, col, k);
        else FN(fwd_task)(c, col, k);
    }
    if (nt > 1) gad__gemm_lend_scratch(NULL, 0);
}

/* Run the entry's tasks over gad's threads, each with its own scratch. */
static int FN(conv_run)(const char *op, FN(conv_ctx) *c, size_t gemm) {
    c->colbytes = c->shifted  ? c->shbytes
                  : c->direct ? 0 : (size_t)(c->ck * c->tn) * sizeof(T);
    c->colbytes = (c->colbytes + GAD_ALIGN - 1) & ~(size_t)(GAD_ALIGN - 1);
    c->per = (c->colbytes + gemm + GAD_ALIGN - 1) & ~(size_t)(GAD_ALIGN - 1);
    if (c->per == 0) c->per = GAD_ALIGN;
    int nt = gad__pool_nested() ? 1 : gad__nthreads();
    /* fewer tasks than threads: one thread, whose GEMMs spread themselves,
     * or with the kernels of conv_kern.h (no GEMM) a thread a task */
    if (nt > c->ntask) nt = c->k8 || c->k8w ? (int)c->ntask : 1;
    if (nt < 1) nt = 1;
    c->buf = gad__alloc(c->per * (size_t)nt);
    if (!c->buf) {
        gad__err(GAD_ERR_MEMORY, op, "cannot allocate %zu bytes of convolution scratch",
                 c->per * (size_t)nt);
        return -1;
    }
    atomic_init(&c->next, 0);
    atomic_init(&c->failed, 0);
    if (nt > 1) gad__pool_run(nt, FN(conv_part), c);
    else FN(conv_part)(c, 0, 1);
    gad__free(c->buf, c->per * (size_t)nt);
    if (atomic_load(&c->failed)) {
        gad__err(GAD_ERR_MEMORY, op, "cannot allocate GEMM scratch");
        return -1;
    }
    return 0;
}

static void FN(conv_init)(FN(conv_ctx) *c, const gad_conv_geom *g) {
    memset(c, 0, sizeof *c);
    c->g = g;
    c->cin_g = g->cin / g->groups;
    c->cout_g = g->cout / g->groups;
    c->ck = c->cin_g * g->k[0] * g->k[1] * g->k[2];
    c->isp = g->in[0] * g->in[1] * g->in[2];
    c->osp = g->out[0] * g->out[1] * g->out[2];
    c->direct = FN(direct)(g);
    c->tn = FN(tile)(g, c->ck);
    c->ntile = (c->osp + c->tn - 1) / c->tn;
}



/* ---- depthwise (one input and one output channel per group): direct
 * loops over each plane, vectorised along the rows; a GEMM of one row and
 * one column would be all overhead. */

static int FN(depthwise)(const gad_conv_geom *g) {
    if (atomic_load_explicit(&gad__conv_test_path, memory_order_relaxed)) return 0;
    return g->groups > 1 && g->cin == g->groups && g->cout == g->groups;
}

/* The outputs o in [*a, *b) whose input o*s + off lies in [0, n), at most
 * out of them. */
static void FN(row_range)(int64_t off, int64_t s, int64_t n, int64_t out, int64_t *a,
                          int64_t *b) {
    *a = off >= 0 ? 0 : (-off + s - 1) / s;
    *b = n - 1 - off < 0 ? 0 : (n - 1 - off) / s + 1;
    if (*b > out) *b = out;
    if (*a > *b) *a = *b;
}

GAD_CLONES static void FN(dw_axpy)(T *restrict y, const T *restrict x, T w, int64_t a,
                                   int64_t b, int64_t s, int64_t off) {
    if (s == 1)
        for (int64_t o = a; o < b; o++) y[o] += w * x[o + off];
    else
        for (int64_t o = a; o < b; o++) y[o] += w * x[o * s + off];
}

GAD_CLONES static void FN(dw_scatter)(T *restrict x, const T *restrict y, T w, int64_t a,
                                      int64_t b, int64_t s, int64_t off) {
    if (s == 1)
        for (int64_t o = a; o < b; o++) x[o + off] += w * y[o];
    else
        for (int64_t o = a; o < b; o++) x[o * s + off] += w * y[o];
}

/* sum of y[o] x[o*s + off] over [a, b), in lanes of 16 then in order */
GAD_CLONES static T FN(dw_dot)(const T *restrict y, const T *restrict x, int64_t a, int64_t b,
                               int64_t s, int64_t off) {
    T acc[16] = {0}, r = 0;
    int64_t o = a;
    if (s == 1)
        for (; o + 16 <= b; o += 16)
            for (int l = 0; l < 16; l++) acc[l] += y[o + l] * x[o + l + off];
    for (; o < b; o++) r += y[o] * x[o * s + off];
    for (int l = 0; l < 16; l++) r += acc[l];
    return r;
}

typedef struct {
    const gad_conv_geom *g;
    const T *a, *b, *bias;
    T *y;
    int kind; /* 0 fwd (a x, b w), 1 bwd_data (a gy, b w), 2 bwd_weight (a x, b gy) */
} FN(dw_ctx);

/* For each output row (o0, o1) and tap (j0, j1) reading an input row
 * inside the input, call body with the row offsets. */
#define DW_ROWS(g, ...)                                                        \
    for (int64_t o0 = 0; o0 < (g)->out[0]; o0++)                               \
        for (int64_t j0 = 0; j0 < (g)->k[0]; j0++) {                           \
            int64_t i0 = o0 * (g)->stride[0] - (g)->pad[0] + j0 * (g)->dil[0]; \
            if (i0 < 0 || i0 >= (g)->in[0]) continue;                          \
            for (int64_t o1 = 0; o1 < (g)->out[1]; o1++)                       \
                for (int64_t j1 = 0; j1 < (g)->k[1]; j1++) {                   \
                    int64_t i1 = o1 * (g)->stride[1] - (g)->pad[1] + j1 * (g)->dil[1]; \
                    if (i1 < 0 || i1 >= (g)->in[1]) continue;                  \
                    int64_t orow = (o0 * (g)->out[1] + o1) * (g)->out[2];      \
                    int64_t irow = (i0 * (g)->in[1] + i1) * (g)->in[2];        \
                    int64_t tap0 = (j0 * (g)->k[1] + j1) * (g)->k[2];          \
                    __VA_ARGS__                                                \
                }                                                              \
        }

static void FN(dw_range)(void *vc, int64_t lo, int64_t hi) {
    FN(dw_ctx) *c = vc;
    const gad_conv_geom *g = c->g;
    int64_t C = g->cin, isp = g->in[0] * g->in[1] * g->in[2];
    int64_t osp = g->out[0] * g->out[1] * g->out[2], kk = g->k[0] * g->k[1] * g->k[2];
    int64_t s2 = g->stride[2];
    for (int64_t task = lo; task < hi; task++) {
        if (c->kind == 2) { /* channel `task`: its taps over the batch */
            T *dw = c->y + task * kk;
            for (int64_t t = 0; t < kk; t++) dw[t] = 0;
            for (int64_t n = 0; n < g->n; n++) {
                const T *x = c->a + (n * C + task) * isp, *gy = c->b + (n * C + task) * osp;
                DW_ROWS(g, for (int64_t j2 = 0; j2 < g->k[2]; j2++) {
                    int64_t off = j2 * g->dil[2] - g->pad[2], a, b;
                    FN(row_range)(off, s2, g->in[2], g->out[2], &a, &b);
                    dw[tap0 + j2] += FN(dw_dot)(gy + orow, x + irow, a, b, s2, off);
                })
            }
            continue;
        }
        int64_t ch = task % C;
        const T *w = c->b + ch * kk;
        T bv = c->bias ? c->bias[ch] : 0;
        if (c->kind == 0) {
            const T *x = c->a + task * isp;
            T *y = c->y + task * osp;
            for (int64_t i = 0; i < osp; i++) y[i] = bv;
            DW_ROWS(g, for (int64_t j2 = 0; j2 < g->k[2]; j2++) {
                int64_t off = j2 * g->dil[2] - g->pad[2], a, b;
                FN(row_range)(off, s2, g->in[2], g->out[2], &a, &b);
                FN(dw_axpy)(y + orow, x + irow, w[tap0 + j2], a, b, s2, off);
            })
        } else {
            const T *gy = c->a + task * osp;
            T *dx = c->y + task * isp;
            for (int64_t i = 0; i < isp; i++) dx[i] = bv;
            DW_ROWS(g, for (int64_t j2 = 0; j2 < g->k[2]; j2++) {
                int64_t off = j2 * g->dil[2] - g->pad[2], a, b;
                FN(row_range)(off, s2, g->in[2], g->out[2], &a, &b);
                FN(dw_scatter)(dx + irow, gy + orow, w[tap0 + j2], a, b, s2, off);
            })
        }
    }
}

static void FN(dw_run)(const gad_conv_geom *g, int kind, const T *a, const T *b,
                       const T *bias, T *y) {
    FN(dw_ctx) c = {g, a, b, bias, y, kind};
    int64_t ntask = kind == 2 ? g->cin : g->n * g->cin;
    gad__parallel_for(ntask, 1, FN(dw_range), &c);
}
#undef DW_ROWS

/* Which path a product takes: the shifted GEMMs for stride 1 when both
 * channel counts of a group are large enough to feed a GEMM (a few input
 * channels, as in an image's first layer, go through the patch matrix,
 * whose GEMMs are k^d times deeper); gad__conv_test_path forces one (tests:
 * 1 the patch matrix, 2 the shifted GEMMs where stride 1 allows). */
static int FN(use_shifted)(const FN(conv_ctx) *c) {
    if (c->direct || !FN(unit_stride)(c->g)) return 0;
    int forced = atomic_load_explicit(&gad__conv_test_path, memory_order_relaxed);
    if (forced) return forced == 2;
    return c->cin_g >= 8 && c->cout_g >= 8;
}

/* Whether fwd or bwd_data (M output rows a group) takes the 8 x 48 kernel
 * (f32 on AVX-512F): when the rows fill its tiles (a multiple of 8, or
 * enough that the zero rows added are few) and there are at least two
 * (image, group) tasks, since one task runs on one thread (a single image
 * keeps the GEMMs, which spread themselves). Fixed by the sizes and the
 * CPU, not the thread count. */
static int FN(use_k8)(FN(conv_ctx) *c, int64_t M) {
#if SFX_IS_F32 && defined(GEMM_X86)
    if (gad__gemm_isa() != 3 || c->ntask < 2 || !(M % CONV_K8_MR == 0 || M > 32)) return 0;
    c->k8 = 1;
    c->mr = (M + CONV_K8_MR - 1) / CONV_K8_MR * CONV_K8_MR;
    c->npr = (c->np + CONV_K8_NR - 1) / CONV_K8_NR * CONV_K8_NR;
    return 1;
#else
    (void)c, (void)M;
    return 0;
#endif
}

/* Whether bwd_weight's shifted path takes its kernel (f32 on AVX-512F, the
 * output channels of a group a multiple of 16, at least two chunks: one
 * chunk keeps the GEMMs, which spread themselves): fixed by the sizes and
 * the CPU. */
static int FN(use_k8w)(FN(conv_ctx) *c) {
#if SFX_IS_F32 && defined(GEMM_X86)
    if (gad__gemm_isa() != 3 || c->ntask < 2 || c->cout_g % 16 != 0) return 0;
    c->k8w = 1;
    return 1;
#else
    (void)c;
    return 0;
#endif
}

/* The weights rearranged per group and tap, from w[grp's output channel
 * o][input channel i][tap t], with (m, k) = (o, i) for fwd, (i, o) with the
 * taps reversed for bwd_data: blk[t][m][k] for the GEMMs; with k8
 * blk[m / 8][t][k][m % 8] (rows past M zero), followed by the taps'
 * shifts. Sets c->wt, c->wgs, c->shift; *bytes: the allocation. */
static T *FN(tap_weights)(const char *op, FN(conv_ctx) *c, const T *w, int trans,
                          size_t *bytes) {
    const gad_conv_geom *g = c->g;
    int64_t kk = c->kk, co_g = c->cout_g, ci_g = c->cin_g;
    int64_t M = trans ? ci_g : co_g, K = trans ? co_g : ci_g;
    int64_t wgs = kk * K * (c->k8 ? c->mr : M), n = (g->groups * wgs + 1) & ~(int64_t)1;
    *bytes = (size_t)n * sizeof(T) + (c->k8 ? (size_t)kk * sizeof(int64_t) : 0);
    T *out = gad__alloc(*bytes ? *bytes : 1);
    if (!out) {
        gad__err(GAD_ERR_MEMORY, op, "cannot allocate %zu bytes of convolution scratch",
                 *bytes);
        return NULL;
    }
    if (c->k8) {
        memset(out, 0, (size_t)n * sizeof(T));
        int64_t *shift = (int64_t *)(out + n);
        for (int64_t t = 0; t < kk; t++) shift[t] = FN(tap_shift)(c, t);
        c->shift = shift;
    }
    for (int64_t grp = 0; grp < g->groups; grp++)
        for (int64_t o = 0; o < co_g; o++)
            for (int64_t i = 0; i < ci_g; i++)
                for (int64_t t = 0; t < kk; t++) {
                    T v = w[((grp * co_g + o) * ci_g + i) * kk + t];
                    T *blk = out + grp * wgs;
                    int64_t m = trans ? i : o, k = trans ? o : i, tt = trans ? kk - 1 - t : t;
                    if (c->k8)
                        blk[((m / 8 * kk + tt) * K + k) * 8 + m % 8] = v;
                    else
                        blk[(tt * M + m) * K + k] = v;
                }
    c->wt = out;
    c->wgs = wgs;
    return out;
}

int FN(gad__conv_fwd)(const char *op, const T *x, const T *w, const T *bias, T *y,
                      const gad_conv_geom *g) {
    FN(conv_ctx) c;
    FN(conv_init)(&c, g);
    if (c.osp == 0 || g->n == 0 || g->cout == 0) return 0;
    if (c.ck == 0) {
        for (int64_t i = 0; i < g->n * g->cout * c.osp; i++)
            y[i] = bias ? bias[(i / c.osp) % g->cout] : 0;
        return 0;
    }
    c.a = x, c.b = w, c.y = y, c.bias = bias;
    if (FN(depthwise)(g)) {
        FN(dw_run)(g, 0, x, w, bias, y);
        return 0;
    }
    if (FN(use_shifted)(&c)) {
        FN(shift_init)(&c, g->in, g->out, g->pad);
        c.ntask = g->n * g->groups;
        FN(use_k8)(&c, c.cout_g);
        size_t wbytes;
        T *wt = FN(tap_weights)(op, &c, w, 0, &wbytes);
        if (!wt) return -1;
        int rc = FN(conv_run)(op, &c, FN(shifted_bytes)(&c, c.cin_g, c.cout_g, 0));
        gad__free(wt, wbytes);
        return rc;
    }
    c.ntask = g->n * g->groups * c.ntile;
    return FN(conv_run)(op, &c, FN(gemm_bytes)(&c, c.cout_g, c.ck, c.ck, 0));
}

int FN(gad__conv_bwd_data)(const char *op, const T *gy, const T *w, const T *bias, T *dx,
                           const gad_conv_geom *g) {
    FN(conv_ctx) c;
    FN(conv_init)(&c, g);
    int64_t total = g->n * g->cin * c.isp;
    if (total == 0) return 0;
    if (c.osp == 0 || c.cout_g == 0 || c.ck == 0) {
        for (int64_t i = 0; i < total; i++) dx[i] = bias ? bias[(i / c.isp) % g->cin] : 0;
        return 0;
    }
    c.a = gy, c.b = w, c.y = dx, c.ta = 1, c.bias = bias;
    c.ntask = g->n * g->groups;
    if (FN(depthwise)(g)) {
        FN(dw_run)(g, 1, gy, w, bias, dx);
        return 0;
    }
    if (FN(use_shifted)(&c)) {
        int64_t lo[3];
        for (int d = 0; d < 3; d++) lo[d] = g->dil[d] * (g->k[d] - 1) - g->pad[d];
        FN(shift_init)(&c, g->out, g->in, lo);
        FN(use_k8)(&c, c.cin_g);
        size_t wbytes;
        T *wt = FN(tap_weights)(op, &c, w, 1, &wbytes);
        if (!wt) return -1;
        int rc = FN(conv_run)(op, &c, FN(shifted_bytes)(&c, c.cout_g, c.cin_g, 0));
        gad__free(wt, wbytes);
        return rc;
    }
    return FN(conv_run)(op, &c, FN(gemm_bytes)(&c, c.ck, c.cout_g, c.ck, 1));
}

typedef struct {
    T *dw;
    const T *part;
    int64_t nchunk, size;
    int64_t kk, ck; /* shifted: part is [cout][tap][cin_g], dw [cout][cin_g][tap] */
    int64_t cout_g; /* shifted with k8w: part is [group][tap][cin_g][cout_g] */
} FN(sum_ctx);

static void FN(sum_parts)(void *vc, int64_t lo, int64_t hi) {
    FN(sum_ctx) *s = vc;
    for (int64_t i = lo; i < hi; i++) {
        int64_t j = i;
        if (s->kk) { /* dw's element i = (o, ci, t) is part's (o, t, ci) */
            int64_t o = i / s->ck, r = i % s->ck, ci = r / s->kk, t = r % s->kk;
            j = o * s->ck + t * (s->ck / s->kk) + ci;
            if (s->cout_g) { /* or (grp, t, ci, m), o = grp * cout_g + m */
                int64_t grp = o / s->cout_g, m = o % s->cout_g;
                j = ((grp * s->kk + t) * (s->ck / s->kk) + ci) * s->cout_g + m;
            }
        }
        T acc = s->part[j];
        for (int64_t k = 1; k < s->nchunk; k++) acc += s->part[k * s->size + j];
        s->dw[i] = acc;
    }
}

int FN(gad__conv_bwd_weight)(const char *op, const T *x, const T *gy, T *dw,
                             const gad_conv_geom *g) {
    FN(conv_ctx) c;
    FN(conv_init)(&c, g);
    int64_t wsize = g->cout * c.ck;
    if (wsize == 0) return 0;
    if (g->n == 0 || c.osp == 0) {
        for (int64_t i = 0; i < wsize; i++) dw[i] = 0;
        return 0;
    }
    if (FN(depthwise)(g)) {
        FN(dw_run)(g, 2, x, gy, NULL, dw);
        return 0;
    }
    /* at most 16 chunks of the batch, fewer when the partials would pass
     * 4M elements */
    int64_t nchunk = g->n < 16 ? g->n : 16;
    while (nchunk > 1 && nchunk * wsize > ((int64_t)1 << 22)) nchunk /= 2;
    int64_t per = (g->n + nchunk - 1) / nchunk;
    nchunk = (g->n + per - 1) / per;
    c.a = x, c.b = gy, c.nchunk = nchunk, c.ntask = nchunk;
    int shifted = FN(use_shifted)(&c);
    size_t sbytes = 0;
    int64_t *shift = NULL;
    if (shifted) {
        FN(shift_init)(&c, g->in, g->out, g->pad);
        if (FN(use_k8w)(&c)) {
            sbytes = (size_t)c.kk * sizeof(int64_t);
            shift = gad__alloc(sbytes);
            if (!shift) {
                gad__err(GAD_ERR_MEMORY, op, "cannot allocate %zu bytes of convolution scratch",
                         sbytes);
                return -1;
            }
            for (int64_t t = 0; t < c.kk; t++) shift[t] = FN(tap_shift)(&c, t);
            c.shift = shift;
        }
    }
    /* the shifted path's partials are in tap-major order: never dw itself */
    int own = nchunk > 1 || shifted;
    size_t pbytes = (size_t)(nchunk * wsize) * sizeof(T);
    c.part = own ? gad__alloc(pbytes) : dw;
    if (!c.part) {
        gad__err(GAD_ERR_MEMORY, op, "cannot allocate %zu bytes of convolution scratch",
                 pbytes);
        if (shift) gad__free(shift, sbytes);
        return -1;
    }
    int rc = FN(conv_run)(op, &c, shifted ? FN(shifted_bytes)(&c, c.cin_g, c.cout_g, 1)
                                          : FN(gemm_bytes)(&c, c.cout_g, c.ck, 0, 2));
    if (rc == 0 && own) {
        FN(sum_ctx) s = {dw, c.part, nchunk, wsize, shifted ? c.kk : 0, c.ck,
                         c.k8w ? c.cout_g : 0};
        gad__parallel_for(wsize, 4096, FN(sum_parts), &s);
    }
    if (own) gad__free(c.part, pbytes);
    if (shift) gad__free(shift, sbytes);
    return rc;
}

#undef GEMM
#undef FN
#undef CAT
#undef CAT_
