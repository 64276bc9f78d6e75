/* matmul.c: the CPU's batched matrix product behind gad_matmul: NumPy's
 * batch broadcasting over GEMMs (src/cpu/gemm.c), transposed views read in
 * place, operands GEMM cannot read packed, a batch of row-major matrices
 * against one shared matrix folded into a single GEMM, and small products
 * spread over threads a batch entry each. f16 and bf16 go to gemm_half.c
 * (f32 sums, the result rounded once). */
#include "backend/layout.h"
#include "cpu.h"
#include "cpu/gemm.h"

/* One operand seen as a batch of matrices: rows x cols per batch entry. */
typedef struct mat_view {
    const char *base;
    int trans;    /* element (i, j) at base[j * ld + i] instead of i * ld + j */
    int64_t ld;
    int64_t bstride[GAD_MAX_RANK]; /* per broadcast batch dim, in elements */
} mat_view;

typedef struct mm_ctx {
    int dtype;
    int64_t M, N, K;
    mat_view a, b;
    char *y;
    int nb; /* batch rank */
    int64_t bshape[GAD_MAX_RANK];
    atomic_int failed;
} mm_ctx;

static int one_gemm(mm_ctx *c, const char *a, const char *b, char *y) {
    if (gad__is_half(c->dtype)) /* f32 sums, rounded once (gemm_half.c) */
        return gad__hgemm(c->dtype, c->a.trans, c->b.trans, c->M, c->N, c->K,
                          (const uint16_t *)a, c->a.ld, (const uint16_t *)b, c->b.ld,
                          c->dtype, y, c->N);
    if (c->dtype == GAD_F32)
        return gad__sgemm(c->a.trans, c->b.trans, c->M, c->N, c->K, 1.0f,
                          (const float *)a, c->a.ld, (const float *)b, c->b.ld,
                          0.0f, (float *)y, c->N);
    return gad__dgemm(c->a.trans, c->b.trans, c->M, c->N, c->K, 1.0,
                      (const double *)a, c->a.ld, (const double *)b, c->b.ld,
                      0.0, (double *)y, c->N);
}

static void mm_batches(void *vc, int64_t lo, int64_t hi) {
    mm_ctx *c = vc;
    int64_t es = (int64_t)gad__dsize(c->dtype);
    for (int64_t k = lo; k < hi; k++) {
        int64_t rem = k, oa = 0, ob = 0;
        for (int d = c->nb - 1; d >= 0; d--) {
            int64_t i = rem % c->bshape[d];
            rem /= c->bshape[d];
            oa += i * c->a.bstride[d];
            ob += i * c->b.bstride[d];
        }
        /* batch strides may be negative (a reversed batch axis) */
        if (one_gemm(c, c->a.base + oa * es, c->b.base + ob * es, c->y + k * c->M * c->N * es))
            atomic_store(&c->failed, 1);
    }
}

/* Small matrices: the batch entries spread over gad's threads, each
 * thread's products packing into its part of one buffer the caller
 * allocates (gad__gemm_lend_scratch): no worker allocates. */
typedef struct mm_team {
    mm_ctx *c;
    char *buf;
    size_t per;
    int64_t nbatch;
    atomic_llong next;
} mm_team;

static void mm_part(void *arg, int t, int nt) {
    mm_team *team = arg;
    (void)nt;
    if (team->per) gad__gemm_lend_scratch(team->buf + (size_t)t * team->per, team->per);
    for (;;) {
        int64_t k = atomic_fetch_add_explicit(&team->next, 1, memory_order_relaxed);
        if (k >= team->nbatch) break;
        mm_batches(team->c, k, k + 1);
    }
    if (team->per) gad__gemm_lend_scratch(NULL, 0);
}

static void mm_spread(mm_ctx *c, int64_t nbatch) {
    int nt = gad__nthreads();
    if (nt > nbatch) nt = (int)nbatch;
    if (nt <= 1 || gad__pool_nested()) {
        mm_batches(c, 0, nbatch);
        return;
    }
    size_t per = gad__is_half(c->dtype)
                     ? gad__hgemm_scratch_bytes(c->dtype, c->dtype, c->a.trans, c->b.trans, c->M,
                                                c->N, c->K)
                     : gad__gemm_scratch_bytes(c->dtype == GAD_F64, c->a.trans, c->b.trans,
                                               c->M, c->N, c->K, c->a.ld, c->b.ld);
    per = (per + GAD_ALIGN - 1) & ~(size_t)(GAD_ALIGN - 1);
    mm_team team = {c, NULL, per, nbatch, 0};
    if (per && !(team.buf = gad__alloc(per * (size_t)nt))) {
        mm_batches(c, 0, nbatch); /* one thread, its own buffer */
        return;
    }
    gad__pool_run(nt, mm_part, &team);
    gad__free(team.buf, per * (size_t)nt);
}

int gad__k_matmul(const char *op, const gad_tensor *a, const gad_tensor *b, gad_tensor *y,
                  int a1, int b1) {
    if (y->numel == 0) return 0;
    int64_t M = a1 ? 1 : a->shape[a->rank - 2], K = a->shape[a->rank - 1];
    int64_t N = b1 ? 1 : b->shape[b->rank - 1];
    mm_ctx c = {.dtype = a->dtype, .M = M, .N = N, .K = K, .nb = y->rank - 2};
    for (int d = 0; d < c.nb; d++) c.bshape[d] = y->shape[d];
    gad_tensor *ac = NULL, *bc = NULL;
    /* Operands whose matrices GEMM cannot read in place are packed. */
    for (int side = 0; side < 2; side++) {
        const gad_tensor *t = side ? b : a; gad_tensor **tc = side ? &bc : &ac;
        mat_view *v = side ? &c.b : &c.a;
        bool one = side ? b1 : a1;
        int64_t rows = side ? K : M, cols = side ? N : K;
        int64_t sr, sc;
        if (one) {
            /* a 1-D a is a row [1, K], a 1-D b a column [K, 1] */
            sr = side ? t->strides[0] : 0;
            sc = side ? 0 : t->strides[0];
        } else {
            sr = t->strides[t->rank - 2];
            sc = t->strides[t->rank - 1];
        }
        if (!gad__gemm_layout(rows, cols, sr, sc, &v->trans, &v->ld)) {
            if (!(*tc = gad__contig(op, t))) goto fail;
            t = *tc;
            sr = one ? (side ? 1 : 0) : t->strides[t->rank - 2];
            sc = one ? (side ? 0 : 1) : t->strides[t->rank - 1];
            gad__gemm_layout(rows, cols, sr, sc, &v->trans, &v->ld);
        }
        v->base = gad__ptr(t);
        int rt = one ? 0 : t->rank - 2;
        for (int d = 0; d < c.nb; d++) {
            int j = d - (c.nb - rt);
            v->bstride[d] = (j < 0 || t->shape[j] == 1) ? 0 : t->strides[j];
        }
    }
    c.y = gad__ptr(y);
    int64_t nbatch = y->numel / (M * N > 0 ? M * N : 1);
    atomic_init(&c.failed, 0);
    /* A batch of row-major a matrices against one b is a single GEMM with
     * batch * M rows. */
    bool b_shared = true, a_rows = !c.a.trans && c.nb > 0;
    int64_t expect = M * c.a.ld;
    for (int d = c.nb - 1; d >= 0; d--) {
        if (c.b.bstride[d] != 0) b_shared = false;
        if (c.bshape[d] != 1 && c.a.bstride[d] != expect) a_rows = false;
        expect *= c.bshape[d];
    }
    if (nbatch > 1 && b_shared && a_rows) {
        int64_t m = c.M;
        c.M = m * nbatch;
        if (one_gemm(&c, c.a.base, c.b.base, c.y)) atomic_store(&c.failed, 1);
        c.M = m;
    } else if (nbatch > 1 && (double)M * (double)N * (double)K < 2097152.0) {
        mm_spread(&c, nbatch);
    } else {
        mm_batches(&c, 0, nbatch);
    }
    if (atomic_load(&c.failed)) {
        gad__err(GAD_ERR_MEMORY, op, "cannot allocate GEMM scratch");
        goto fail;
    }
    gad_release(ac);
    gad_release(bc);
    return 0;
fail:
    gad_release(ac);
    gad_release(bc);
    return -1;
}
