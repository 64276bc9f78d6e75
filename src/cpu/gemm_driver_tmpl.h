/* gemm_driver_tmpl.h: the typed half of the CPU GEMM's driver, written once
 * for an element type and included by gemm.c once for float and once for
 * double, with GT the element type, GT_DESC its kernel descriptor
 * (gemm_int.h) and GT_FN(name) the prefix of its functions: the packing of
 * op(A) and op(B), the macro-kernel (loops 2 and 1), the packed path (loops 5
 * to 3) and the small-problem and dot paths, with their split over threads,
 * and GT_FN(run), the typed entry point. It relies on gemm.c's static
 * helpers (scratch, thread counts, FTZ) and is included nowhere else. */

/* Pack rows [0, mc) and columns [0, kc) of op(A), starting at A (which points
 * at element (0, 0) of the block), into micro-panels of mr rows: panel r holds
 * dst[k*mr + i] = op(A)(r*mr + i, k), rows past mc are zero. */
static void GT_FN(pack_a)(const GT_DESC *kd, int64_t mc, int64_t kc, const GT *A,
                          int64_t lda, int ta, GT *dst) {
    const int mr = kd->mr;
    for (int64_t ir = 0; ir < mc; ir += mr, dst += kc * mr) {
        int m = (int)gemm_min(mr, mc - ir);
        if (!ta && kd->tpack) {
            kd->tpack(kc, A + ir * lda, lda, m, mr, dst, mr);
        } else if (!ta && m == mr && (mr == 12 || mr == 6)) {
            /* op(A)(i, k) = A[i*lda + k]: gather one value from each row,
             * unrolled (a transpose; the loads are contiguous per row). */
            const GT *s = A + ir * lda;
            GT *d = dst;
#define GEMM_PA(i) d[i] = s[(i)*lda];
            if (mr == 12) {
                for (int64_t k = 0; k < kc; k++, s++, d += 12) {
                    GEMM_ROWS12(GEMM_PA)
                }
            } else {
                for (int64_t k = 0; k < kc; k++, s++, d += 6) {
                    GEMM_ROWS6(GEMM_PA)
                }
            }
#undef GEMM_PA
        } else if (!ta) {
            /* op(A)(i, k) = A[i*lda + k]: rows are contiguous in k. */
            const GT *rows[GEMM_MAX_MR];
            for (int i = 0; i < m; i++) rows[i] = A + (ir + i) * lda;
            for (int64_t k = 0; k < kc; k++) {
                GT *d = dst + k * mr;
                int i = 0;
                for (; i < m; i++) d[i] = rows[i][k];
                for (; i < mr; i++) d[i] = 0;
            }
        } else {
            /* op(A)(i, k) = A[k*lda + i]: a micro-panel row is contiguous. */
            for (int64_t k = 0; k < kc; k++) {
                const GT *src = A + k * lda + ir;
                GT *d = dst + k * mr;
                int i = 0;
                for (; i < m; i++) d[i] = src[i];
                for (; i < mr; i++) d[i] = 0;
            }
        }
    }
}

/* Pack rows [0, kc) and columns [0, nc) of op(B), starting at B, into
 * micro-panels of nr columns: panel r holds dst[k*nr + j] =
 * op(B)(k, r*nr + j), columns past nc are zero. */
static void GT_FN(pack_b)(const GT_DESC *kd, int64_t kc, int64_t nc, const GT *B,
                          int64_t ldb, int tb, GT *dst) {
    const int nr = kd->nr;
    for (int64_t jr = 0; jr < nc; jr += nr, dst += kc * nr) {
        int n = (int)gemm_min(nr, nc - jr);
        if (tb && kd->tpack) {
            kd->tpack(kc, B + jr * ldb, ldb, n, nr, dst, nr);
        } else if (!tb) {
            /* op(B)(k, j) = B[k*ldb + j]: a micro-panel row is contiguous. */
            const GT *src = B + jr;
            if (n == nr) {
                for (int64_t k = 0; k < kc; k++)
                    memcpy(dst + k * nr, src + k * ldb,
                           (size_t)nr * sizeof(GT));
            } else {
                for (int64_t k = 0; k < kc; k++) {
                    GT *d = dst + k * nr;
                    int j = 0;
                    for (; j < n; j++) d[j] = src[k * ldb + j];
                    for (; j < nr; j++) d[j] = 0;
                }
            }
        } else {
            /* op(B)(k, j) = B[j*ldb + k]: columns are contiguous in k. */
            const GT *cols[GEMM_MAX_NR];
            for (int j = 0; j < n; j++) cols[j] = B + (jr + j) * ldb;
            for (int64_t k = 0; k < kc; k++) {
                GT *d = dst + k * nr;
                int j = 0;
                for (; j < n; j++) d[j] = cols[j][k];
                for (; j < nr; j++) d[j] = 0;
            }
        }
    }
}

/* C = beta * C for an M x N block (beta == 0 writes zeros). */
static void GT_FN(scale)(int64_t M, int64_t N, GT beta, GT *C, int64_t ldc) {
    if (beta == 1) return;
    for (int64_t i = 0; i < M; i++) {
        GT *c = C + i * ldc;
        if (beta == 0)
            memset(c, 0, (size_t)N * sizeof(GT));
        else
            for (int64_t j = 0; j < N; j++) c[j] = beta * c[j];
    }
}

/* Loops 2 and 1: the packed mc x kc panel pa times the packed kc x nc block
 * pb into the mc x nc block of C at C. */
static void GT_FN(macro)(const GT_DESC *kd, int64_t mc, int64_t nc, int64_t kc,
                         const GT *pa, const GT *pb, GT *C, int64_t ldc,
                         GT alpha, GT beta) {
    const int mr = kd->mr, nr = kd->nr;
    _Alignas(64) GT tmp[GEMM_MAX_MR * GEMM_MAX_NR];
    for (int64_t ir = 0; ir < mc; ir += mr) {
        int m = (int)gemm_min(mr, mc - ir);
        const GT *a = pa + ir * kc;
        GT *crow = C + ir * ldc;
        for (int64_t jr = 0; jr < nc; jr += nr) {
            int n = (int)gemm_min(nr, nc - jr);
            const GT *b = pb + jr * kc;
            if (m == mr && n == nr) {
#ifdef GEMM_GNU
                /* C is touched only after the k loop: fetch it meanwhile. */
                for (int i = 0; i < mr; i++) {
                    __builtin_prefetch(crow + i * ldc + jr, 1, 3);
                    __builtin_prefetch(crow + i * ldc + jr + nr - 1, 1, 3);
                }
#endif
                kd->kern(kc, a, b, crow + jr, ldc, alpha, beta);
            } else {
                kd->kern(kc, a, b, tmp, nr, alpha, 0);
                for (int i = 0; i < m; i++) {
                    GT *c = crow + i * ldc + jr;
                    const GT *t = tmp + i * nr;
                    if (beta == 0) {
                        for (int j = 0; j < n; j++) c[j] = t[j];
                    } else {
                        for (int j = 0; j < n; j++) {
                            GT u = beta * c[j];
                            c[j] = t[j] + u;
                        }
                    }
                }
            }
        }
    }
}

typedef struct GT_FN(args) {
    int ta, tb;
    int64_t M, N, K, kc;
    GT alpha, beta;
    const GT *A;
    int64_t lda;
    const GT *B;
    int64_t ldb;
    GT *C;
    int64_t ldc;
} GT_FN(args);

/* Loop 3 for one block of rows [ic, ic + mc) and depth [pc, pc + kc) whose
 * A panel is packed at pa: columns [j0, j1) of C in B blocks of ncb columns
 * packed at pb. */
static void GT_FN(loop3)(const GT_DESC *kd, const GT_FN(args) *g, int64_t ic,
                         int64_t mc, int64_t pc, int64_t kc, int64_t j0,
                         int64_t j1, int64_t ncb, const GT *pa, GT *pb) {
    GT beta = pc == 0 ? g->beta : (GT)1;
    for (int64_t jc = j0; jc < j1; jc += ncb) {
        int64_t nc = gemm_min(ncb, j1 - jc);
        const GT *b = g->tb ? g->B + jc * g->ldb + pc : g->B + pc * g->ldb + jc;
        GT_FN(pack_b)(kd, kc, nc, b, g->ldb, g->tb, pb);
        GT_FN(macro)(kd, mc, nc, kc, pa, pb, g->C + ic * g->ldc + jc, g->ldc,
                     g->alpha, beta);
    }
}

/* Loops 5 and 4 over the region rows [i0, i1) x columns [j0, j1) of C, with
 * A panels of mcb rows packed at pa and B blocks of ncb columns at pb. */
static void GT_FN(region)(const GT_DESC *kd, const GT_FN(args) *g, int64_t i0,
                          int64_t i1, int64_t j0, int64_t j1, int64_t mcb,
                          int64_t ncb, GT *pa, GT *pb) {
    for (int64_t ic = i0; ic < i1; ic += mcb) {
        int64_t mc = gemm_min(mcb, i1 - ic);
        for (int64_t pc = 0; pc < g->K; pc += g->kc) {
            int64_t kc = gemm_min(g->kc, g->K - pc);
            const GT *a =
                g->ta ? g->A + pc * g->lda + ic : g->A + ic * g->lda + pc;
            GT_FN(pack_a)(kd, mc, kc, a, g->lda, g->ta, pa);
            GT_FN(loop3)(kd, g, ic, mc, pc, kc, j0, j1, ncb, pa, pb);
        }
    }
}

/* Pack the columns of op(B) that part t of nt covers into their panels of
 * bsrc (each part writes its own panels). */
static void GT_FN(sup_pack)(const GT_DESC *kd, const GT_FN(args) *g, GT *bsrc,
                            int64_t pstride, int t, int nt) {
    int64_t j0, j1;
    gad__gemm_part_cols(g->N, kd->nr, t, nt, &j0, &j1);
    if (j1 > j0)
        GT_FN(pack_b)(kd, g->K, j1 - j0, g->tb ? g->B + j0 * g->ldb : g->B + j0,
                      g->ldb, g->tb, bsrc + j0 / kd->nr * pstride);
}

/* The small-problem path, part t of nt (rows or columns of C). */
static void GT_FN(sup_part)(const GT_DESC *kd, const GT_FN(args) *g,
                            const GT *bsrc, int64_t rsb, int64_t pstride,
                            int split_rows, int t, int nt) {
    const int mr = kd->mr, nr = kd->nr, lanes = nr / 2;
    const unsigned full = lanes == 16 ? 0xFFFFu : 0xFFu;
    const int64_t M = g->M, N = g->N, K = g->K;
    int64_t i0 = 0, i1 = M, j0 = 0, j1 = N;
    if (split_rows) {
        i0 = M * t / nt;
        i1 = M * (t + 1) / nt;
    } else {
        gad__gemm_part_cols(N, nr, t, nt, &j0, &j1);
    }
    const int64_t rsa = g->ta ? 1 : g->lda, csa = g->ta ? g->lda : 1;
    for (int64_t i = i0; i < i1; i += mr) {
        int m = (int)gemm_min(mr, i1 - i);
        const GT *a = g->ta ? g->A + i : g->A + i * g->lda;
        for (int64_t j = j0; j < j1; j += nr) {
            int n = (int)gemm_min(nr, j1 - j);
            const GT *b = pstride ? bsrc + j / nr * pstride : bsrc + j;
            unsigned m0 = n >= lanes ? full : (1u << n) - 1;
            unsigned m1 =
                n > lanes ? (n >= nr ? full : (1u << (n - lanes)) - 1) : 0;
            int v = n > lanes ? (n == nr ? 2 : 1) : 0;
            kd->sup[v][m - 1](K, a, rsa, csa, b, rsb,
                                      g->C + i * g->ldc + j, g->ldc, g->alpha,
                                      g->beta, m0, m1);
        }
    }
}

/* Parts [lo, hi) of a small-problem product split in `parts` (one per
 * thread; gad__parallel_for hands each part out once). pack: each part
 * packs its columns of op(B) into panels first (a split by columns, whose
 * parts read only their own panels). */
typedef struct {
    const GT_DESC *kd;
    const GT_FN(args) *g;
    GT *bsrc;
    int64_t rsb, pstride;
    int split_rows, parts, pack;
} GT_FN(sup_job);

static void GT_FN(sup_task)(void *arg, int64_t lo, int64_t hi) {
    const GT_FN(sup_job) *j = arg;
    unsigned csr = gemm_ftz_begin();
    for (int64_t r = lo; r < hi; r++) {
        if (j->pack) GT_FN(sup_pack)(j->kd, j->g, j->bsrc, j->pstride, (int)r, j->parts);
        GT_FN(sup_part)(j->kd, j->g, j->bsrc, j->rsb, j->pstride, j->split_rows, (int)r,
                        j->parts);
    }
    gemm_ftz_end(csr);
}

/* The small-problem path: op(A) is read in place; op(B) too, unless it is
 * transposed or read by many rows (gemm_sup_panels: then all of op(B) is
 * packed once into NR-column panels, by the threads that run the product).
 * Each element of C is one accumulation chain over K, so any split between
 * threads, and either form of op(B), gives the same bits. */
static int GT_FN(sup_run)(const GT_DESC *kd, const GT_FN(args) *g) {
    const int mr = kd->mr, nr = kd->nr;
    const int64_t M = g->M, N = g->N, K = g->K;
    GT *bsrc = (GT *)g->B; /* written only when it is the packing buffer */
    int64_t rsb = g->ldb, pstride = 0;
    int panels = gemm_sup_panels(g->tb, M, N, K, sizeof(GT));
    if (panels) {
        int64_t ntl = gemm_cdiv(N, nr);
        bsrc = gemm_scratch_get((size_t)(ntl * nr * K) * sizeof(GT));
        if (!bsrc) return -1;
        rsb = nr;
        pstride = K * nr;
    }
    int nt = gemm_threads(M, N, K);
    /* Split rows, or columns in units of nr, whichever balances better. */
    int64_t ntl = gemm_cdiv(N, nr);
    int split_rows = 1;
    if (nt > 1) {
        double rows = (double)gemm_cdiv(gemm_cdiv(M, nt), mr) * (double)ntl;
        double cols = (double)gemm_cdiv(M, mr) * (double)gemm_cdiv(ntl, nt);
        split_rows = rows <= cols;
        if (!split_rows && ntl < nt) nt = (int)ntl;
        if (split_rows && M < nt) nt = (int)M;
    }
    if (nt <= 1) {
        if (panels) GT_FN(sup_pack)(kd, g, bsrc, pstride, 0, 1);
        GT_FN(sup_part)(kd, g, bsrc, rsb, pstride, 1, 0, 1);
        return 0;
    }
    /* Split by columns, each part packs its own panels of op(B): on the
     * caller alone, the packing held 128 x 512 x 512 with
     * op(B) transposed (W4's x @ W^T) to 1.53x its one-thread speed on two
     * threads (the Intel Xeon of bench/RESULTS.md). Split by rows, every part
     * reads every panel: the caller packs them all first, which costs less
     * than a region of its own would, as the rows are many. */
    if (panels && split_rows) GT_FN(sup_pack)(kd, g, bsrc, pstride, 0, 1);
    GT_FN(sup_job) job = {kd, g, bsrc, rsb, pstride, split_rows, nt, panels && !split_rows};
    gad__parallel_for(nt, 1, GT_FN(sup_task), &job);
    return 0;
}

/* The dot path: C(i, j) = alpha * <x_i, y_j> (+ beta * C(i, j)) with row i
 * of op(A) at x_i = xa + i*xs and column j of op(B) at y_j = yb + j*ys, both
 * contiguous in K. The pairs (i, j) are taken four at a time in the order
 * that streams the bigger operand once: row-major when M >= N (each row of
 * op(A) meets the few columns of op(B) while in cache), else column-major.
 * This part does pairs [p0, p1). */
static void GT_FN(dot_part)(const GT_DESC *kd, const GT_FN(args) *g,
                            const GT *xa, int64_t xs, const GT *yb, int64_t ys,
                            int64_t p0, int64_t p1) {
    const int64_t M = g->M, N = g->N;
    const int rows_outer = M >= N;
    for (int64_t p = p0; p < p1; p += 4) {
        const GT *x[4], *y[4];
        GT *c[4], out[4];
        int cnt = (int)gemm_min(4, p1 - p);
        for (int q = 0; q < 4; q++) {
            int64_t pq = p + (q < cnt ? q : cnt - 1);
            int64_t i = rows_outer ? pq / N : pq % M;
            int64_t j = rows_outer ? pq % N : pq / M;
            x[q] = xa + i * xs;
            y[q] = yb + j * ys;
            c[q] = g->C + i * g->ldc + j;
        }
        kd->dot(g->K, x, y, out);
        for (int q = 0; q < cnt; q++) {
            GT t = g->alpha * out[q];
            if (g->beta != 0) {
                GT u = g->beta * *c[q];
                t = t + u;
            }
            *c[q] = t;
        }
    }
}

/* Parts [lo, hi) of a dot-path product split in `parts`. */
typedef struct {
    const GT_DESC *kd;
    const GT_FN(args) *g;
    const GT *xa, *yb;
    int64_t xs, ys, P;
    int parts;
} GT_FN(dot_job);

static void GT_FN(dot_task)(void *arg, int64_t lo, int64_t hi) {
    const GT_FN(dot_job) *j = arg;
    unsigned csr = gemm_ftz_begin();
    for (int64_t r = lo; r < hi; r++)
        GT_FN(dot_part)(j->kd, j->g, j->xa, j->xs, j->yb, j->ys,
                        j->P * r / j->parts, j->P * (r + 1) / j->parts);
    gemm_ftz_end(csr);
}

static void GT_FN(dot_run)(const GT_DESC *kd, const GT_FN(args) *g) {
    const GT *xa = g->A, *yb = g->B;
    int64_t xs = g->ta ? 0 : g->lda, ys = g->tb ? g->ldb : 0;
    int64_t P = g->M * g->N;
    int nt = gemm_threads(g->M, g->N, g->K);
    if (nt > P / 4) nt = (int)(P / 4);
    if (nt <= 1) {
        GT_FN(dot_part)(kd, g, xa, xs, yb, ys, 0, P);
        return;
    }
    GT_FN(dot_job) job = {kd, g, xa, yb, xs, ys, P, nt};
    gad__parallel_for(nt, 1, GT_FN(dot_task), &job);
}

/* The packed path on threads: regions [lo, hi) of the tm x tn grid of C,
 * each with its own slice of the scratch buffer. */
typedef struct {
    const GT_DESC *kd;
    const GT_FN(args) *g;
    char *buf;
    size_t per, asz;
    int64_t rows, cols, mt, ntl;
    int tm, tn;
} GT_FN(packed_job);

static void GT_FN(packed_task)(void *arg, int64_t lo, int64_t hi) {
    const GT_FN(packed_job) *j = arg;
    const int mr = j->kd->mr, nr = j->kd->nr;
    const int64_t M = j->g->M, N = j->g->N;
    unsigned csr = gemm_ftz_begin();
    for (int64_t r = lo; r < hi; r++) {
        int64_t rm = r / j->tn, rn = r % j->tn;
        int64_t i0 = gemm_min(M, j->mt * rm / j->tm * mr);
        int64_t i1 = gemm_min(M, j->mt * (rm + 1) / j->tm * mr);
        int64_t j0 = gemm_min(N, j->ntl * rn / j->tn * nr);
        int64_t j1 = gemm_min(N, j->ntl * (rn + 1) / j->tn * nr);
        char *mine = j->buf + j->per * (size_t)r;
        if (i0 < i1 && j0 < j1)
            GT_FN(region)(j->kd, j->g, i0, i1, j0, j1, j->rows, j->cols,
                          (GT *)mine, (GT *)(mine + j->asz));
    }
    gemm_ftz_end(csr);
}

static int GT_FN(run_ftz)(const GT_DESC *kd, int ta, int tb, int64_t M,
                          int64_t N, int64_t K, GT alpha, const GT *A,
                          int64_t lda, const GT *B, int64_t ldb, GT beta,
                          GT *C, int64_t ldc) {
    if (M <= 0 || N <= 0) return 0;
    if (K <= 0 || alpha == 0) {
        GT_FN(scale)(M, N, beta, C, ldc);
        return 0;
    }
    GT_FN(args) g = {ta, tb, M, N, K, gemm_kc(K, kd->kc), alpha, beta,
                     A, lda, B, ldb, C, ldc};
    int small = !atomic_load_explicit(&gemm_small_off, memory_order_relaxed);
    /* Rows of op(A) and columns of op(B) contiguous in K, one side tiny. */
    if (small && kd->dot && (M <= 4 || N <= 4) &&
        (!ta || (M == 1 && lda == 1)) && (tb || (N == 1 && ldb == 1))) {
        GT_FN(dot_run)(kd, &g);
        return 0;
    }
    if (small && kd->sup && gemm_use_sup(ta, M, N, K, ldb, tb, sizeof(GT)))
        return GT_FN(sup_run)(kd, &g);
    const int mr = kd->mr, nr = kd->nr;
    int64_t mt = gemm_cdiv(M, mr), ntl = gemm_cdiv(N, nr);
    int nt = gemm_threads(M, N, K);
    int tm = 1, tn = 1;
    if (nt > 1) gemm_plan(nt, M, N, K, mr, nr, &tm, &tn);
    if (tm > mt) tm = (int)mt;
    if (tn > ntl) tn = (int)ntl;
    nt = tm * tn;
    /* Scratch: an A panel and a B block per thread. */
    int64_t rows = gemm_min(kd->mcb, gemm_cdiv(mt, tm) * mr);
    int64_t cols = gemm_min(kd->ncb, gemm_cdiv(ntl, tn) * nr);
    size_t asz = gemm_round64((size_t)(rows * g.kc) * sizeof(GT));
    size_t bsz = gemm_round64((size_t)(cols * g.kc) * sizeof(GT));
    size_t per = asz + bsz;
    char *buf = gemm_scratch_get(per * (size_t)nt);
    if (!buf) return -1;
    if (nt == 1) {
        GT_FN(region)(kd, &g, 0, M, 0, N, rows, cols, (GT *)buf,
                      (GT *)(buf + asz));
        return 0;
    }
    GT_FN(packed_job) job = {kd, &g, buf, per, asz, rows, cols, mt, ntl, tm, tn};
    gad__parallel_for(nt, 1, GT_FN(packed_task), &job);
    return 0;
}

/* The bytes of packing buffer a call with these arguments takes on one
 * thread (a worker of gad's pool, where gemm_threads gives 1): the choice
 * of path above, without running it; and at least what any call with M' <=
 * M, N' <= N and K' <= K takes (callers size one buffer for a loop of
 * products whose last block is smaller): the block depth's bound, and the
 * small-problem path's copy of op(B) where a smaller K' would take it. */
static size_t GT_FN(scratch_one)(const GT_DESC *kd, int ta, int tb, int64_t M, int64_t N,
                                 int64_t K, int64_t lda, int64_t ldb) {
    if (M <= 0 || N <= 0 || K <= 0) return 0;
    int small = !atomic_load_explicit(&gemm_small_off, memory_order_relaxed);
    if (small && kd->dot && (M <= 4 || N <= 4) &&
        (!ta || (M == 1 && lda == 1)) && (tb || (N == 1 && ldb == 1)))
        return 0;
    const int mr = kd->mr, nr = kd->nr;
    int64_t mt = gemm_cdiv(M, mr), ntl = gemm_cdiv(N, nr);
    /* the small-problem path packs all of op(B) into panels where
     * gemm_sup_panels says (a transposed one, or one read by many rows), for
     * every K' up to gemm_sup_tb_kmax; elsewhere it packs nothing */
    size_t sup = 0;
    int64_t kmax = gemm_sup_tb_kmax(N, sizeof(GT));
    if (small && kd->sup && gemm_sup_panels(tb, M, N, gemm_min(K, kmax), sizeof(GT)))
        sup = (size_t)(ntl * nr * gemm_min(K, kmax)) * sizeof(GT);
    if (small && kd->sup && gemm_use_sup(ta, M, N, K, ldb, tb, sizeof(GT))) return sup;
    int64_t kc = gemm_kc_bound(K, kd->kc);
    int64_t rows = gemm_min(kd->mcb, mt * mr), cols = gemm_min(kd->ncb, ntl * nr);
    size_t packed = gemm_round64((size_t)(rows * kc) * sizeof(GT)) +
                    gemm_round64((size_t)(cols * kc) * sizeof(GT));
    return packed > sup ? packed : sup;
}

/* The calling thread runs with FTZ and DAZ too (the parallel parts set
 * them on each thread of the team). */
static int GT_FN(run)(const GT_DESC *kd, int ta, int tb, int64_t M, int64_t N,
                      int64_t K, GT alpha, const GT *A, int64_t lda,
                      const GT *B, int64_t ldb, GT beta, GT *C, int64_t ldc) {
    unsigned csr = gemm_ftz_begin();
    int rc = GT_FN(run_ftz)(kd, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta,
                            C, ldc);
    gemm_ftz_end(csr);
    return rc;
}

