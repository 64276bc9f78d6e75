/* backend.c: the CUDA back end's table of the seam (src/backend/backend.h)
 * and its memory hooks (gad_devmem), one pair per CUDA device. This C side
 * sees gad's tensors: it turns them into the plain walks and views of
 * cuda_abi.h (merging axes with core's iterator) and words the errors; the
 * .cu files beside it launch the kernels. Registered by gad__cuda_init,
 * which the public device API calls. */
#include "backend/backend.h"
#include "backend/driver.h"
#include "backend/embedding.h"
#include "backend/helix.h"
#include "backend/layout.h"
#include "backend/masked_ce.h"
#include "backend/rms_norm.h"
#include "backend/scan.h"
#include "cuda/cuda.h"
#include "cuda/cuda_abi.h"
#include "iter.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define MAXCU 16

static int ncuda;                      /* CUDA devices registered */
static int only_ord = -1;              /* the ordinal when ncuda is 1 */
static int dev_of[MAXCU];              /* gad device of CUDA ordinal */
static int ord_of[GAD_MAX_DEVICES];    /* CUDA ordinal of gad device (or -1) */
static char names[MAXCU][16];          /* "cuda:0", ... */
static gad_devmem mems[MAXCU];
/* The bytes of each ordinal's live storages (their requested sizes), for
 * gad_mem_stats: counted here, where they are made and freed. */
static atomic_llong live_bytes[MAXCU];
static gad_backend tables[MAXCU];

#define ORD(t) (ord_of[(t)->dev])
#define P(t) gad__ptr(t)

/* --------------------------------------------------------------- walks */

static void walk(gcu_iter *g, const int64_t *shape, int rank, int nops,
                 const int64_t *const *strides) {
    gad_iter it;
    gad__iter_init(&it, shape, rank, nops, strides);
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    g->nd = it.nd;
    g->n = n;
    for (int d = 0; d < it.nd; d++) {
        g->shape[d] = it.shape[d];
        for (int k = 0; k < GCU_MAXOPS; k++) g->st[k][d] = k < nops ? it.strides[k][d] : 0;
    }
}

static void walk1(gcu_iter *g, const gad_tensor *x) {
    const int64_t *st[1] = {x->strides};
    walk(g, x->shape, x->rank, 1, st);
}

static void view(gcu_view *v, const gad_tensor *t) {
    v->p = P(t);
    v->dtype = t->dtype;
    v->rank = t->rank;
    v->numel = t->numel;
    for (int d = 0; d < t->rank; d++) {
        v->shape[d] = t->shape[d];
        v->strides[d] = t->strides[d];
    }
}

/* The thread's pending fault of device ord and the index error a wait
 * found there (runtime.cu: a deferred check's), taken, as gad's one error:
 * a fault as a device error under op, the index error as an index error
 * under the op that asked for the check; both at once as the device error
 * with the index error's text in it, so that neither is lost. */
static void report(const char *op, int ord) {
    char msg[300];
    gcu_index_fault f;
    int fault = gcu_fault_take(ord, msg, sizeof msg);
    if (!gcu_index_take(ord, &f)) {
        if (fault) gad__err(GAD_ERR_DEVICE, op, "%s", msg);
        return;
    }
    gad_late_index li = {.target = f.target, .pos = f.pos, .value = f.value, .lo = f.lo,
                         .hi = f.hi};
    snprintf(li.op, sizeof li.op, "%s", f.op);
    if (!fault) {
        gad__err_late_index(dev_of[ord], &li);
        return;
    }
    char idx[200];
    gad__late_index_text(idx, sizeof idx, &li);
    gad__err(GAD_ERR_DEVICE, op, "%s; and an index error in %s: %s", msg, li.op, idx);
}

/* ------------------------------------------------------------- memory */

/* A device storage and the stream of the thread that made it, which its
 * free waits for (gcu_storage_free). */
typedef struct cu_storage {
    gad_storage s;
    void *owner;
} cu_storage;

static gad_storage *cu_storage_new(int dev, size_t nbytes) {
    cu_storage *cs = calloc(1, sizeof *cs);
    if (!cs) return NULL;
    gad_storage *s = &cs->s;
    int ord = ord_of[dev];
    void *d = gcu_storage_alloc(ord, nbytes, &cs->owner);
    if (!d) {
        /* a fault (a dead device) is a device error, recorded before the
         * caller's memory error, which then stays unrecorded */
        char msg[300];
        if (gcu_fault_take(ord, msg, sizeof msg)) gad__err(GAD_ERR_DEVICE, "alloc", "%s", msg);
        free(cs);
        return NULL;
    }
    atomic_init(&s->refs, 1);
    s->cap = nbytes;
    s->data = d;
    s->sclass = -1;
    s->dev = (uint8_t)dev;
    atomic_fetch_add(&live_bytes[ord_of[dev]], (long long)nbytes);
    return s;
}

static void cu_storage_free(gad_storage *s) {
    int ord = ord_of[s->dev];
    atomic_fetch_sub(&live_bytes[ord], (long long)s->cap);
    cu_storage *cs = (cu_storage *)s; /* s is its first member */
    gcu_storage_free(ord, s->data, cs->owner);
    free(cs);
}

/* The ordinal of a device pointer (the hooks below are not told the
 * device: backend.h's devmem takes pointers only). */
static int ord_of_ptr(const void *p) { return ncuda == 1 ? only_ord : gcu_ptr_device(p); }

static int cu_to_host(void *dst, const void *src, size_t n) {
    if (!n) return 0;
    int ord = ord_of_ptr(src);
    if (ord < 0) return -1;
    if (gcu_to_host(ord, dst, src, n)) {
        report("copy to the host", ord);
        return -1;
    }
    return 0;
}

static int cu_from_host(void *dst, const void *src, size_t n) {
    if (!n) return 0;
    int ord = ord_of_ptr(dst);
    if (ord < 0) return -1;
    if (gcu_from_host(ord, dst, src, n)) {
        report("copy from the host", ord);
        return -1;
    }
    return 0;
}

static void cu_copy_strided(const gad_tensor *src, void *dst, const int64_t *dst_strides) {
    int64_t packed[GAD_MAX_RANK];
    if (!dst_strides) {
        gad__row_major(src->shape, src->rank, packed);
        dst_strides = packed;
    }
    const int64_t *st[2] = {src->strides, dst_strides};
    gcu_iter it;
    walk(&it, src->shape, src->rank, 2, st);
    gcu_copy(ORD(src), gad__dsize(src->dtype), &it, P(src), dst);
}

static void cu_fill(void *p, int dtype, int64_t n, double value) {
    if (n <= 0) return;
    int ord = ord_of_ptr(p);
    if (ord >= 0) gcu_fill(ord, p, dtype, n, value);
}

static int cu_sync(const char *op, int dev) {
    if (gcu_sync(ord_of[dev]) == 0) return 0;
    report(op, ord_of[dev]);
    return -1;
}

/* --------------------------------------------------------- elementwise */

static void cu_unary(gad_ukernel k, const gad_tensor *x, gad_tensor *y, const gad_uparams *p) {
    gcu_iter it;
    walk1(&it, x);
    gcu_unary(ORD(x), (int)k, x->dtype, &it, P(x), P(y), p ? p->a : 0, p ? p->b : 0);
}

/* a and b broadcast to y's shape */
static void walk2(gcu_iter *it, const gad_tensor *a, const gad_tensor *b, const gad_tensor *y) {
    int64_t sa[GAD_MAX_RANK], sb[GAD_MAX_RANK];
    gad__broadcast_strides(a, y->shape, y->rank, sa);
    gad__broadcast_strides(b, y->shape, y->rank, sb);
    const int64_t *st[2] = {sa, sb};
    walk(it, y->shape, y->rank, 2, st);
}

static void cu_binary(gad_bkernel k, const gad_tensor *a, const gad_tensor *b, gad_tensor *y) {
    gcu_iter it;
    walk2(&it, a, b, y);
    gcu_binary(ORD(y), (int)k, y->dtype, &it, P(a), P(b), P(y));
}

static void cu_grad(gad_gkernel k, const gad_tensor *gy, const gad_tensor *v, gad_tensor *out,
                    const gad_uparams *p) {
    gcu_iter it;
    walk2(&it, gy, v, out);
    gcu_grad(ORD(out), (int)k, out->dtype, &it, P(gy), P(v), P(out), p ? p->a : 0,
             p ? p->b : 0);
}

static void cu_convert(const gad_tensor *x, gad_tensor *y) {
    gcu_iter it;
    walk1(&it, x);
    gcu_convert(ORD(x), &it, P(x), x->dtype, P(y), y->dtype);
}

/* ---------------------------------------------------------- reductions */

/* The grouping of every back end (backend/layout.h), in the ABI's struct. */
static void rspace(const gad_tensor *x, unsigned mask, gcu_rspace *s) {
    _Static_assert(GCU_MAXR == GAD_MAX_RANK, "the ABI's rank");
    gad_axis_group k, r;
    gad__reduce_groups(x, mask, &k, &r);
    memset(s, 0, sizeof *s);
    s->nk = k.n;
    s->nr = r.n;
    memcpy(s->ksize, k.size, sizeof s->ksize);
    memcpy(s->kstride, k.stride, sizeof s->kstride);
    memcpy(s->rsize, r.size, sizeof s->rsize);
    memcpy(s->rstride, r.stride, sizeof s->rstride);
    s->ktotal = k.total;
    s->rtotal = r.total;
}

static void cu_sum(const gad_tensor *x, unsigned mask, double scale, gad_tensor *y) {
    if (y->numel == 0) return;
    if (x->numel == 0) {
        gcu_fill(ORD(y), P(y), y->dtype, y->numel, 0.0 * scale);
        return;
    }
    gcu_rspace s;
    rspace(x, mask, &s);
    gcu_sum(ORD(x), x->dtype, &s, P(x), P(y), scale);
}

static void along(int op, const gad_tensor *x, int axis, gad_tensor *y) {
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= x->shape[d];
    for (int d = axis + 1; d < x->rank; d++) inner *= x->shape[d];
    gcu_axis(ORD(x), op, x->dtype, P(x), P(y), outer, x->shape[axis], inner);
}

static void cu_amax(const gad_tensor *x, int axis, gad_tensor *y) { along(0, x, axis, y); }
static void cu_argmax(const gad_tensor *x, int axis, gad_tensor *y) { along(1, x, axis, y); }
static void cu_amax_mask(const gad_tensor *x, int axis, gad_tensor *y) { along(2, x, axis, y); }
static void cu_softmax(const gad_tensor *x, int axis, int log, gad_tensor *y) {
    along(log ? 4 : 3, x, axis, y);
}

static bool cu_all_finite(const gad_tensor *x) {
    gcu_iter it;
    walk1(&it, x);
    int r = gcu_all_finite(ORD(x), &it, P(x), x->dtype);
    if (r < 0) report("all_finite", ORD(x)); /* no verdict: the error says why */
    return r != 0;
}

/* ------------------------------------------------------------ indexing */

/* Deferred (backend.h): queued, and reported by the next synchronising
 * call. A check that cannot be queued leaves its fault pending, which that
 * call reports too; the kernels stay in bounds meanwhile. */
static int64_t cu_index_check(const char *op, const gad_tensor *index, int64_t lo, int64_t hi,
                              int64_t *bad) {
    (void)bad;
    gcu_iter it;
    walk1(&it, index);
    gcu_index_check(ORD(index), op, &it, P(index), lo, hi);
    return -1;
}

static void pick(const gad_tensor *x, int axis, const gad_tensor *index, const int64_t *xs,
                 gad_tensor *y) {
    const int64_t *st[2] = {index->strides, xs};
    gcu_iter it;
    walk(&it, index->shape, index->rank, 2, st);
    gcu_pick(ORD(x), x->dtype, &it, P(index), P(x), x->shape[axis], x->strides[axis], P(y));
}

static void cu_gather(const gad_tensor *x, int axis, const gad_tensor *index, gad_tensor *y) {
    int64_t xs[GAD_MAX_RANK];
    for (int d = 0; d < x->rank; d++) xs[d] = (d == axis || x->shape[d] == 1) ? 0 : x->strides[d];
    pick(x, axis, index, xs, y);
}

static void cu_take(const gad_tensor *x, int axis, const gad_tensor *index, gad_tensor *y) {
    int64_t xs[GAD_MAX_RANK];
    for (int d = 0, o = 0; d < x->rank; d++)
        if (d != axis) xs[o++] = x->strides[d];
    pick(x, axis, index, xs, y);
}

static void cu_scatter_add(gad_tensor *y, int axis, const gad_tensor *index,
                           const gad_tensor *src) {
    gcu_view vy, vi, vs;
    view(&vy, y);
    view(&vi, index);
    view(&vs, src);
    gcu_scatter_add(ORD(y), &vy, axis, &vi, &vs);
}

static void cu_cat_into(const gad_tensor *x, int axis, int64_t start, gad_tensor *y) {
    char *base = (char *)P(y) + (size_t)(start * y->strides[axis]) * gad__dsize(y->dtype);
    const int64_t *st[2] = {x->strides, y->strides};
    gcu_iter it;
    walk(&it, x->shape, x->rank, 2, st);
    gcu_copy(ORD(y), gad__dsize(y->dtype), &it, P(x), base);
}

/* ------------------------------------------------------------- matmul */

typedef struct mat {
    const char *base;
    int trans;
    int64_t ld;
    int64_t bstride[GAD_MAX_RANK];
} mat;

/* The batch offsets of an operand as one stride (*s), when they are k * s
 * for batch entry k (row-major over the batch shape, s >= 0). */
static bool one_stride(const int64_t *bstride, const int64_t *bshape, int nb, int64_t *s) {
    int64_t st = -1, inner = 1;
    for (int d = nb - 1; d >= 0; d--) {
        if (bshape[d] == 1) continue;
        if (st < 0) st = bstride[d];
        if (bstride[d] != st * inner) return false;
        inner *= bshape[d];
    }
    *s = st < 0 ? 0 : st;
    return *s >= 0;
}

static int cu_matmul(const char *op, const gad_tensor *a, const gad_tensor *b, gad_tensor *y,
                     int a1, int b1) {
    if (y->numel == 0) return 0;
    int ord = ORD(y);
    int64_t M = a1 ? 1 : a->shape[a->rank - 2], K = a->shape[a->rank - 1];
    int64_t N = b1 ? 1 : b->shape[b->rank - 1];
    int nb = y->rank - 2, dt = a->dtype;
    size_t es = gad__dsize(dt);
    if (K == 0) { /* an empty sum: zeros */
        gcu_fill(ord, P(y), y->dtype, y->numel, 0.0);
        return 0;
    }
    int64_t bshape[GAD_MAX_RANK];
    for (int d = 0; d < nb; d++) bshape[d] = y->shape[d];
    gad_tensor *packed[2] = {NULL, NULL};
    mat m[2];
    int rc = -1;
    for (int side = 0; side < 2; side++) {
        const gad_tensor *t = side ? b : a;
        bool one = side ? b1 : a1;
        int64_t rows = side ? K : M, cols = side ? N : K, sr, sc;
        if (one) {
            sr = side ? t->strides[0] : 0;
            sc = side ? 0 : t->strides[0];
        } else {
            sr = t->strides[t->rank - 2];
            sc = t->strides[t->rank - 1];
        }
        if (!gad__gemm_layout(rows, cols, sr, sc, &m[side].trans, &m[side].ld)) {
            if (!(packed[side] = gad__contig(op, t))) goto out;
            t = packed[side];
            sr = one ? (side ? 1 : 0) : t->strides[t->rank - 2];
            sc = one ? (side ? 0 : 1) : t->strides[t->rank - 1];
            gad__gemm_layout(rows, cols, sr, sc, &m[side].trans, &m[side].ld);
        }
        m[side].base = P(t);
        int rt = one ? 0 : t->rank - 2;
        for (int d = 0; d < nb; d++) {
            int j = d - (nb - rt);
            m[side].bstride[d] = (j < 0 || t->shape[j] == 1) ? 0 : t->strides[j];
        }
    }
    int64_t nbatch = y->numel / (M * N);
    /* a batch of row-major a matrices against one b: one GEMM of batch * M
     * rows (the broadcast batch folded into the product) */
    bool b_shared = true, a_rows = !m[0].trans && nb > 0;
    int64_t expect = M * m[0].ld;
    for (int d = nb - 1; d >= 0; d--) {
        if (m[1].bstride[d] != 0) b_shared = false;
        if (bshape[d] != 1 && m[0].bstride[d] != expect) a_rows = false;
        expect *= bshape[d];
    }
    int64_t sa, sb;
    if (nbatch > 1 && b_shared && a_rows) {
        rc = gcu_gemm(ord, dt, 0, m[1].trans, M * nbatch, N, K, 1.0, m[0].base, m[0].ld, 0,
                      m[1].base, m[1].ld, 0, 0.0, P(y), N, 0, 1);
    } else if (one_stride(m[0].bstride, bshape, nb, &sa) &&
               one_stride(m[1].bstride, bshape, nb, &sb)) {
        rc = gcu_gemm(ord, dt, m[0].trans, m[1].trans, M, N, K, 1.0, m[0].base, m[0].ld, sa,
                      m[1].base, m[1].ld, sb, 0.0, P(y), N, M * N, nbatch);
    } else { /* batch offsets no one stride gives: one product per entry */
        rc = 0;
        for (int64_t k = 0; k < nbatch && !rc; k++) {
            int64_t rem = k, oa = 0, ob = 0;
            for (int d = nb - 1; d >= 0; d--) {
                int64_t i = rem % bshape[d];
                rem /= bshape[d];
                oa += i * m[0].bstride[d];
                ob += i * m[1].bstride[d];
            }
            rc = gcu_gemm(ord, dt, m[0].trans, m[1].trans, M, N, K, 1.0,
                          m[0].base + oa * (int64_t)es, m[0].ld, 0, m[1].base + ob * (int64_t)es,
                          m[1].ld, 0, 0.0, (char *)P(y) + (size_t)(k * M * N) * es, N, 0, 1);
        }
    }
    if (rc) report(op, ord);
out:
    gad_release(packed[0]);
    gad_release(packed[1]);
    return rc ? -1 : 0;
}

/* ------------------------------------------------------ fused kernels */

static int cu_scan_fwd(const gad_tensor *a, const gad_tensor *b, gad_tensor *h) {
    gcu_scan_fwd(ORD(a), a->dtype, P(a), P(b), P(h), a->shape[0], a->shape[1], a->shape[2]);
    return 0;
}

static int cu_scan_bwd(const gad_tensor *a, const gad_tensor *h, const gad_tensor *gh,
                       gad_tensor *ga, gad_tensor *gb) {
    gcu_scan_bwd(ORD(a), a->dtype, P(a), P(h), P(gh), ga ? P(ga) : NULL, gb ? P(gb) : NULL,
                 a->shape[0], a->shape[1], a->shape[2]);
    return 0;
}

static void rows_of(const gad_tensor *x, int64_t *rows, int64_t *n) {
    *n = x->shape[x->rank - 1];
    *rows = *n ? x->numel / *n : 0;
}

static void cu_rms_fwd(const gad_tensor *x, gad_tensor *y, double eps) {
    int64_t rows, n;
    rows_of(x, &rows, &n);
    gcu_rms_fwd(ORD(x), x->dtype, P(x), P(y), rows, n, eps);
}

static void cu_rms_bwd(const gad_tensor *x, const gad_tensor *g, gad_tensor *dx, double eps) {
    int64_t rows, n;
    rows_of(x, &rows, &n);
    gcu_rms_bwd(ORD(x), x->dtype, P(x), P(g), P(dx), rows, n, eps);
}

static int cu_mce_prep(const char *op, const gad_tensor *targets, const gad_tensor *mask,
                       int64_t V, gad_tensor *safe, gad_tensor *count, gad_tensor *nscale) {
    int ord = ORD(safe);
    gad_tensor *mp = gad__contig(op, mask);
    if (!mp) return -1;
    cu_copy_strided(targets, P(safe), NULL); /* packed targets */
    /* the targets' check is deferred, as cu_index_check's */
    int r = gcu_mce_prep(ord, nscale->dtype, op, P(safe), P(mp), safe->numel, V, P(count),
                         P(nscale));
    gad_release(mp);
    if (r) {
        report(op, ord);
        return -1;
    }
    return 0;
}

static int cu_mce_fwd(const char *op, const gad_tensor *logits, const gad_tensor *safe,
                      const gad_tensor *mask, gad_tensor *probs, gad_tensor *loss) {
    int ord = ORD(logits);
    if (gcu_mce_fwd(ord, logits->dtype, P(logits), P(safe), P(mask), P(probs), P(loss),
                    logits->shape[0], logits->shape[1])) {
        char msg[300];
        if (gcu_fault_take(ord, msg, sizeof msg)) gad__err(GAD_ERR_MEMORY, op, "%s", msg);
        return -1;
    }
    return 0;
}

static int cu_mce_bwd(const gad_tensor *probs, const gad_tensor *safe, const gad_tensor *mask,
                      const gad_tensor *count, const gad_tensor *gy, gad_tensor *d) {
    gcu_mce_bwd(ORD(d), d->dtype, P(probs), P(safe), P(mask), P(count), P(gy), P(d),
                probs->shape[0], probs->shape[1]);
    return 0;
}

static void cu_emb_fwd(const gad_tensor *table, const gad_tensor *idx, gad_tensor *y) {
    gcu_emb_fwd(ORD(y), y->dtype, P(table), P(idx), P(y), idx->numel, table->shape[1],
                table->shape[0]);
}

static void cu_emb_bwd(const gad_tensor *idx, const gad_tensor *gy, gad_tensor *gt) {
    gcu_emb_bwd(ORD(gt), gt->dtype, P(idx), P(gy), P(gt), idx->numel, gt->shape[1],
                gt->shape[0]);
}

static int helix_done(const char *op, int ord, int rc, int oom) {
    if (!rc) return 0;
    if (oom) gad__err(GAD_ERR_MEMORY, op, "cannot allocate the block's device scratch");
    else report(op, ord);
    return -1;
}

static int cu_helix_fwd(const char *op, gad_tensor *const *t, gad_tensor *y, double eps) {
    const gad_tensor *x = t[GAD_HX_X];
    void *p[GAD_HX_NALL];
    for (int i = 0; i < GAD_HX_NALL; i++) p[i] = P(t[i]);
    int oom = 0, ord = ORD(x);
    int rc = gcu_helix_fwd(ord, x->dtype, p, P(y), x->shape[0], x->shape[1], x->shape[2], eps,
                           &oom);
    return helix_done(op, ord, rc, oom);
}

static int cu_helix_bwd(const char *op, gad_tensor *const *t, const gad_tensor *gy,
                        gad_tensor *const *grads, double eps) {
    const gad_tensor *x = t[GAD_HX_X];
    void *p[GAD_HX_NALL], *g[GAD_HX_NIN];
    for (int i = 0; i < GAD_HX_NALL; i++) p[i] = i < GAD_HX_NSAVE ? P(t[i]) : NULL;
    for (int i = 0; i < GAD_HX_NIN; i++) g[i] = grads[i] ? P(grads[i]) : NULL;
    int oom = 0, ord = ORD(x);
    int rc = gcu_helix_bwd(ord, x->dtype, p, P(gy), g, x->shape[0], x->shape[1], x->shape[2],
                           eps, &oom);
    return helix_done(op, ord, rc, oom);
}

/* --------------------------------------------------------- optimizers */

/* The items in the ABI's form, 64 at a time, one device at a time. */
static void cu_update(const gad_optim_item *items, int n, int adamw) {
    gcu_optim_item x[64];
    for (int k = 0; k < n;) {
        int m = 0, ord = ORD(items[k].p);
        for (; k < n && m < 64 && ORD(items[k].p) == ord; k++, m++) {
            const gad_optim_item *it = &items[k];
            x[m] = (gcu_optim_item){.p = P(it->p), .old = it->old,
                                    .s1 = it->s1 ? P(it->s1) : NULL,
                                    .s2 = it->s2 ? P(it->s2) : NULL, .g = P(it->g),
                                    .n = it->p->numel, .dtype = it->p->dtype};
            if (adamw) {
                const gad_adamw_coef *c = &it->c.adamw;
                const double k9[9] = {c->beta1, c->one_minus_beta1, c->beta2,
                                      c->one_minus_beta2, c->bc1, c->bc2, c->lr, c->eps,
                                      c->decay};
                memcpy(x[m].c, k9, sizeof k9);
            } else {
                const gad_sgd_coef *c = &it->c.sgd;
                x[m].c[0] = c->lr;
                x[m].c[1] = c->weight_decay;
                x[m].c[2] = c->momentum;
                x[m].first = c->first;
                x[m].nesterov = c->nesterov;
            }
        }
        gcu_optim_update(ord, x, m, adamw);
    }
}

static void cu_adamw(const gad_optim_item *items, int n) { cu_update(items, n, 1); }

static void cu_sgd(const gad_optim_item *items, int n) { cu_update(items, n, 0); }

static double cu_sumsq(const gad_tensor *g) {
    double s = gcu_sumsq(ORD(g), g->dtype, P(g), g->numel);
    if (s != s) report("sumsq", ORD(g)); /* NaN: a fault, or a NaN gradient */
    return s;
}

static void cu_scale(gad_tensor *g, double s) {
    gcu_scale(ORD(g), g->dtype, P(g), g->numel, s);
}

/* --------------------------------------------------------- registration */

static const gad_be_scan cu_scan = {.fwd = cu_scan_fwd, .bwd = cu_scan_bwd};
static const gad_be_rms_norm cu_rms_norm = {.fwd = cu_rms_fwd, .bwd = cu_rms_bwd};
static const gad_be_masked_ce cu_masked_ce = {
    .prep = cu_mce_prep, .fwd = cu_mce_fwd, .bwd = cu_mce_bwd};
static const gad_be_embedding cu_embedding = {.fwd = cu_emb_fwd, .bwd = cu_emb_bwd};
static const gad_be_helix cu_helix = {.fwd = cu_helix_fwd, .bwd = cu_helix_bwd};

static const gad_backend cu_table = {
    .name = "cuda",
    .unary = cu_unary,
    .binary = cu_binary,
    .grad = cu_grad,
    .convert = cu_convert,
    .sum = cu_sum,
    .amax = cu_amax,
    .amax_mask = cu_amax_mask,
    .argmax = cu_argmax,
    .softmax = cu_softmax,
    .all_finite = cu_all_finite,
    .index_check = cu_index_check,
    .gather = cu_gather,
    .scatter_add = cu_scatter_add,
    .take = cu_take,
    .cat_into = cu_cat_into,
    .matmul = cu_matmul,
    .adamw_step = cu_adamw,
    .sgd_step = cu_sgd,
    .sumsq = cu_sumsq,
    .scale = cu_scale,
    .scan = &cu_scan,
    .rms_norm = &cu_rms_norm,
    .masked_ce = &cu_masked_ce,
    .embedding = &cu_embedding,
    .helix = &cu_helix,
};

/* gad_device_memory: the driver's free and total bytes of the device. */
static int cu_mem_info(int dev, size_t *free_bytes, size_t *total_bytes) {
    char name[8];
    long long pool = 0;
    return gad__cuda_info(dev, name, sizeof name, total_bytes, free_bytes, &pool);
}

/* gad_mem_stats: the storages' bytes (counted above) and what the pool
 * holds beyond what it has handed out (freed blocks kept for reuse, the
 * unused rest of its chunks). */
static int cu_mem_stats(int dev, int64_t *live, int64_t *cached) {
    int ord = ord_of[dev];
    long long reserved = 0, used = 0;
    if (ord < 0 || gcu_pool_stats(ord, &reserved, &used)) return -1;
    *live = atomic_load(&live_bytes[ord]);
    *cached = reserved > used ? reserved - used : 0;
    return 0;
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init(void) {
    for (int i = 0; i < GAD_MAX_DEVICES; i++) ord_of[i] = -1;
    for (int i = 0; i < MAXCU; i++) dev_of[i] = -1;
    int n = gcu_device_count();
    for (int ord = 0; ord < n && ord < MAXCU; ord++) {
        char msg[300];
        if (gcu_device_setup(ord)) {
            gcu_fault_take(ord, msg, sizeof msg); /* an unusable device is skipped */
            continue;
        }
        snprintf(names[ord], sizeof names[ord], "cuda:%d", ord);
        mems[ord] = (gad_devmem){
            .name = names[ord],
            .storage_new = cu_storage_new,
            .storage_free = cu_storage_free,
            .to_host = cu_to_host,
            .from_host = cu_from_host,
            .copy_strided = cu_copy_strided,
            .fill = cu_fill,
            .sync = cu_sync,
            .mem_info = cu_mem_info,
            .mem_stats = cu_mem_stats,
            .type = GAD_DEVICE_CUDA,
            .index = ord,
        };
        tables[ord] = cu_table;
        tables[ord].mem = &mems[ord];
        /* the ordinal is known before any hook of the device can run */
        int dev = gad__backend_register(&tables[ord]);
        if (dev < 0) break; /* every slot taken */
        ord_of[dev] = ord;
        dev_of[ord] = dev;
        only_ord = ncuda == 0 ? ord : -1;
        ncuda++;
    }
}

int gad__cuda_init(void) {
    pthread_once(&init_once, init);
    return ncuda;
}

int gad__cuda_unavailable(char *msg, size_t cap) {
    gad__cuda_init();
    return gcu_discovery_error(msg, cap);
}

int gad__cuda_device(int ord) {
    gad__cuda_init();
    return ord >= 0 && ord < MAXCU ? dev_of[ord] : -1;
}

int gad__cuda_ordinal(int dev) {
    gad__cuda_init();
    return dev >= 0 && dev < GAD_MAX_DEVICES ? ord_of[dev] : -1;
}

void *gad__cuda_stream(int dev) {
    int ord = gad__cuda_ordinal(dev);
    return ord < 0 ? NULL : gcu_stream_handle(ord);
}

int gad__cuda_stream_done(int dev, char *msg, size_t cap) {
    int ord = gad__cuda_ordinal(dev);
    if (cap) msg[0] = '\0';
    if (ord < 0) return -1;
    int r = gcu_stream_done(ord);
    if (r < 0) gcu_fault_take(ord, msg, cap);
    return r;
}

int gad__cuda_info(int dev, char *name, size_t cap, size_t *total, size_t *free_,
                   long long *pool_bytes) {
    int ord = gad__cuda_ordinal(dev);
    if (ord < 0) return -1;
    if (gcu_device_info(ord, name, cap, total, free_)) {
        char msg[300];
        gcu_fault_take(ord, msg, sizeof msg);
        return -1;
    }
    if (pool_bytes) *pool_bytes = gcu_pool_bytes(ord);
    return 0;
}

void gad__cuda_trim(void) {
    gad__cuda_init();
    for (int ord = 0; ord < MAXCU; ord++)
        if (dev_of[ord] >= 0) gcu_trim(ord);
}

int gad__cuda_set_tf32(int on) { return gcu_set_tf32(on); }

void *gad__cuda_host_alloc(size_t n) { return gad__cuda_init() > 0 ? gcu_host_alloc(n) : NULL; }
void gad__cuda_host_free(void *p) { gcu_host_free(p); }

/* What the rest of gad reaches of this back end (backend/driver.h). */
static const gad_driver cuda_driver = {
    .name = "cuda",
    .type = GAD_DEVICE_CUDA,
    .probe = gad__cuda_init,
    .unavailable = gad__cuda_unavailable,
    .set_tf32 = gad__cuda_set_tf32,
    .host_alloc = gad__cuda_host_alloc,
    .host_free = gad__cuda_host_free,
    .stream = gad__cuda_stream,
    .stream_done = gad__cuda_stream_done,
};

const gad_driver *gad__cuda_driver(void) { return &cuda_driver; }

/* ------------------------------------------- gad-bench's direct calls */

static int bench_ord(int dev, char *msg, size_t cap) {
    int ord = gad__cuda_ordinal(dev);
    if (cap) msg[0] = '\0';
    if (ord < 0 && cap) snprintf(msg, cap, "device %d is not a CUDA device", dev);
    return ord;
}

int gad__cuda_bench_sgemm(int dev, int64_t M, int64_t N, int64_t K, const void *A,
                          const void *B, void *C, char *msg, size_t cap) {
    int ord = bench_ord(dev, msg, cap);
    if (ord < 0) return -1;
    /* packed row-major: lda K, ldb N, ldc N; one product (no strides) */
    if (gcu_gemm(ord, GAD_F32, 0, 0, M, N, K, 1.0, A, K, 0, B, N, 0, 0.0, C, N, 0, 1) == 0)
        return 0;
    gcu_fault_take(ord, msg, cap);
    return -1;
}

int gad__cuda_bench_copy(int dev, void *dst, const void *src, size_t n, char *msg, size_t cap) {
    int ord = bench_ord(dev, msg, cap);
    if (ord < 0) return -1;
    /* one contiguous run of bytes: gcu_copy's cudaMemcpyAsync path */
    gcu_iter it = {.nd = 1, .n = (int64_t)n, .shape = {(int64_t)n}, .st = {{1}, {1}}};
    gcu_copy(ord, 1, &it, src, dst);
    return gcu_fault_take(ord, msg, cap) ? -1 : 0;
}
