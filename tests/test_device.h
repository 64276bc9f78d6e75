/* test_device.h: the test device, a second device for tests without a GPU
 * (test_device.c, test_dist.c): its memory is separate host memory (blocks
 * of its own, never core's caches) that core reaches only through the
 * table's copies, which it counts; its kernels are the CPU's. Call
 * register_test_device() once; TD is then its device number. It is a test
 * fixture, not a GPU.
 *
 * Its index checks answer at once, as the CPU's, unless a test turns on
 * the deferred mode (td_defer_index(1)), in which they behave as the CUDA
 * back end's (backend.h's index_check): the check notes the first bad
 * index of the thread's checks instead of answering, the ops run, and the
 * next synchronising call on the device (its sync, a copy to or from the
 * host) reports the noted error, as gad__err_late_index words it, and
 * clears it. The CPU's kernels read without bounds (their check came
 * first), so in that mode the kernels that consume indices look first: an
 * op whose index is bad gives zeros, or adds nothing (its values are not
 * specified; CUDA's give 0 at the bad positions only), and masked_ce's
 * preparation makes a bad target 0, as CUDA's does. */
#ifndef GAD_TEST_DEVICE_H
#define GAD_TEST_DEVICE_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/embedding.h"
#include "backend/helix.h"
#include "backend/masked_ce.h"
#include "backend/pool.h" /* pooling (issue 28) */
#include "backend/rms_norm.h"
#include "backend/select.h"
#include "backend/conv.h"
#include "backend/attention.h"
#include "backend/norm.h" /* normalization (issue 28) */
#include "backend/linear.h"
#include "backend/scan.h"
/* sort, cumulative, sampling */
#include "backend/sort.h"
#include "backend/cumulative.h"
#include "backend/sampling.h"
#include "gad_int.h"
#include "half.h"

static atomic_llong td_live, td_to_host, td_from_host;
static atomic_llong td_live_bytes; /* reported through mem_stats */

static gad_storage *td_storage_new(int dev, size_t nbytes) {
    gad_storage *s = malloc(sizeof *s);
    void *d = NULL;
    if (!s || posix_memalign(&d, 64, nbytes ? nbytes : 1)) {
        free(s);
        return NULL;
    }
    memset(s, 0, sizeof *s);
    atomic_init(&s->refs, 1);
    s->cap = nbytes;
    s->data = d;
    s->sclass = -1;
    s->dev = (uint8_t)dev;
    atomic_fetch_add(&td_live, 1);
    atomic_fetch_add(&td_live_bytes, (long long)nbytes);
    return s;
}

static void td_storage_free(gad_storage *s) {
    atomic_fetch_sub(&td_live_bytes, (long long)s->cap);
    free(s->data);
    free(s);
    atomic_fetch_sub(&td_live, 1);
}

static int TD = -1; /* its device number */

/* ------------------------------------------------ deferred index checks */

static atomic_int td_deferred;           /* the mode, for every thread */
static _Thread_local int td_late_set;    /* the thread's noted error */
static _Thread_local gad_late_index td_late;

/* Turn the deferred mode on (1) or off (0); returns the previous mode. An
 * error noted and not yet reported stays noted. */
static inline int td_defer_index(int on) { return atomic_exchange(&td_deferred, on ? 1 : 0); }

/* Note a bad index unless one is noted already (the first is kept). */
static void td_note(const char *op, int target, int64_t pos, int64_t value, int64_t lo,
                    int64_t hi) {
    if (td_late_set) return;
    td_late = (gad_late_index){.target = target, .pos = pos, .value = value, .lo = lo, .hi = hi};
    snprintf(td_late.op, sizeof td_late.op, "%s", op);
    td_late_set = 1;
}

/* At a synchronising call: the noted error, recorded and cleared (-1), or
 * 0 when none. */
static int td_report_late(void) {
    if (!td_late_set) return 0;
    td_late_set = 0;
    gad__err_late_index(TD, &td_late);
    return -1;
}

static int64_t td_index_check(const char *op, const gad_tensor *index, int64_t lo, int64_t hi,
                              int64_t *bad) {
    int64_t pos = gad__cpu_backend.index_check(op, index, lo, hi, bad);
    if (pos < 0 || !atomic_load(&td_deferred)) return pos;
    td_note(op, 0, pos, *bad, lo, hi);
    return -1;
}

/* Whether, in the deferred mode, index holds a value outside [lo, hi):
 * one that the CPU's kernels must not see. */
static int td_bad(const gad_tensor *index, int64_t lo, int64_t hi) {
    int64_t v;
    return atomic_load(&td_deferred) && gad__cpu_backend.index_check("", index, lo, hi, &v) >= 0;
}

static void td_zeros(gad_tensor *y) { gad__host_fill(gad__ptr(y), y->dtype, y->numel, 0); }

static void td_gather(const gad_tensor *x, int axis, const gad_tensor *index, gad_tensor *y) {
    int64_t d = x->shape[axis];
    if (td_bad(index, -d, d)) td_zeros(y);
    else gad__cpu_backend.gather(x, axis, index, y);
}

static void td_take(const gad_tensor *x, int axis, const gad_tensor *index, gad_tensor *y) {
    int64_t d = x->shape[axis];
    if (td_bad(index, -d, d)) td_zeros(y);
    else gad__cpu_backend.take(x, axis, index, y);
}

static void td_scatter_add(gad_tensor *y, int axis, const gad_tensor *index,
                           const gad_tensor *src) {
    int64_t d = y->shape[axis];
    if (!td_bad(index, -d, d)) gad__cpu_backend.scatter_add(y, axis, index, src);
}

static void td_emb_fwd(const gad_tensor *table, const gad_tensor *idx, gad_tensor *y) {
    if (td_bad(idx, 0, table->shape[0])) td_zeros(y);
    else gad__cpu_backend.embedding->fwd(table, idx, y);
}

static void td_emb_bwd(const gad_tensor *idx, const gad_tensor *gy, gad_tensor *gt) {
    if (!td_bad(idx, 0, gt->shape[0])) gad__cpu_backend.embedding->bwd(idx, gy, gt);
}

/* The CPU's preparation; in the deferred mode, of the targets with the
 * first bad weighted one noted and every bad weighted one made 0. */
static int td_mce_prep(const char *op, const gad_tensor *targets, const gad_tensor *mask,
                       int64_t V, gad_tensor *safe, gad_tensor *count, gad_tensor *nscale) {
    if (!atomic_load(&td_deferred))
        return gad__cpu_backend.masked_ce->prep(op, targets, mask, V, safe, count, nscale);
    gad_tensor *t = gad__tensor_like(op, safe), *mp = t ? gad__contig(op, mask) : NULL;
    int rc = -1;
    if (mp) {
        gad__pack(targets, gad__ptr(t));
        int64_t *tv = gad__ptr(t);
        for (int64_t i = 0; i < t->numel; i++) {
            const void *mv = gad__ptr(mp);
            double w = mp->dtype == GAD_F32    ? ((const float *)mv)[i]
                       : mp->dtype == GAD_F64  ? ((const double *)mv)[i]
                       : mp->dtype == GAD_BF16 ? gad__bf16_to_f32(((const uint16_t *)mv)[i])
                                               : gad__f16_to_f32(((const uint16_t *)mv)[i]);
            if (w != 0 && (tv[i] < 0 || tv[i] >= V)) {
                td_note(op, 1, i, tv[i], 0, V);
                tv[i] = 0;
            }
        }
        rc = gad__cpu_backend.masked_ce->prep(op, t, mask, V, safe, count, nscale);
    }
    gad_release(mp);
    gad_release(t);
    return rc;
}

/* With no classes the CPU's forward and backward would read a weighted
 * row's (made 0) target outside the row: the loss is 0 and there is
 * nothing to write (the immediate mode's answer too: no row is weighted
 * there, or the preparation failed). */
static int td_mce_fwd(const char *op, const gad_tensor *logits, const gad_tensor *safe,
                      const gad_tensor *mask, gad_tensor *probs, gad_tensor *loss) {
    if (logits->shape[1] > 0)
        return gad__cpu_backend.masked_ce->fwd(op, logits, safe, mask, probs, loss);
    td_zeros(loss);
    return 0;
}

static int td_mce_bwd(const gad_tensor *probs, const gad_tensor *safe, const gad_tensor *mask,
                      const gad_tensor *count, const gad_tensor *gy, gad_tensor *d) {
    if (probs->shape[1] > 0)
        return gad__cpu_backend.masked_ce->bwd(probs, safe, mask, count, gy, d);
    return 0;
}

/* ------------------------------------------------------------- memory */

static int td_to_host_copy(void *dst, const void *src, size_t n) {
    atomic_fetch_add(&td_to_host, 1);
    memcpy(dst, src, n);
    return td_report_late();
}

static int td_from_host_copy(void *dst, const void *src, size_t n) {
    atomic_fetch_add(&td_from_host, 1);
    memcpy(dst, src, n);
    return td_report_late();
}

static int td_sync(const char *op, int dev) {
    (void)op, (void)dev;
    return td_report_late();
}

static int td_mem_info(int dev, size_t *free_bytes, size_t *total_bytes) {
    (void)dev;
    *free_bytes = (size_t)1 << 30;
    *total_bytes = (size_t)2 << 30;
    return 0;
}

/* Its live bytes as the back end counts them; it caches nothing. */
static int td_mem_stats(int dev, int64_t *live_bytes, int64_t *cached_bytes) {
    (void)dev;
    *live_bytes = atomic_load(&td_live_bytes);
    *cached_bytes = 0;
    return 0;
}

static const gad_devmem td_mem = {
    .name = "test:0",
    .type = GAD_DEVICE_OTHER,
    .storage_new = td_storage_new,
    .storage_free = td_storage_free,
    .to_host = td_to_host_copy,
    .from_host = td_from_host_copy,
    .copy_strided = gad__host_copy_strided, /* the CPU's kernels */
    .fill = gad__host_fill,
    .sync = td_sync,
    .mem_info = td_mem_info,
    .mem_stats = td_mem_stats,
};

/* Its table and its families' tables: copies that a test may change (an
 * entry made NULL: test_device.c's gaps), then put back with
 * td_table_reset. */
static gad_backend td_backend;
static gad_be_scan td_scan;
static gad_be_rms_norm td_rms_norm;
static gad_be_masked_ce td_masked_ce;
static gad_be_embedding td_embedding;
static gad_be_helix td_helix;
static gad_be_select td_select;
/* sort, cumulative, sampling */
static gad_be_sort td_sort;
static gad_be_cumulative td_cumulative;
static gad_be_sampling td_sampling;
static gad_be_pool td_pool; /* pooling (issue 28) */
static gad_be_conv td_conv;
static gad_be_attention td_attention;
static gad_be_norm td_norm; /* normalization (issue 28) */
static gad_be_linear td_linear; /* bias and activation of linear layers */

static void td_table_reset(void) {
    td_backend = gad__cpu_backend; /* every kernel the CPU's, */
    td_backend.name = "test";
    td_backend.mem = &td_mem;
    /* behind the deferred mode's guards */
    td_backend.index_check = td_index_check;
    td_backend.gather = td_gather;
    td_backend.take = td_take;
    td_backend.scatter_add = td_scatter_add;
    td_scan = *gad__cpu_backend.scan;
    td_rms_norm = *gad__cpu_backend.rms_norm;
    td_masked_ce = (gad_be_masked_ce){.prep = td_mce_prep, .fwd = td_mce_fwd, .bwd = td_mce_bwd,
                                      .half = gad__cpu_backend.masked_ce->half};
    td_embedding = (gad_be_embedding){.fwd = td_emb_fwd, .bwd = td_emb_bwd};
    td_helix = *gad__cpu_backend.helix;
    td_select = *gad__cpu_backend.select;
    td_attention = *gad__cpu_backend.attention;
    td_backend.scan = &td_scan;
    td_backend.rms_norm = &td_rms_norm;
    td_backend.masked_ce = &td_masked_ce;
    td_backend.embedding = &td_embedding;
    td_backend.helix = &td_helix;
    td_backend.select = &td_select;
    /* sort, cumulative, sampling: the CPU's kernels */
    td_sort = *gad__cpu_backend.sort;
    td_cumulative = *gad__cpu_backend.cumulative;
    td_sampling = *gad__cpu_backend.sampling;
    td_backend.sort = &td_sort;
    td_backend.cumulative = &td_cumulative;
    td_backend.sampling = &td_sampling;
    td_pool = *gad__cpu_backend.pool; /* pooling (issue 28) */
    td_backend.pool = &td_pool;
    td_conv = *gad__cpu_backend.conv;
    td_backend.conv = &td_conv;
    td_backend.attention = &td_attention;
    td_norm = *gad__cpu_backend.norm; /* normalization (issue 28) */
    td_backend.norm = &td_norm;
    td_linear = *gad__cpu_backend.linear;
    td_backend.linear = &td_linear;
}

static void register_test_device(void) {
    td_table_reset();
    TD = gad__backend_register(&td_backend);
}

#endif
