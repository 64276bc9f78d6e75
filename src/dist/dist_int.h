/* dist_int.h: the transport tables of src/dist. dist.c holds the public API
 * (argument checks, signatures, buckets, statistics) and calls one of the
 * host tables for the data movement: MPI (mpi.c, when built with GAD_MPI)
 * or the world of one (dist.c). Tensors on a device travel through host
 * copies: dist.c packs them into its host bucket with their back end's
 * to_host / from_host (gad_devmem), one copy per tensor or bucket piece,
 * and the host table moves the bucket. A device table (NCCL, nccl.c, when
 * built with GAD_NCCL) moves device memory directly instead: dist.c
 * chooses it per call when every tensor with elements lives on one CUDA
 * device it takes; the signature carries the choice, so that all ranks
 * take the same path or all fail. The host table carries its set-up (the
 * ncclUniqueId) at gad_dist_init. */
#ifndef GAD_DIST_INT_H
#define GAD_DIST_INT_H

#include <stddef.h>
#include <stdint.h>

#include "gad.h"

/* Reductions a transport implements (MEAN is a SUM, then a division in
 * dist.c). */
typedef enum dist_op { DIST_SUM = 0, DIST_MIN = 1, DIST_MAX = 2 } dist_op;

/* Every function returns GAD_OK, or records an error (a comm error naming
 * `op`, the name of the public call) and returns its kind. `timeout` is the
 * deadline in seconds from the call. Buffers are host memory. */
typedef struct dist_transport {
    const char *name;
    /* Join the world; set *rank and *size. */
    gad_status (*init)(int *argc, char ***argv, int *rank, int *size);
    /* In place, n elements of dtype (f32, f64, i64), the same n on every rank. */
    gad_status (*allreduce)(void *buf, int64_t n, gad_dtype_t dtype, dist_op rop,
                            const char *op, double timeout);
    /* root's bytes into every rank's buf. */
    gad_status (*broadcast)(void *buf, size_t bytes, int root, const char *op, double timeout);
    /* Every rank's `bytes` bytes of mine, in rank order, into all. */
    gad_status (*allgather)(const void *mine, void *all, size_t bytes, const char *op,
                            double timeout);
    gad_status (*barrier)(const char *op, double timeout);
    /* Leave the world (healthy: 1 when no comm error happened before). */
    gad_status (*finalize)(int healthy, double timeout);
} dist_transport;

/* A transport for device memory. Buffers are device pointers of gad
 * device dev (packed, the caller made them private); the functions are
 * collectives (every rank calls them alike), return as dist_transport's,
 * and may leave their results queued on the device's stream for the
 * calling thread (what gad's kernels after them wait for). */
typedef struct dist_dev_transport {
    const char *name;
    /* After the host transport's init, on every rank: set up beside it
     * (the host table carries what the ranks must share); *usable = 1 on
     * every rank or on none (none when a rank passes want = 0 or cannot
     * use it). A status other than GAD_OK: a comm error of the host table
     * (recorded). */
    gad_status (*setup)(const dist_transport *host, int want, int rank, int size,
                        double timeout, int *usable);
    /* 1 if it moves the memory of gad device dev. */
    int (*takes)(int dev);
    /* In place: bufs[i] holds n[i] elements of dtype, for i < k. */
    gad_status (*allreduce)(int dev, void *const *bufs, const int64_t *n, int k,
                            gad_dtype_t dtype, dist_op rop, const char *op, double timeout);
    /* root's n[i] bytes at bufs[i] into every rank's. */
    gad_status (*broadcast)(int dev, void *const *bufs, const int64_t *n, int k, int root,
                            const char *op, double timeout);
    /* Leave (healthy: no comm error happened); waits for the other ranks
     * at most timeout seconds, then gives up without them. */
    void (*finalize)(int healthy, double timeout);
} dist_dev_transport;

#ifdef GAD_HAVE_NCCL
/* The NCCL transport (nccl.c), for CUDA devices. */
extern const dist_dev_transport gad__dist_nccl;
#endif

#ifdef GAD_HAVE_MPI
/* The MPI transport (mpi.c); launched: 1 when the environment shows an MPI
 * launcher (or GAD_DIST=mpi), or MPI is already initialized. */
extern const dist_transport gad__dist_mpi;
int gad__dist_mpi_launched(void);
#endif

/* For tests: the k-th host transport call of a collective's data from
 * now on (each bucket, each piece, each gad_dist_allreduce_f64) fails
 * with a comm error instead of moving, as a lost rank would make it fail
 * half-way through a call (k <= 0: off). Every rank must set the same k. */
void gad__dist_fail_move(int64_t k);

/* The monotonic clock in seconds. */
double gad__dist_now(void);

#endif
