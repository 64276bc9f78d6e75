/* linalg.c: matmul with NumPy's batch broadcasting and 1-D rules (SPEC
 * §3.2, D2). GEMMs go to src/cpu/gemm.c with transposes passed as flags. */
#include "ops_int.h"
#include "cpu/gemm.h"

#include <stdio.h>

/* One operand seen as a batch of matrices: rows x cols per batch entry. */
typedef struct mat_view {
    const char *base;
    int trans;    /* element (i, j) at base[j * ld + i] instead of i * ld + j */
    int64_t ld;
    int64_t bstride[GAD_MAX_RANK]; /* per broadcast batch dim, in elements */
} mat_view;

/* Whether the last two axes (strides sr, sc for a rows x cols matrix) can go
 * to GEMM directly, and how. */
static bool gemm_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc,
                        int *trans, int64_t *ld) {
    int64_t mc = cols > 1 ? cols : 1, mr = rows > 1 ? rows : 1;
    if ((sc == 1 || cols <= 1) && (rows <= 1 || sr >= mc)) {
        *trans = 0;
        *ld = rows <= 1 ? mc : sr;
        return true;
    }
    if ((sr == 1 || rows <= 1) && (cols <= 1 || sc >= mr)) {
        *trans = 1;
        *ld = cols <= 1 ? mr : sc;
        return true;
    }
    return false;
}

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

gad_tensor *gad_matmul(gad_tensor *a, gad_tensor *b) {
    const char *op = "matmul";
    if (!a || !b) return gad__null_arg(op);
    char s1[GAD_SHAPE_BUF], s2[GAD_SHAPE_BUF];
    if (a->rank == 0 || b->rank == 0)
        return gad__err(GAD_ERR_SHAPE, op, "rank-0 is not allowed: %s @ %s",
                        gad__shape_str(s1, a->shape, a->rank),
                        gad__shape_str(s2, b->shape, b->rank));
    if (gad__need_same_dtype(op, a, b) || gad__need_float(op, a)) return NULL;
    bool a1 = a->rank == 1, b1 = b->rank == 1;
    int64_t M = a1 ? 1 : a->shape[a->rank - 2], K = a->shape[a->rank - 1];
    int64_t K2 = b1 ? b->shape[0] : b->shape[b->rank - 2];
    int64_t N = b1 ? 1 : b->shape[b->rank - 1];
    if (K != K2)
        return gad__err(GAD_ERR_SHAPE, op, "inner dims differ: %s @ %s (%lld vs %lld)",
                        gad__shape_str(s1, a->shape, a->rank),
                        gad__shape_str(s2, b->shape, b->rank), (long long)K,
                        (long long)K2);
    int ra = a1 ? 0 : a->rank - 2, rb = b1 ? 0 : b->rank - 2;
    mm_ctx c = {.dtype = a->dtype, .M = M, .N = N, .K = K};
    for (int i = 1; i <= ra && i <= rb; i++) { /* batch dims, right-aligned */
        int64_t da = a->shape[ra - i], db = b->shape[rb - i];
        if (da != db && da != 1 && db != 1)
            return gad__err(GAD_ERR_SHAPE, op, "batch dims of %s @ %s do not broadcast",
                            gad__shape_str(s1, a->shape, a->rank),
                            gad__shape_str(s2, b->shape, b->rank));
    }
    gad__broadcast_shapes(op, a->shape, ra, b->shape, rb, c.bshape, &c.nb);
    /* The full result is batch + [M, N]; the 1-D rules then drop axes,
     * which does not move any element. */
    int64_t full[GAD_MAX_RANK], fin[GAD_MAX_RANK];
    int rf = 0, rfin = 0;
    for (int i = 0; i < c.nb; i++) full[rf++] = fin[rfin++] = c.bshape[i];
    full[rf++] = M;
    full[rf++] = N;
    if (!a1) fin[rfin++] = M;
    if (!b1) fin[rfin++] = N;
    if (rf > GAD_MAX_RANK)
        return gad__err(GAD_ERR_SHAPE, op, "result rank %d exceeds %d", rf,
                        GAD_MAX_RANK);
    gad_tensor *y = gad__tensor_new(op, a->dtype, full, rf);
    if (!y) return NULL;
    int64_t st[GAD_MAX_RANK];
    gad__row_major(fin, rfin, st);
    gad_tensor *ac = NULL, *bc = NULL;
    if (y->numel == 0) goto done;

    /* Operands whose matrices GEMM cannot read in place are packed. */
    for (int side = 0; side < 2; side++) {
        gad_tensor *t = side ? b : a, **tc = side ? &bc : &ac;
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
        if (!gemm_layout(rows, cols, sr, sc, &v->trans, &v->ld)) {
            *tc = gad__tensor_new(op, t->dtype, t->shape, t->rank);
            if (!*tc) goto fail;
            gad__pack(t, gad__ptr(*tc));
            t = *tc;
            sr = one ? (side ? 1 : 0) : t->strides[t->rank - 2];
            sc = one ? (side ? 0 : 1) : t->strides[t->rank - 1];
            gemm_layout(rows, cols, sr, sc, &v->trans, &v->ld);
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
        /* small matrices: one thread per group of batch entries */
        gad__parallel_for(nbatch, 1, mm_batches, &c);
    } else {
        mm_batches(&c, 0, nbatch);
    }
    if (atomic_load(&c.failed)) {
        gad__err(GAD_ERR_MEMORY, op, "cannot allocate GEMM scratch");
        goto fail;
    }
done:
    gad_release(ac);
    gad_release(bc);
    gad__set_layout(y, fin, st, rfin, 0);
    /* dA needs b and dB needs a: save each only when the other is tracked */
    gad_tensor *in[2] = {a, b}, *save[2] = {b->node ? a : NULL, a->node ? b : NULL};
    y = gad__track(y, GAD_OP(MATMUL), in, 2, save, 2);
    if (y && y->node) {
        GAD_NP(y->node)->i[0] = a1;
        GAD_NP(y->node)->i[1] = b1;
        GAD_NP(y->node)->i[2] = M;
        GAD_NP(y->node)->i[3] = N;
    }
    return gad__own(y);
fail:
    gad_release(ac);
    gad_release(bc);
    gad_release(y);
    return NULL;
}

/* ------------------------------------------------------------------- VJP */

/* With A = a (a 1-D a as [1,k]), B = b (a 1-D b as [k,1]) and G = gy seen as
 * batch + [M, N]: dA = G @ B^T and dB = A^T @ G, each summed over the batch
 * dims that broadcasting added, then shaped like a and b. */
int gad__vjp_matmul(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    /* the parents' nodes know the inputs' shapes; only what a gradient
     * needs was saved */
    const gad_node *pa = n->parents[0], *pb = n->parents[1];
    gad_tensor *a = need[1] ? gad__saved(n, 0) : NULL, *b = need[0] ? gad__saved(n, 1) : NULL;
    if ((need[1] && !a) || (need[0] && !b)) return -1;
    int a1 = GAD_NP(n)->i[0], b1 = GAD_NP(n)->i[1];
    gad_tensor *A = a && a1 ? gad_unsqueeze(a, 0) : a;
    gad_tensor *B = b && b1 ? gad_unsqueeze(b, 1) : b;
    int64_t full[GAD_MAX_RANK];
    int nb = gy->rank - (a1 ? 0 : 1) - (b1 ? 0 : 1), r = 0;
    for (int d = 0; d < nb; d++) full[r++] = gy->shape[d];
    full[r++] = GAD_NP(n)->i[2]; /* M */
    full[r++] = GAD_NP(n)->i[3]; /* N */
    gad_tensor *G = gad_reshape(gy, full, r);
    if (need[0]) {
        int64_t as[GAD_MAX_RANK]; /* A's shape: a's, with [1, k] for a 1-D a */
        int ar = a1 ? 2 : pa->rank;
        if (a1) as[0] = 1, as[1] = pa->shape[0];
        else memcpy(as, pa->shape, (size_t)ar * sizeof *as);
        gad_tensor *dA = gad__unbroadcast(gad_matmul(G, gad_transpose(B)), as, ar);
        if (!(gin[0] = gad_reshape(dA, pa->shape, pa->rank))) return -1;
    }
    if (need[1]) {
        int64_t bs[GAD_MAX_RANK];
        int br = b1 ? 2 : pb->rank;
        if (b1) bs[0] = pb->shape[0], bs[1] = 1;
        else memcpy(bs, pb->shape, (size_t)br * sizeof *bs);
        gad_tensor *dB = gad__unbroadcast(gad_matmul(gad_transpose(A), G), bs, br);
        if (!(gin[1] = gad_reshape(dB, pb->shape, pb->rank))) return -1;
    }
    return 0;
}

static gad_tensor *apply_matmul(void *self, gad_tensor *const *in, int n) {
    (void)self, (void)n;
    return gad_matmul(in[0], in[1]);
}

/* 1-D on either side, batched, broadcast batch dims, K = 0, N = 1. */
static const struct {
    int ra, rb;
    int64_t a[4], b[4];
} mm_cases[] = {
    {2, 2, {3, 4}, {4, 5}},       {1, 1, {4}, {4}},          {2, 1, {3, 4}, {4}},
    {1, 2, {4}, {4, 2}},          {3, 2, {2, 3, 4}, {4, 2}}, {3, 3, {2, 3, 4}, {1, 4, 2}},
    {4, 3, {2, 1, 2, 3}, {3, 3, 2}}, {1, 3, {3}, {2, 3, 2}}, {2, 2, {2, 0}, {0, 3}},
    {2, 2, {3, 1}, {1, 1}},
};

int gad__sample_matmul(gad_op_sample *s, gad_rng *r, int v) {
    if (v >= (int)(sizeof mm_cases / sizeof mm_cases[0])) return 0;
    s->n = 2;
    s->apply = apply_matmul;
    s->smooth = 1;
    s->in[0] = gad__sample_leaf(r, mm_cases[v].a, mm_cases[v].ra, -1, 1, 0);
    s->in[1] = gad__sample_leaf(r, mm_cases[v].b, mm_cases[v].rb, -1, 1, 0);
    snprintf(s->what, sizeof s->what, "case #%d", v);
    return s->in[0] && s->in[1];
}
