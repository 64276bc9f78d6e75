/* dist.c: data parallelism across processes (gad.h, "Distributed data
 * parallelism"): the public calls, their checks, the signature every
 * collective compares across ranks first, the packing of tensors into
 * buckets, and the world of one. The data move through a transport table
 * (dist_int.h): MPI when gad is built with it and the process was started
 * by an MPI launcher, else the world of one below. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist_int.h"
#include "gad_int.h"
#include "ops/ops_int.h"

#define DEFAULT_TIMEOUT 60.0
#define DEFAULT_BUCKET ((size_t)25 << 20)
#define MIN_BUCKET ((size_t)4096)

double gad__dist_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------ the world of one */

static gad_status one_init(int *argc, char ***argv, int *rank, int *size) {
    *rank = 0, *size = 1;
    return GAD_OK;
}
static gad_status one_allreduce(void *buf, int64_t n, gad_dtype_t dtype, dist_op rop,
                                const char *op, double timeout) {
    return GAD_OK; /* the sum, min and max over one rank are its values */
}
static gad_status one_broadcast(void *buf, size_t bytes, int root, const char *op,
                                double timeout) {
    return GAD_OK;
}
static gad_status one_allgather(const void *mine, void *all, size_t bytes, const char *op,
                                double timeout) {
    memmove(all, mine, bytes);
    return GAD_OK;
}
static gad_status one_barrier(const char *op, double timeout) { return GAD_OK; }
static gad_status one_finalize(int healthy, double timeout) { return GAD_OK; }

static const dist_transport g_one = {"none",        one_init,    one_allreduce, one_broadcast,
                                     one_allgather, one_barrier, one_finalize};

/* ------------------------------------------------------------- the state */

/* One world per process, used from the thread that called gad_dist_init. */
static const dist_transport *g_tr = &g_one;
static const dist_dev_transport *g_dtr; /* NULL: device tensors go through the host */
static int g_inited, g_rank, g_size = 1, g_broken;
static double g_timeout = DEFAULT_TIMEOUT;
static size_t g_bucket_bytes = DEFAULT_BUCKET;
static void *g_bucket;  /* the host scratch of move_packed: g_scratch_cap bytes */
static size_t g_scratch_cap;
static int64_t g_fail_in; /* gad__dist_fail_move: the move that fails, counted down */
static int64_t g_seq;   /* the public collectives called so far */
static gad_dist_stats g_stats;

void gad__dist_fail_move(int64_t k) { g_fail_in = k > 0 ? k : 0; }

gad_status gad_dist_init(int *argc, char ***argv) {
    if (g_inited) return GAD_OK;
    /* numbers from the environment are decimal: strtod alone would take
     * "0x10", "inf" or " 5", strtoull "-1" */
    const char *t = getenv("GAD_DIST_TIMEOUT");
    if (t && *t) {
        char *end;
        double v = strtod(t, &end);
        if (*end || strspn(t, "0123456789.eE+-") != strlen(t) || !(v > 0) || !isfinite(v)) {
            gad_error_set(GAD_ERR_DOMAIN, "dist_init",
                          "GAD_DIST_TIMEOUT='%s' is not a decimal number of seconds > 0", t);
            return GAD_ERR_DOMAIN;
        }
        g_timeout = v;
    }
    const char *b = getenv("GAD_DIST_BUCKET_BYTES");
    if (b && *b) {
        char *end;
        unsigned long long v = strtoull(b, &end, 10);
        if (*end || strspn(b, "0123456789") != strlen(b) || v < MIN_BUCKET ||
            v > ((unsigned long long)1 << 40)) {
            gad_error_set(GAD_ERR_DOMAIN, "dist_init",
                          "GAD_DIST_BUCKET_BYTES='%s' is not a decimal byte count in [4096, 2^40]", b);
            return GAD_ERR_DOMAIN;
        }
        g_bucket_bytes = (size_t)v;
    }
    const dist_transport *tr = &g_one;
#ifdef GAD_HAVE_MPI
    if (gad__dist_mpi_launched()) tr = &gad__dist_mpi;
#endif
    int rank = 0, size = 1;
    gad_status s = tr->init(argc, argv, &rank, &size);
    if (s != GAD_OK) return s;
    g_tr = tr;
    g_rank = rank, g_size = size;
    g_inited = 1;
#ifdef GAD_HAVE_NCCL
    /* NCCL beside MPI, unless GAD_DIST_NCCL=0 (every rank must say the
     * same: setup agrees over MPI, so a rank that says 0 turns it off for
     * all) */
    const char *nc = getenv("GAD_DIST_NCCL");
    int want = size > 1 && !(nc && (!strcmp(nc, "0") || !strcmp(nc, "off")));
    if (tr != &g_one) {
        int usable = 0;
        s = gad__dist_nccl.setup(tr, want, rank, size, g_timeout, &usable);
        if (s != GAD_OK) {
            g_broken = 1;
            return s;
        }
        if (usable) g_dtr = &gad__dist_nccl;
    }
#endif
    return GAD_OK;
}

int gad_dist_rank(void) { return g_rank; }
int gad_dist_size(void) { return g_size; }
const char *gad_dist_backend(void) { return g_dtr ? "mpi+nccl" : g_tr->name; }
double gad_dist_timeout(void) { return g_timeout; }
size_t gad_dist_bucket_bytes(void) { return g_bucket_bytes; }

double gad_dist_set_timeout(double seconds) {
    double old = g_timeout;
    if (seconds > 0 && isfinite(seconds)) g_timeout = seconds;
    return old;
}

void gad_dist_stats_get(gad_dist_stats *out) {
    if (out) *out = g_stats;
}
void gad_dist_stats_reset(void) { memset(&g_stats, 0, sizeof g_stats); }

gad_status gad_dist_finalize(void) {
    if (!g_inited) return GAD_OK;
    if (g_dtr) g_dtr->finalize(!g_broken, g_timeout);
    g_dtr = NULL;
    gad_status s = g_tr->finalize(!g_broken, g_timeout);
    gad_mem_free(g_bucket);
    g_bucket = NULL, g_scratch_cap = 0;
    g_inited = 0;
    g_tr = &g_one;
    g_rank = 0, g_size = 1;
    if (s != GAD_OK) g_broken = 1;
    return s;
}

/* A transport call's status: a comm error breaks the world. */
static gad_status tr_done(gad_status s) {
    if (s == GAD_ERR_COMM) g_broken = 1;
    return s;
}

/* ------------------------------------------------------------ signatures */

/* The kind of this rank's recorded error (a domain error if none). */
static gad_status local_kind(void) {
    return gad_last_error() ? gad_last_error()->kind : GAD_ERR_DOMAIN;
}

/* What every rank must agree on before a collective moves data. */
enum { SIG_OP, SIG_SEQ, SIG_N, SIG_NUMEL, SIG_HASH, SIG_ARG, SIG_OK, SIG_PATH, SIG_BUCKET,
       SIG_LEN };

static const char *op_names[] = {"?", "dist_allreduce", "dist_allreduce_f64", "dist_broadcast",
                                 "dist_average_grads", "dist_barrier"};

static uint64_t fnv(uint64_t h, uint64_t v) {
    for (int i = 0; i < 8; i++) h = (h ^ ((v >> (8 * i)) & 0xff)) * 0x100000001b3ull;
    return h;
}

/* The hash of a tensor's dtype and shape (skipped: an empty slot). */
static uint64_t hash_tensor(uint64_t h, gad_tensor *t) {
    if (!t) return fnv(h, 0xfeedull);
    h = fnv(h, (uint64_t)gad_dtype(t));
    h = fnv(h, (uint64_t)gad_rank(t));
    for (int d = 0; d < gad_rank(t); d++) h = fnv(h, (uint64_t)gad_shape(t)[d]);
    return h;
}

/* Compare sig across ranks: an all-reduce max of sig and of its bitwise
 * complement (~x reverses the order without overflow: the min). On a
 * mismatch every rank sees it, gathers all signatures and records an
 * error naming what the ranks passed. */
static gad_status sig_check(const char *op, int64_t sig[SIG_LEN]) {
    int64_t mm[2 * SIG_LEN];
    for (int i = 0; i < SIG_LEN; i++) mm[i] = sig[i], mm[SIG_LEN + i] = ~sig[i];
    gad_status s = tr_done(g_tr->allreduce(mm, 2 * SIG_LEN, GAD_I64, DIST_MAX, op, g_timeout));
    if (s != GAD_OK) return s;
    int same = 1;
    for (int i = 0; i < SIG_LEN; i++)
        if (mm[i] != ~mm[SIG_LEN + i]) same = 0;
    if (same) return GAD_OK;
    int64_t *all = malloc((size_t)g_size * sizeof(int64_t) * SIG_LEN);
    if (!all) {
        gad_error_set(GAD_ERR_MEMORY, op, "the ranks disagree (and the report is out of memory)");
        g_broken = 1;
        return GAD_ERR_MEMORY;
    }
    s = tr_done(g_tr->allgather(sig, all, sizeof(int64_t) * SIG_LEN, op, g_timeout));
    if (s != GAD_OK) {
        free(all);
        return s;
    }
    char msg[240];
    size_t len = 0;
    gad_status kind = GAD_ERR_SHAPE;
    int nfail = 0;
    /* a rank that failed first: its own error says why */
    for (int r = 0; r < g_size; r++)
        if (!all[r * SIG_LEN + SIG_OK]) {
            if (len + 40 < sizeof msg)
                len += (size_t)snprintf(msg + len, sizeof msg - len, "%srank %d", len ? ", " : "", r);
            kind = GAD_ERR_COMM;
            nfail++;
        }
    /* Some ranks failed, the others get a comm error: the world is broken
     * on every rank, the failed ones included (gad.h: after a comm error
     * every later collective fails). When all failed, no rank got one. */
    if (nfail > 0 && nfail < g_size) g_broken = 1;
    int64_t b0 = all[SIG_BUCKET];
    int buckets_differ = 0;
    for (int r = 1; r < g_size; r++) buckets_differ |= all[r * SIG_LEN + SIG_BUCKET] != b0;
    if (kind == GAD_ERR_COMM) {
        if (!sig[SIG_OK]) { /* this rank's own error is the one to keep */
            free(all);
            return local_kind();
        }
        gad_error_set(kind, op, "%s failed before the collective (its own error says why)",
                      msg);
    } else if (buckets_differ) {
        /* the wire layout differs: each rank would cut the data elsewhere */
        for (int r = 0; r < g_size && len + 48 < sizeof msg; r++)
            len += (size_t)snprintf(msg + len, sizeof msg - len, "%srank %d: %lld", len ? ", " : "",
                                    r, (long long)all[r * SIG_LEN + SIG_BUCKET]);
        gad_error_set(kind, op,
                      "the ranks disagree on the bucket size in bytes (GAD_DIST_BUCKET_BYTES): "
                      "%s; set the same on every rank", msg);
    } else {
        len = 0;
        int paths_differ = 0;
        for (int r = 1; r < g_size; r++) paths_differ |= all[r * SIG_LEN + SIG_PATH] != all[SIG_PATH];
        for (int r = 0; r < g_size && len + 64 < sizeof msg; r++) {
            const int64_t *q = all + r * SIG_LEN;
            int differs = r == 0 || memcmp(q, all, sizeof(int64_t) * SIG_LEN) != 0;
            if (!differs) continue;
            int64_t o = q[SIG_OP];
            len += (size_t)snprintf(msg + len, sizeof msg - len,
                                    "%srank %d: %s #%lld, %lld tensor(s), %lld elements%s",
                                    len ? "; " : "", r, o > 0 && o < 6 ? op_names[o] : "?",
                                    (long long)q[SIG_SEQ], (long long)q[SIG_N],
                                    (long long)q[SIG_NUMEL],
                                    !paths_differ ? "" : q[SIG_PATH] ? " via nccl" : " via the host");
        }
        int only_hash = 1;
        for (int r = 1; r < g_size; r++)
            for (int i = 0; i < SIG_LEN; i++)
                if (i != SIG_HASH && all[r * SIG_LEN + i] != all[i]) only_hash = 0;
        int only_path = 1;
        for (int r = 1; r < g_size; r++)
            for (int i = 0; i < SIG_LEN; i++)
                if (i != SIG_PATH && all[r * SIG_LEN + i] != all[i]) only_path = 0;
        gad_error_set(kind, op, "the ranks disagree: %s%s", msg,
                      only_path   ? " (all on one CUDA device on some ranks only)"
                      : only_hash ? " (the same counts: different dtypes or shapes)"
                                  : "");
    }
    free(all);
    return kind;
}

/* A collective's start: its signature, checked across ranks. ok = 0 when
 * this rank already failed (its error is recorded): the others then fail
 * too, at once, instead of waiting for it. */
static gad_status begin(int opcode, int ok, int64_t n, int64_t numel, uint64_t hash,
                        int64_t arg, int path) {
    const char *op = op_names[opcode];
    g_seq++;
    g_stats.calls++;
    if (g_broken) {
        if (!ok) return local_kind();
        gad_error_set(GAD_ERR_COMM, op,
                      "an earlier collective failed on this rank: the world is broken");
        return GAD_ERR_COMM;
    }
    if (g_size == 1) return ok ? GAD_OK : local_kind();
    int64_t sig[SIG_LEN] = {opcode, g_seq, n, numel, (int64_t)hash, arg, ok, path,
                            (int64_t)g_bucket_bytes};
    gad_status s = sig_check(op, sig);
    /* every rank failed the same way: each keeps its own error */
    return s == GAD_OK && !ok ? local_kind() : s;
}

/* "[2,3]" (cut with "..." when long). */
static const char *shape_text(char *buf, size_t cap, gad_tensor *t) {
    size_t len = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < gad_rank(t) && len + 24 < cap; d++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%lld", d ? "," : "",
                                (long long)gad_shape(t)[d]);
    snprintf(buf + len, cap - len, len + 24 < cap || gad_rank(t) == 0 ? "]" : "...]");
    return buf;
}

/* ---------------------------------------------------------------- buckets */

typedef struct item {
    void *p;       /* host memory, or the memory of device dev */
    int64_t n;     /* elements (bytes for a broadcast) */
    int dev;       /* where p lives: GAD_CPU, or a device (copied through
                    * the host by the back end's to_host / from_host) */
    gad_tensor *t; /* the tensor whose packed elements p holds */
} item;

/* Divide n elements by the world's size (the mean after a sum). */
static void divide(void *p, int64_t n, gad_dtype_t dt) {
    if (dt == GAD_F32) {
        float *q = p, s = (float)g_size;
        for (int64_t i = 0; i < n; i++) q[i] /= s;
    } else {
        double *q = p, s = (double)g_size;
        for (int64_t i = 0; i < n; i++) q[i] /= s;
    }
}

/* One transport call on n elements at p: a reduction (dt a float dtype)
 * or, with dt GAD_I64 and bcast set, a broadcast of n bytes. */
static gad_status move(const char *op, void *p, int64_t n, gad_dtype_t dt, int bcast,
                       dist_op rop, int mean, int root) {
    gad_status s;
    if (g_fail_in > 0 && --g_fail_in == 0) {
        gad_error_set(GAD_ERR_COMM, op, "a failure injected by a test (gad__dist_fail_move)");
        return tr_done(GAD_ERR_COMM);
    }
    if (bcast) {
        s = g_tr->broadcast(p, (size_t)n, root, op, g_timeout);
    } else {
        s = g_tr->allreduce(p, n, dt, rop, op, g_timeout);
        if (s == GAD_OK && mean) divide(p, n, dt);
    }
    return tr_done(s);
}

/* bytes of it's memory from byte `at` to the host at h (in = 1), or back
 * from h (in = 0): a memcpy on the host, one copy of the device's back end
 * (gad_devmem's to_host / from_host) otherwise. 0, or -1 with a device
 * error: the data are half moved and the world is broken (the other ranks
 * fail with a comm error naming this one). */
static int item_copy(const char *op, const item *it, size_t at, void *h, size_t bytes, int in) {
    if (bytes == 0) return 0;
    char *p = (char *)it->p + at;
    if (it->dev == GAD_DEV_HOST) {
        if (in) memcpy(h, p, bytes);
        else memcpy(p, h, bytes);
        return 0;
    }
    const gad_devmem *m = gad__devmem[it->dev];
    if ((in ? m->to_host(h, p, bytes) : m->from_host(p, h, bytes)) == 0) return 0;
    gad_error_set(GAD_ERR_DEVICE, op, "cannot copy %zu bytes %s %s %s the host bucket", bytes,
                  in ? "from" : "to", gad__device_name(it->dev), in ? "to" : "from");
    g_broken = 1;
    return -1;
}

/* Move items[0..k) through the host scratch g_bucket, so that a failure
 * leaves every tensor as it was: all items are copied into the scratch
 * back to back, the scratch moves in bucket-sized calls, and only when all
 * of them succeeded are the results copied back. The calls are cut as
 * buckets: items in order until the next would not fit; an item as large
 * as a bucket on its own, in pieces of a bucket. Where the cuts fall
 * depends on the items' sizes and the bucket size alone (the signature
 * compares the bucket size), never on the items' devices, so that the
 * ranks' calls match whatever device each rank's tensors live on. */
static gad_status move_packed(const char *op, item *items, int k, gad_dtype_t dt, int bcast,
                              dist_op rop, int mean, int root) {
    size_t esz = bcast ? 1 : gad_dtype_size(dt);
    int64_t cap = (int64_t)(g_bucket_bytes / esz);
    int64_t total = 0;
    for (int i = 0; i < k; i++) total += items[i].n;
    size_t need = (size_t)total * esz;
    if (need == 0) return GAD_OK;
    if (need > g_scratch_cap) {
        void *p = gad_mem_alloc(need);
        if (!p) {
            gad_error_set(GAD_ERR_MEMORY, op, "cannot allocate %zu bytes of host scratch", need);
            g_broken = 1; /* the others go on with the collective */
            return GAD_ERR_MEMORY;
        }
        gad_mem_free(g_bucket);
        g_bucket = p, g_scratch_cap = need;
    }
    char *sc = g_bucket;
    if (!bcast || g_rank == root) { /* a broadcast overwrites the others' data */
        int64_t at = 0;
        for (int i = 0; i < k; i++) {
            if (item_copy(op, &items[i], 0, sc + (size_t)at * esz, (size_t)items[i].n * esz, 1))
                return GAD_ERR_DEVICE;
            at += items[i].n;
        }
    }
    gad_status s = GAD_OK;
    int64_t start = 0, fill = 0; /* the bucket being filled: [start, start + fill) */
    for (int i = 0; i <= k && s == GAD_OK; i++) {
        int last = i == k;
        int big = !last && items[i].n >= cap;
        if (last || big || fill + items[i].n > cap) { /* flush the bucket */
            if (fill > 0) s = move(op, sc + (size_t)start * esz, fill, dt, bcast, rop, mean, root);
            start += fill, fill = 0;
            if (last) break;
        }
        if (big) {
            for (int64_t at = 0; at < items[i].n && s == GAD_OK; at += cap) {
                int64_t cnt = items[i].n - at < cap ? items[i].n - at : cap;
                s = move(op, sc + (size_t)(start + at) * esz, cnt, dt, bcast, rop, mean, root);
            }
            start += items[i].n;
            continue;
        }
        fill += items[i].n;
    }
    if (s != GAD_OK) return s; /* the tensors are untouched */
    /* back: the devices' items first (a copy may fail; the host's cannot) */
    for (int pass = 0; pass < 2; pass++) {
        int64_t at = 0;
        for (int i = 0; i < k; i++) {
            int on_host = items[i].dev == GAD_DEV_HOST;
            if (on_host == (pass == 1) &&
                item_copy(op, &items[i], 0, sc + (size_t)at * esz, (size_t)items[i].n * esz, 0))
                return GAD_ERR_DEVICE;
            at += items[i].n;
        }
    }
    return GAD_OK;
}

/* --------------------------------------------------------- the collectives */

/* Writable pointers to ts[0..n) for a collective: items (NULL entries of ts
 * are skipped), their dtypes' totals and the shapes' hash. A tensor on a
 * device is made private and packed there (gad_data_mut's copy-on-write,
 * on its device) and its device's queued work is waited for, so that a
 * fault it met is this rank's error before the collective, not in the
 * middle of it. *dev: the device when every tensor with elements lives on
 * one device other than the CPU, else -1. Returns 1, or 0 after recording
 * an error (float_only: f32 and f64 only). */
static int prepare(const char *op, gad_tensor *const *ts, int n, int float_only, item *items,
                   gad_dtype_t *dts, int64_t *numel, uint64_t *hash, int *dev) {
    *numel = 0;
    *hash = 0xcbf29ce484222325ull;
    *dev = -1;
    int host = 0, mixed = 0;
    for (int i = 0; i < n; i++) {
        gad_tensor *t = ts[i];
        items[i] = (item){NULL, 0, GAD_DEV_HOST, t};
        dts[i] = GAD_DTYPE_INVALID;
        if (t && gad__bad_tensor(t)) { /* released: its fields mean nothing */
            gad__bad_arg(op, t);
            return 0;
        }
        *hash = hash_tensor(*hash, t);
        if (!t) continue;
        gad_dtype_t dt = gad_dtype(t);
        if (float_only && dt != GAD_F32 && dt != GAD_F64) {
            gad_error_set(GAD_ERR_DOMAIN, op, "tensors[%d] is %s: a reduction takes f32 or f64", i,
                          gad_dtype_name(dt));
            return 0;
        }
        int d = t->dev;
        void *p = NULL;
        if (gad_numel(t) > 0) {
            if (d == GAD_DEV_HOST) {
                p = gad_data_mut(t); /* NULL: it said why */
            } else if (!gad__make_writable(op, t)) {
                p = gad__ptr(t);
            }
            if (!p) return 0;
            if (d == GAD_DEV_HOST) host = 1;
            else if (*dev < 0) *dev = d;
            else if (*dev != d) mixed = 1;
        }
        items[i] = (item){p, gad_numel(t), d, t};
        dts[i] = dt;
        *numel += gad_numel(t);
    }
    /* the queued work of every device involved: done, or its fault now */
    for (int i = 0; i < n; i++) {
        if (!items[i].p || items[i].dev == GAD_DEV_HOST) continue;
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = items[j].p && items[j].dev == items[i].dev;
        if (!seen && gad_device_sync(items[i].dev) != GAD_OK) return 0;
    }
    if (host || mixed) *dev = -1;
    return 1;
}

/* The transport of a call whose tensors prepare() found on device dev
 * (-1: some on the host, or on several devices): the device transport
 * when it takes that device's memory, else the host path (0). */
static int use_device_path(int dev) {
    return dev >= 0 && g_dtr && g_dtr->takes(dev);
}

/* The mean after a device transport's sum: t /= size on t's device, by
 * gad's own division (the host path's q[i] /= size, the same bits), the
 * result packed back into t's storage. */
static gad_status divide_on_device(const char *op, gad_tensor *t) {
    gad_scope_begin();
    gad_device saved = gad_set_default_device(t->dev);
    gad_tensor *s = t->dtype == GAD_F32 ? gad_scalar_f32((float)g_size)
                                        : gad_scalar_f64((double)g_size);
    gad_set_default_device(saved);
    gad_tensor *q = s ? gad_div(gad_detach(t), s) : NULL;
    if (q) gad__pack(q, gad__ptr(t));
    gad_scope_end();
    if (q) return GAD_OK;
    gad_error_set(GAD_ERR_MEMORY, op, "cannot divide the sum by %d on %s", g_size,
                  gad__device_name(t->dev));
    g_broken = 1;
    return local_kind();
}

/* Reduce (or broadcast) the prepared items, one dtype after the other:
 * through the device transport on device dev (dev >= 0), else packed into
 * the host bucket. */
static gad_status run(const char *op, item *items, const gad_dtype_t *dts, int n, int bcast,
                      dist_op rop, int mean, int root, int dev) {
    if (g_size == 1) return GAD_OK; /* nothing moves, a mean over one is the value */
    double t0 = gad__dist_now();
    gad_status s = GAD_OK;
    item *sel = malloc((size_t)(n > 0 ? n : 1) * sizeof *sel);
    void **bufs = malloc((size_t)(n > 0 ? n : 1) * sizeof *bufs);
    int64_t *lens = malloc((size_t)(n > 0 ? n : 1) * sizeof *lens);
    if (!sel || !bufs || !lens) {
        free(sel), free(bufs), free(lens);
        gad_error_set(GAD_ERR_MEMORY, op, "out of memory for %d tensors", n);
        g_broken = 1;
        return GAD_ERR_MEMORY;
    }
    if (bcast) { /* bytes: every dtype in one stream */
        int k = 0;
        for (int i = 0; i < n; i++)
            if (dts[i] != GAD_DTYPE_INVALID) {
                sel[k] = items[i];
                sel[k].n = items[i].n * (int64_t)gad_dtype_size(dts[i]);
                bufs[k] = sel[k].p, lens[k] = sel[k].n;
                g_stats.bytes += sel[k++].n;
            }
        if (dev >= 0)
            s = tr_done(g_dtr->broadcast(dev, bufs, lens, k, root, op, g_timeout));
        else
            s = move_packed(op, sel, k, GAD_I64, 1, rop, 0, root);
    } else {
        const gad_dtype_t order[2] = {GAD_F32, GAD_F64};
        for (int d = 0; d < 2 && s == GAD_OK; d++) {
            int k = 0;
            for (int i = 0; i < n; i++)
                if (dts[i] == order[d]) bufs[k] = items[i].p, lens[k] = items[i].n, sel[k++] = items[i];
            for (int i = 0; i < k; i++) g_stats.bytes += sel[i].n * (int64_t)gad_dtype_size(order[d]);
            if (k == 0) continue;
            if (dev < 0) {
                s = move_packed(op, sel, k, order[d], 0, rop, mean, root);
                continue;
            }
            s = tr_done(g_dtr->allreduce(dev, bufs, lens, k, order[d], rop, op, g_timeout));
            for (int i = 0; i < k && s == GAD_OK && mean; i++)
                if (sel[i].n > 0) s = divide_on_device(op, sel[i].t);
        }
    }
    free(sel), free(bufs), free(lens);
    g_stats.seconds += gad__dist_now() - t0;
    return s;
}

static int reduce_op(gad_dist_op op, dist_op *rop, int *mean) {
    switch (op) {
    case GAD_DIST_SUM: *rop = DIST_SUM, *mean = 0; return 1;
    case GAD_DIST_MEAN: *rop = DIST_SUM, *mean = 1; return 1;
    case GAD_DIST_MIN: *rop = DIST_MIN, *mean = 0; return 1;
    case GAD_DIST_MAX: *rop = DIST_MAX, *mean = 0; return 1;
    }
    return 0;
}

/* The tensor collectives: checks, prepare, signature, run. */
static gad_status tensor_collective(int opcode, gad_tensor *const *ts, int n, int bcast,
                                    gad_dist_op rop_in, int root) {
    const char *op = op_names[opcode];
    int ok = 1;
    dist_op rop = DIST_SUM;
    int mean = 0;
    item *items = NULL;
    gad_dtype_t *dts = NULL;
    int64_t numel = 0;
    uint64_t hash = 0;
    if (n < 0 || (n > 0 && !ts)) {
        gad_error_set(GAD_ERR_DOMAIN, op, n < 0 ? "n = %d is negative" : "tensors is NULL (n = %d)", n);
        ok = 0;
    } else if (!bcast && !reduce_op(rop_in, &rop, &mean)) {
        gad_error_set(GAD_ERR_DOMAIN, op, "op = %d is not a gad_dist_op", (int)rop_in);
        ok = 0;
    } else if (bcast && (root < 0 || root >= g_size)) {
        gad_error_set(GAD_ERR_DOMAIN, op, "root = %d is not a rank of a world of %d", root, g_size);
        ok = 0;
    }
    if (ok) {
        for (int i = 0; i < n && ok; i++)
            if (!ts[i]) {
                gad_error_set(GAD_ERR_DOMAIN, op, "tensors[%d] is NULL", i);
                ok = 0;
            }
    }
    if (ok) {
        items = malloc((size_t)(n > 0 ? n : 1) * sizeof *items);
        dts = malloc((size_t)(n > 0 ? n : 1) * sizeof *dts);
        if (!items || !dts) {
            gad_error_set(GAD_ERR_MEMORY, op, "out of memory for %d tensors", n);
            ok = 0;
        }
    }
    int dev = -1;
    gad_scope_begin(); /* gad_data_mut's copies, if any, stay with the tensors */
    if (ok) ok = prepare(op, ts, n, !bcast, items, dts, &numel, &hash, &dev);
    gad_scope_end();
    int path = ok && use_device_path(dev);
    gad_status s = begin(opcode, ok, ok ? n : -1, numel, hash, bcast ? root : (int64_t)rop_in,
                         path);
    if (s == GAD_OK) s = run(op, items, dts, n, bcast, rop, mean, root, path ? dev : -1);
    free(items);
    free(dts);
    return s;
}

gad_status gad_dist_allreduce(gad_tensor *const *tensors, int n, gad_dist_op op) {
    return tensor_collective(1, tensors, n, 0, op, 0);
}

gad_status gad_dist_broadcast(gad_tensor *const *tensors, int n, int root) {
    return tensor_collective(3, tensors, n, 1, GAD_DIST_SUM, root);
}

gad_status gad_dist_allreduce_f64(double *values, int n, gad_dist_op op) {
    const char *o = op_names[2];
    dist_op rop = DIST_SUM;
    int mean = 0, ok = 1;
    if (n < 0 || (n > 0 && !values)) {
        gad_error_set(GAD_ERR_DOMAIN, o, n < 0 ? "n = %d is negative" : "values is NULL (n = %d)", n);
        ok = 0;
    } else if (!reduce_op(op, &rop, &mean)) {
        gad_error_set(GAD_ERR_DOMAIN, o, "op = %d is not a gad_dist_op", (int)op);
        ok = 0;
    }
    gad_status s = begin(2, ok, ok ? n : -1, ok ? n : -1, 0, (int64_t)op, 0);
    if (s != GAD_OK || g_size == 1 || n == 0) return s;
    double t0 = gad__dist_now();
    g_stats.bytes += (int64_t)n * 8;
    s = move(o, values, n, GAD_F64, 0, rop, mean, 0);
    g_stats.seconds += gad__dist_now() - t0;
    return s;
}

gad_status gad_dist_barrier(void) {
    /* the signature's all-reduce is the barrier: no rank has its result
     * before every rank has given its part */
    double t0 = gad__dist_now();
    gad_status s = begin(5, 1, 0, 0, 0, 0, 0);
    g_stats.seconds += gad__dist_now() - t0;
    return s;
}

gad_status gad_dist_average_grads(gad_tensor *const *params, gad_tensor *const *grads, int n) {
    const char *op = op_names[4];
    int ok = 1;
    gad_tensor **gs = NULL;
    if (n < 0 || (n > 0 && !params)) {
        gad_error_set(GAD_ERR_DOMAIN, op, n < 0 ? "n = %d is negative" : "params is NULL (n = %d)", n);
        ok = 0;
    } else {
        gs = malloc((size_t)(n > 0 ? n : 1) * sizeof *gs);
        if (!gs) {
            gad_error_set(GAD_ERR_MEMORY, op, "out of memory for %d gradients", n);
            ok = 0;
        }
    }
    gad_scope_begin(); /* the slots' references */
    for (int i = 0; ok && i < n; i++) {
        gad_tensor *p = params[i];
        gs[i] = NULL;
        if (!p) {
            gad_error_set(GAD_ERR_DOMAIN, op, "params[%d] is NULL", i);
            ok = 0;
            break;
        }
        gad_tensor *g = NULL;
        if (grads) {
            g = grads[i];
            if (!g) {
                gad_error_set(GAD_ERR_DOMAIN, op, "grads[%d] is NULL", i);
                ok = 0;
                break;
            }
        } else if (gad_leaf_has_grad(p)) {
            g = gad_leaf_grad(p);
            if (!g) {
                ok = 0;
                break;
            }
        }
        if (g && gad_dtype(g) != gad_dtype(p)) {
            gad_error_set(GAD_ERR_DTYPE, op, "the gradient of params[%d] is %s, the parameter %s",
                          i, gad_dtype_name(gad_dtype(g)), gad_dtype_name(gad_dtype(p)));
            ok = 0;
            break;
        }
        if (g && (gad_rank(g) != gad_rank(p) ||
                  memcmp(gad_shape(g), gad_shape(p), sizeof(int64_t) * (size_t)gad_rank(p)))) {
            char gs_[96], ps_[96];
            gad_error_set(GAD_ERR_SHAPE, op, "the gradient of params[%d] is %s, the parameter %s",
                          i, shape_text(gs_, sizeof gs_, g), shape_text(ps_, sizeof ps_, p));
            ok = 0;
            break;
        }
        gs[i] = g;
    }
    gad_status s = ok ? GAD_OK : GAD_ERR_DOMAIN;
    if (ok) {
        /* as tensor_collective, but NULL entries (empty slots) are skipped
         * and are part of the signature */
        item *items = malloc((size_t)(n > 0 ? n : 1) * sizeof *items);
        gad_dtype_t *dts = malloc((size_t)(n > 0 ? n : 1) * sizeof *dts);
        int64_t numel = 0;
        uint64_t hash = 0;
        if (!items || !dts) {
            gad_error_set(GAD_ERR_MEMORY, op, "out of memory for %d gradients", n);
            ok = 0;
        }
        int dev = -1;
        if (ok) ok = prepare(op, gs, n, 1, items, dts, &numel, &hash, &dev);
        int path = ok && use_device_path(dev);
        s = begin(4, ok, ok ? n : -1, numel, hash, 0, path);
        if (s == GAD_OK) s = run(op, items, dts, n, 0, DIST_SUM, 1, 0, path ? dev : -1);
        free(items);
        free(dts);
    } else {
        s = begin(4, 0, -1, 0, 0, 0, 0);
    }
    gad_scope_end();
    free(gs);
    return s;
}
