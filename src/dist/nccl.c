/* nccl.c: the NCCL transport of src/dist, for CUDA tensors (built with
 * GAD_NCCL, which needs GAD_CUDA and GAD_MPI).
 *
 * NCCL is opened at run time (dlopen), as the CUDA back end opens cuBLAS:
 * a gad built with it runs where libnccl is missing, and then moves CUDA
 * tensors through host copies. At gad_dist_init every rank says whether
 * it can use NCCL (the library loads, a GPU is there, GAD_DIST_NCCL is not
 * 0) and the host transport (MPI) takes the minimum; rank 0 then makes the
 * ncclUniqueId and MPI broadcasts it. The communicator itself is made at
 * the first collective that takes this path, on the CUDA device of its
 * tensors (NCCL binds a communicator to one device): later calls whose
 * tensors are on another device go through the host (dist.c asks takes()).
 *
 * No hang: the communicator is nonblocking (ncclConfig_t.blocking = 0), so
 * that its creation and every group of collectives return at once; the
 * call then polls ncclCommGetAsyncError and the CUDA stream against the
 * deadline, and on expiry calls ncclCommAbort (which ends the kernels that
 * wait for a peer) and fails with a comm error naming the op. After that
 * the world is broken (dist.c), as after an MPI timeout.
 *
 * The collectives are queued on gad's stream for the calling thread and
 * device (gad__device_stream, backend/driver.h), after the kernels that made the data and
 * before those that use it; the call returns when they are done. */
#include <dlfcn.h>
/* nccl.h declares some functions without prototypes (ncclGroupStart()) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "backend/driver.h" /* the CUDA device's stream */
#include "dist_int.h"

/* ------------------------------------------------------------ the library */

/* The functions gad calls, by their names in nccl.h. */
static struct {
    ncclResult_t (*GetUniqueId)(ncclUniqueId *);
    ncclResult_t (*CommInitRankConfig)(ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *);
    ncclResult_t (*CommGetAsyncError)(ncclComm_t, ncclResult_t *);
    ncclResult_t (*CommAbort)(ncclComm_t);
    ncclResult_t (*CommFinalize)(ncclComm_t);
    ncclResult_t (*CommDestroy)(ncclComm_t);
    ncclResult_t (*AllReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                              ncclComm_t, cudaStream_t);
    ncclResult_t (*Broadcast)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
                              cudaStream_t);
    ncclResult_t (*GroupStart)(void);
    ncclResult_t (*GroupEnd)(void);
    const char *(*GetErrorString)(ncclResult_t);
    const char *(*GetLastError)(ncclComm_t);
} nc;

/* dlsym's void * to a function pointer (POSIX guarantees the conversion). */
#define NC_LOAD(h, f) (memcpy(&nc.f, &(void *){dlsym((h), "nccl" #f)}, sizeof nc.f), nc.f != NULL)

static int nc_open(void) {
    static int tried, ok;
    if (tried) return ok;
    tried = 1;
    void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libnccl.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) return 0;
    ok = NC_LOAD(h, GetUniqueId) && NC_LOAD(h, CommInitRankConfig) &&
         NC_LOAD(h, CommGetAsyncError) && NC_LOAD(h, CommAbort) && NC_LOAD(h, CommFinalize) &&
         NC_LOAD(h, CommDestroy) && NC_LOAD(h, AllReduce) && NC_LOAD(h, Broadcast) &&
         NC_LOAD(h, GroupStart) && NC_LOAD(h, GroupEnd) && NC_LOAD(h, GetErrorString) &&
         NC_LOAD(h, GetLastError);
    return ok;
}

/* ------------------------------------------------------------- the state */

static ncclUniqueId g_id;
static ncclComm_t g_comm;   /* NULL until the first collective on a device */
static int g_dev = -1;      /* gad's device of g_comm */
static int g_rank, g_size;

static gad_status nc_fail(const char *op, const char *what, ncclResult_t r) {
    const char *last = g_comm && nc.GetLastError ? nc.GetLastError(g_comm) : NULL;
    gad_error_set(GAD_ERR_COMM, op, "%s failed on rank %d of %d: %s%s%s", what, g_rank, g_size,
                  nc.GetErrorString ? nc.GetErrorString(r) : "NCCL error", last && *last ? ": " : "",
                  last ? last : "");
    return GAD_ERR_COMM;
}

/* Abort the communicator (its kernels end), e.g. after a timeout. */
static void nc_abort(void) {
    if (g_comm) nc.CommAbort(g_comm);
    g_comm = NULL;
}

static void pause_a_little(double since) {
    if (gad__dist_now() - since < 0.002) {
        sched_yield();
    } else {
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
}

/* Wait until the communicator's pending operation (its creation, a group)
 * has been issued, and, with stream_too, until gad's stream for g_dev has
 * run it, against the deadline. */
static gad_status nc_wait(const char *op, const char *what, double t0, double timeout,
                          int stream_too) {
    double end = t0 + timeout;
    for (;;) {
        ncclResult_t st = ncclSuccess;
        ncclResult_t r = nc.CommGetAsyncError(g_comm, &st);
        if (r != ncclSuccess) st = r;
        if (st != ncclSuccess && st != ncclInProgress) {
            gad_status s = nc_fail(op, what, st);
            nc_abort();
            return s;
        }
        if (st == ncclSuccess) {
            if (!stream_too) return GAD_OK;
            char msg[256];
            int d = gad__device_stream_done(g_dev, msg, sizeof msg);
            if (d > 0) return GAD_OK;
            if (d < 0) {
                gad_error_set(GAD_ERR_COMM, op, "%s failed on rank %d of %d: %s", what, g_rank,
                              g_size, msg[0] ? msg : "the CUDA stream failed");
                nc_abort();
                return GAD_ERR_COMM;
            }
        }
        if (gad__dist_now() >= end) break;
        pause_a_little(t0);
    }
    nc_abort();
    gad_error_set(GAD_ERR_COMM, op,
                  "%s timed out after %g s on rank %d of %d (a rank did not join, or is stuck); "
                  "the NCCL communicator is aborted",
                  what, timeout, g_rank, g_size);
    return GAD_ERR_COMM;
}

/* ------------------------------------------------------------- the table */

static gad_status nc_setup(const dist_transport *host, int want, int rank, int size,
                           double timeout, int *usable) {
    const char *op = "dist_init";
    *usable = 0;
    g_rank = rank, g_size = size;
    int64_t can = want && gad_device_count(GAD_DEVICE_CUDA) > 0 && nc_open();
    gad_status s = host->allreduce(&can, 1, GAD_I64, DIST_MIN, op, timeout);
    if (s != GAD_OK || !can) return s;
    struct {
        int64_t ok;
        ncclUniqueId id;
    } msg;
    memset(&msg, 0, sizeof msg);
    if (rank == 0) msg.ok = nc.GetUniqueId(&msg.id) == ncclSuccess;
    s = host->broadcast(&msg, sizeof msg, 0, op, timeout);
    if (s != GAD_OK || !msg.ok) return s; /* rank 0 could not: the host path for all */
    g_id = msg.id;
    *usable = 1;
    return GAD_OK;
}

static int nc_takes(int dev) {
    return gad_device_type_of(dev) == GAD_DEVICE_CUDA && (g_dev < 0 || (g_dev == dev && g_comm));
}

/* The communicator on device dev, made at the first call. */
static gad_status nc_comm(int dev, const char *op, double timeout) {
    if (g_comm) return GAD_OK;
    if (g_dev >= 0) {
        gad_error_set(GAD_ERR_COMM, op, "the NCCL communicator was aborted: the world is broken");
        return GAD_ERR_COMM;
    }
    g_dev = dev;
    if (!gad__device_stream(dev)) { /* makes the device current for NCCL */
        gad_error_set(GAD_ERR_COMM, op, "no CUDA stream on %s for NCCL", gad_device_name(dev));
        return GAD_ERR_COMM;
    }
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    double t0 = gad__dist_now();
    ncclResult_t r = nc.CommInitRankConfig(&g_comm, g_size, g_id, g_rank, &cfg);
    if (r != ncclSuccess && r != ncclInProgress) {
        gad_status s = nc_fail(op, "ncclCommInitRankConfig", r);
        nc_abort();
        return s;
    }
    return nc_wait(op, "ncclCommInitRankConfig", t0, timeout, 0);
}

static ncclDataType_t nc_type(gad_dtype_t dt) {
    return dt == GAD_F32 ? ncclFloat32 : dt == GAD_F64 ? ncclFloat64 : ncclInt64;
}

/* One group of k collectives on dev, then the wait. bcast: ncclBroadcast
 * of bytes from root, else ncclAllReduce of elements of dtype. */
static gad_status nc_group(int dev, void *const *bufs, const int64_t *n, int k, int bcast,
                           gad_dtype_t dtype, dist_op rop, int root, const char *op,
                           double timeout) {
    double t0 = gad__dist_now();
    gad_status s = nc_comm(dev, op, timeout);
    if (s != GAD_OK) return s;
    cudaStream_t stream = (cudaStream_t)gad__device_stream(dev);
    if (!stream) {
        gad_error_set(GAD_ERR_COMM, op, "no CUDA stream on %s for NCCL", gad_device_name(dev));
        return GAD_ERR_COMM;
    }
    ncclRedOp_t redop = rop == DIST_SUM ? ncclSum : rop == DIST_MIN ? ncclMin : ncclMax;
    const char *what = bcast ? "ncclBroadcast" : "ncclAllReduce";
    ncclResult_t r = nc.GroupStart();
    for (int i = 0; i < k && (r == ncclSuccess || r == ncclInProgress); i++) {
        if (n[i] == 0) continue;
        r = bcast ? nc.Broadcast(bufs[i], bufs[i], (size_t)n[i], ncclUint8, root, g_comm, stream)
                  : nc.AllReduce(bufs[i], bufs[i], (size_t)n[i], nc_type(dtype), redop, g_comm,
                                 stream);
    }
    ncclResult_t e = nc.GroupEnd();
    if (r == ncclSuccess || r == ncclInProgress) r = e;
    if (r != ncclSuccess && r != ncclInProgress) {
        s = nc_fail(op, what, r);
        nc_abort();
        return s;
    }
    return nc_wait(op, what, t0, timeout, 1);
}

static gad_status nc_allreduce(int dev, void *const *bufs, const int64_t *n, int k,
                               gad_dtype_t dtype, dist_op rop, const char *op, double timeout) {
    return nc_group(dev, bufs, n, k, 0, dtype, rop, 0, op, timeout);
}

static gad_status nc_broadcast(int dev, void *const *bufs, const int64_t *n, int k, int root,
                               const char *op, double timeout) {
    return nc_group(dev, bufs, n, k, 1, GAD_I64, DIST_SUM, root, op, timeout);
}

static void nc_finalize(int healthy, double timeout) {
    if (g_comm && healthy) {
        /* flush (every collective has completed: each call waited), then
         * free; abort instead if a rank does not take part in time */
        double t0 = gad__dist_now();
        ncclResult_t r = nc.CommFinalize(g_comm);
        int done = r == ncclSuccess || r == ncclInProgress;
        while (done) {
            ncclResult_t st = ncclSuccess;
            if (nc.CommGetAsyncError(g_comm, &st) != ncclSuccess || st != ncclInProgress) {
                done = st == ncclSuccess;
                break;
            }
            if (gad__dist_now() >= t0 + timeout) {
                done = 0;
                break;
            }
            pause_a_little(t0);
        }
        if (done) {
            nc.CommDestroy(g_comm);
            g_comm = NULL;
        }
    }
    nc_abort();
    g_dev = -1;
}

const dist_dev_transport gad__dist_nccl = {"nccl",       nc_setup,     nc_takes,
                                           nc_allreduce, nc_broadcast, nc_finalize};
