/* linalg.c: matmul with NumPy's batch broadcasting and 1-D rules (SPEC
 * §3.2, D2), on f32/f64 and (CPU) f16/bf16: shapes checked here, the product made by the back end (the
 * CPU's batching is src/cpu/matmul.c), or by the GPUs for a large CPU
 * product when offload is on (offload.c). */
#include "ops_int.h"

#include <stdio.h>

gad_tensor *gad_matmul(gad_tensor *a, gad_tensor *b) {
    const char *op = "matmul";
    if (gad__bad_tensor(a) || gad__bad_tensor(b)) return gad__bad_of(op, 2, (const gad_tensor *const[]){a, b});
    char s1[GAD_SHAPE_BUF], s2[GAD_SHAPE_BUF];
    if (a->rank == 0 || b->rank == 0)
        return gad__err(GAD_ERR_SHAPE, op, "rank-0 is not allowed: %s @ %s",
                        gad__shape_str(s1, a->shape, a->rank),
                        gad__shape_str(s2, b->shape, b->rank));
    if (gad__need_same_dtype(op, a, b)) return NULL;
    /* f16/bf16 (issue 29): f32 sums, rounded once; CPU only */
    bool half = gad__is_half(a->dtype);
    if (!half && gad__need_float(op, a)) return NULL;
    if (GAD_UNLIKELY(a->dev != b->dev)) return gad__err_device(op, a->dev, b->dev);
    if (half && a->dev != GAD_DEV_HOST)
        return gad__err(GAD_ERR_UNSUPPORTED, op, "%s not supported on %s",
                        gad_dtype_name(a->dtype), gad__device_name(a->dev));
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
    int64_t bshape[GAD_MAX_RANK];
    int nb;
    for (int i = 1; i <= ra && i <= rb; i++) { /* batch dims, right-aligned */
        int64_t da = a->shape[ra - i], db = b->shape[rb - i];
        if (da != db && da != 1 && db != 1)
            return gad__err(GAD_ERR_SHAPE, op, "batch dims of %s @ %s do not broadcast",
                            gad__shape_str(s1, a->shape, a->rank),
                            gad__shape_str(s2, b->shape, b->rank));
    }
    gad__broadcast_shapes(op, a->shape, ra, b->shape, rb, bshape, &nb);
    /* The full result is batch + [M, N]; the 1-D rules then drop axes,
     * which does not move any element. */
    int64_t full[GAD_MAX_RANK], fin[GAD_MAX_RANK];
    int rf = 0, rfin = 0;
    for (int i = 0; i < nb; i++) full[rf++] = fin[rfin++] = bshape[i];
    full[rf++] = M;
    full[rf++] = N;
    if (!a1) fin[rfin++] = M;
    if (!b1) fin[rfin++] = N;
    if (rf > GAD_MAX_RANK)
        return gad__err(GAD_ERR_SHAPE, op, "result rank %d exceeds %d", rf,
                        GAD_MAX_RANK);
    if (GAD_LACKS(op, a, matmul)) return NULL;
    gad_tensor *y = gad__tensor_new(op, a->dev, a->dtype, full, rf);
    if (!y) return NULL;
    bool offloaded = a->dev == GAD_DEV_HOST && a->dtype == GAD_F32 &&
                     GAD_UNLIKELY(gad__offload_wanted()) &&
                     gad__offload_matmul(op, a, b, y, a1, b1) == 1;
    if (!offloaded && GAD_BE(a)->matmul(op, a, b, y, a1, b1)) {
        gad_release(y);
        return NULL;
    }
    int64_t st[GAD_MAX_RANK];
    gad__row_major(fin, rfin, st);
    gad__set_layout(y, fin, st, rfin, 0);
    /* dA needs b and dB needs a: save each only when the other is tracked */
    gad_tensor *in[2] = {a, b}, *save[2] = {b->node ? a : NULL, a->node ? b : NULL};
    y = gad__track(y, GAD_OP(MATMUL), in, 2, save, 2);
    if (y && y->node) {
        gad_np_matmul *np = GAD_NODE_P(y->node, matmul);
        np->a_vec = a1;
        np->b_vec = b1;
        np->m = M;
        np->n = N;
    }
    return gad__own(y);
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
    const gad_np_matmul *np = GAD_NODE_P(n, matmul);
    int a1 = (int)np->a_vec, b1 = (int)np->b_vec;
    gad_tensor *A = a && a1 ? gad_unsqueeze(a, 0) : a;
    gad_tensor *B = b && b1 ? gad_unsqueeze(b, 1) : b;
    int64_t full[GAD_MAX_RANK];
    int nb = gy->rank - (a1 ? 0 : 1) - (b1 ? 0 : 1), r = 0;
    for (int d = 0; d < nb; d++) full[r++] = gy->shape[d];
    full[r++] = np->m;
    full[r++] = np->n;
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
        gad_tensor *dB;
        if (br == 2 && A->rank > 2) {
            /* a batch of a's against one matrix b (x @ W): the sum over
             * the batch of A_i^T G_i is one product of the batch's rows
             * stacked, A [rows, k]^T G [rows, n], not a [batch, k, n]
             * stack of products summed afterwards */
            int64_t k = A->shape[A->rank - 1], rows = k ? gad_numel(A) / k : 0;
            gad_tensor *A2 = gad_reshape(A, (int64_t[]){rows, k}, 2);
            gad_tensor *G2 = gad_reshape(G, (int64_t[]){rows, np->n}, 2);
            dB = gad_matmul(gad_transpose(A2), G2);
        } else {
            dB = gad__unbroadcast(gad_matmul(gad_transpose(A), G), bs, br);
        }
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
