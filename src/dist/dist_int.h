/* dist_int.h: the transport table of src/dist. dist.c holds the public API
 * (argument checks, signatures, buckets, statistics) and calls one of these
 * tables for the data movement: MPI (mpi.c, when built with GAD_MPI) or the
 * world of one (dist.c). A future NCCL transport for device tensors plugs
 * in as another table, chosen per call by the tensors' device, with MPI
 * carrying its unique id at init. */
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

#ifdef GAD_HAVE_MPI
/* The MPI transport (mpi.c); launched: 1 when the environment shows an MPI
 * launcher (or GAD_DIST=mpi), or MPI is already initialized. */
extern const dist_transport gad__dist_mpi;
int gad__dist_mpi_launched(void);
#endif

/* The monotonic clock in seconds. */
double gad__dist_now(void);

#endif
