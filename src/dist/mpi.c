/* mpi.c: the MPI transport of src/dist (built when GAD_MPI finds an MPI).
 *
 * Every collective is the nonblocking MPI call (MPI_Iallreduce, MPI_Ibcast,
 * MPI_Iallgather, MPI_Ibarrier; MPI-3.0, sections 5.12) polled with
 * MPI_Test against a deadline, on a private duplicate of MPI_COMM_WORLD
 * whose error handler is MPI_ERRORS_RETURN, so that neither a lost rank
 * nor an MPI error can block or abort the process. On a timeout, the ranks
 * that are still there find each other on a second private communicator
 * (each sends its collective's sequence number to every other and listens
 * for a short grace period), so the error can name the ranks that did not
 * answer. */
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist_int.h"

static MPI_Comm g_comm = MPI_COMM_NULL; /* the collectives */
static MPI_Op g_nanmin = MPI_OP_NULL, g_nanmax = MPI_OP_NULL; /* floats' MIN, MAX */
static MPI_Comm g_hb = MPI_COMM_NULL;   /* who is still there, after a timeout */
static int g_rank, g_size, g_we_init;
static int64_t g_calls; /* collectives started: the number heartbeats carry */

int gad__dist_mpi_launched(void) {
    int inited = 0;
    MPI_Initialized(&inited);
    if (inited) return 1; /* finalized too: mpi_init says it cannot start again */
    const char *force = getenv("GAD_DIST");
    if (force && !strcmp(force, "mpi")) return 1;
    if (force && !strcmp(force, "none")) return 0;
    /* the variables OpenMPI, MPICH/Hydra, PMIx (srun --mpi=pmix) and
     * MVAPICH set in the ranks they start */
    static const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK",
                                 "MV2_COMM_WORLD_SIZE", "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return 1;
    return 0;
}

/* MPI's text for an error code. */
static gad_status mpi_fail(const char *op, const char *what, int code) {
    char text[MPI_MAX_ERROR_STRING + 1];
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) len = 0;
    text[len] = '\0';
    gad_error_set(GAD_ERR_COMM, op, "%s failed on rank %d of %d: %s", what, g_rank, g_size,
                  len ? text : "(no text)");
    return GAD_ERR_COMM;
}

/* MIN and MAX of floats that propagate NaN, as a local gad_amin / gad_amax
 * does (MPI's built-in ones compare with < and >, so a NaN is kept or
 * dropped depending on the order the ranks are combined in). Commutative;
 * the result is the same on every rank. */
#define NAN_OP(name, T, better)                                                   \
    static void name(void *in_, void *io_, int *len, MPI_Datatype *dt) {          \
        (void)dt;                                                                 \
        const T *in = in_;                                                        \
        T *io = io_;                                                              \
        for (int i = 0; i < *len; i++) {                                          \
            T a = in[i], b = io[i];                                               \
            if (isnan(b)) continue;           /* io is NaN: it stays */           \
            if (isnan(a) || a better b) io[i] = a; /* in is NaN, or it wins */    \
        }                                                                         \
    }
NAN_OP(nanmin_f32, float, <)
NAN_OP(nanmax_f32, float, >)
NAN_OP(nanmin_f64, double, <)
NAN_OP(nanmax_f64, double, >)

static void nanmin_fn(void *in, void *io, int *len, MPI_Datatype *dt) {
    if (*dt == MPI_FLOAT) nanmin_f32(in, io, len, dt);
    else nanmin_f64(in, io, len, dt);
}
static void nanmax_fn(void *in, void *io, int *len, MPI_Datatype *dt) {
    if (*dt == MPI_FLOAT) nanmax_f32(in, io, len, dt);
    else nanmax_f64(in, io, len, dt);
}

static gad_status mpi_init(int *argc, char ***argv, int *rank, int *size) {
    const char *op = "dist_init";
    int inited = 0, fin = 0, rc;
    /* any MPI call but a few after MPI_Finalize makes OpenMPI abort */
    MPI_Finalized(&fin);
    if (fin) {
        gad_error_set(GAD_ERR_UNSUPPORTED, op,
                      "MPI was finalized (by gad_dist_finalize or the program): MPI cannot be "
                      "initialized again in one process, so the world cannot be joined again");
        return GAD_ERR_UNSUPPORTED;
    }
    MPI_Initialized(&inited);
    if (!inited) {
        int provided = 0;
        rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS) return mpi_fail(op, "MPI_Init_thread", rc);
        g_we_init = 1;
    }
    /* errors of the duplicates return; MPI_COMM_WORLD's too (the dup
     * itself could fail) */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &g_comm)) != MPI_SUCCESS ||
        (rc = MPI_Comm_dup(MPI_COMM_WORLD, &g_hb)) != MPI_SUCCESS)
        return mpi_fail(op, "MPI_Comm_dup", rc);
    MPI_Comm_set_errhandler(g_comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(g_hb, MPI_ERRORS_RETURN);
    if ((rc = MPI_Op_create(nanmin_fn, 1, &g_nanmin)) != MPI_SUCCESS ||
        (rc = MPI_Op_create(nanmax_fn, 1, &g_nanmax)) != MPI_SUCCESS)
        return mpi_fail(op, "MPI_Op_create", rc);
    MPI_Comm_rank(g_comm, &g_rank);
    MPI_Comm_size(g_comm, &g_size);
    *rank = g_rank;
    *size = g_size;
    return GAD_OK;
}

/* After a timeout: tell every other rank that this one is here, listen for
 * theirs for `grace` seconds, and write the ranks not heard from into buf
 * ("1, 3"; "" when all answered). Requests still open are left to MPI:
 * the world is broken from now on. */
static void who_is_missing(double grace, char *buf, size_t cap) {
    buf[0] = '\0';
    int n = g_size;
    MPI_Request *rq = calloc((size_t)(2 * n), sizeof *rq);
    int64_t *in = calloc((size_t)n, sizeof *in);
    char *heard = calloc((size_t)n, 1);
    if (!rq || !in || !heard) {
        snprintf(buf, cap, "(unknown: out of memory)");
        free(rq), free(in), free(heard);
        return;
    }
    static int64_t out;
    out = g_calls;
    for (int r = 0; r < n; r++) {
        rq[r] = rq[n + r] = MPI_REQUEST_NULL;
        if (r == g_rank) continue;
        MPI_Irecv(&in[r], 1, MPI_INT64_T, r, 77, g_hb, &rq[r]);
        MPI_Isend(&out, 1, MPI_INT64_T, r, 77, g_hb, &rq[n + r]);
    }
    heard[g_rank] = 1;
    double end = gad__dist_now() + grace;
    int pending = n - 1;
    while (pending > 0 && gad__dist_now() < end) {
        for (int r = 0; r < n; r++) {
            if (heard[r] || rq[r] == MPI_REQUEST_NULL) continue;
            int done = 0;
            if (MPI_Test(&rq[r], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
                rq[r] = MPI_REQUEST_NULL;
                continue;
            }
            if (done) heard[r] = 1, pending--;
        }
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    size_t len = 0;
    for (int r = 0; r < n && len + 16 < cap; r++)
        if (!heard[r]) len += (size_t)snprintf(buf + len, cap - len, "%s%d", len ? ", " : "", r);
    for (int r = 0; r < 2 * n; r++)
        if (rq[r] != MPI_REQUEST_NULL) MPI_Request_free(&rq[r]);
    /* in[] may still be written by a late message: leave it allocated */
    free(heard);
}

/* Poll req until it completes or the deadline passes. */
static gad_status wait_req(MPI_Request *req, const char *op, const char *what, double timeout) {
    double t0 = gad__dist_now(), end = t0 + timeout;
    for (long spins = 0;; spins++) {
        int done = 0, rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return mpi_fail(op, what, rc);
        if (done) return GAD_OK;
        double now = gad__dist_now();
        if (now >= end) break;
        /* yield while the others are close behind (the usual case: a
         * bucket's all-reduce), then sleep a little between polls so that
         * a waiting rank leaves the cores to the ranks still computing */
        if (now - t0 < 0.002) {
            sched_yield();
        } else {
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        }
    }
    double grace = timeout / 2 < 2 ? timeout / 2 : 2;
    char missing[160];
    who_is_missing(grace, missing, sizeof missing);
    gad_error_set(GAD_ERR_COMM, op,
                  "%s (collective #%lld) timed out after %g s on rank %d of %d; %s%s%s", what,
                  (long long)g_calls, timeout, g_rank, g_size,
                  missing[0] ? "no answer from rank(s) " : "every rank answered (a different collective?)",
                  missing, missing[0] ? " (dead, stuck, or in another collective)" : "");
    return GAD_ERR_COMM;
}

static MPI_Datatype mpi_type(gad_dtype_t dt) {
    return dt == GAD_F32 ? MPI_FLOAT : dt == GAD_F64 ? MPI_DOUBLE : MPI_INT64_T;
}

/* Counts are ints in MPI: pieces of at most 2^30 elements. */
#define PIECE ((int64_t)1 << 30)

static gad_status mpi_allreduce(void *buf, int64_t n, gad_dtype_t dtype, dist_op rop,
                                const char *op, double timeout) {
    int fl = dtype == GAD_F32 || dtype == GAD_F64;
    MPI_Op mop = rop == DIST_SUM ? MPI_SUM
                 : rop == DIST_MIN ? (fl ? g_nanmin : MPI_MIN)
                                   : (fl ? g_nanmax : MPI_MAX);
    size_t esz = gad_dtype_size(dtype);
    for (int64_t at = 0; at < n; at += PIECE) {
        int cnt = (int)(n - at < PIECE ? n - at : PIECE);
        MPI_Request req;
        g_calls++;
        int rc = MPI_Iallreduce(MPI_IN_PLACE, (char *)buf + (size_t)at * esz, cnt,
                                mpi_type(dtype), mop, g_comm, &req);
        if (rc != MPI_SUCCESS) return mpi_fail(op, "MPI_Iallreduce", rc);
        gad_status s = wait_req(&req, op, "MPI_Iallreduce", timeout);
        if (s != GAD_OK) return s;
    }
    return GAD_OK;
}

static gad_status mpi_broadcast(void *buf, size_t bytes, int root, const char *op,
                                double timeout) {
    for (size_t at = 0; at < bytes; at += (size_t)PIECE) {
        int cnt = (int)(bytes - at < (size_t)PIECE ? bytes - at : (size_t)PIECE);
        MPI_Request req;
        g_calls++;
        int rc = MPI_Ibcast((char *)buf + at, cnt, MPI_BYTE, root, g_comm, &req);
        if (rc != MPI_SUCCESS) return mpi_fail(op, "MPI_Ibcast", rc);
        gad_status s = wait_req(&req, op, "MPI_Ibcast", timeout);
        if (s != GAD_OK) return s;
    }
    return GAD_OK;
}

static gad_status mpi_allgather(const void *mine, void *all, size_t bytes, const char *op,
                                double timeout) {
    if (bytes > INT_MAX) {
        gad_error_set(GAD_ERR_DOMAIN, op, "an all-gather of %zu bytes a rank", bytes);
        return GAD_ERR_DOMAIN;
    }
    MPI_Request req;
    g_calls++;
    int rc = MPI_Iallgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, g_comm, &req);
    if (rc != MPI_SUCCESS) return mpi_fail(op, "MPI_Iallgather", rc);
    return wait_req(&req, op, "MPI_Iallgather", timeout);
}

static gad_status mpi_barrier(const char *op, double timeout) {
    MPI_Request req;
    g_calls++;
    int rc = MPI_Ibarrier(g_comm, &req);
    if (rc != MPI_SUCCESS) return mpi_fail(op, "MPI_Ibarrier", rc);
    return wait_req(&req, op, "MPI_Ibarrier", timeout);
}

static gad_status mpi_finalize(int healthy, double timeout) {
    const char *op = "dist_finalize";
    gad_status s = GAD_OK;
    if (!healthy) {
        gad_error_set(GAD_ERR_COMM, op,
                      "an earlier collective failed: MPI is left as it is (MPI_Finalize could "
                      "wait for a lost rank); exit with a non-zero status");
        return GAD_ERR_COMM;
    }
    /* MPI_Finalize waits for every rank: make sure they are all here */
    s = mpi_barrier(op, timeout);
    if (s != GAD_OK) return s;
    MPI_Comm_free(&g_hb);
    MPI_Comm_free(&g_comm);
    MPI_Op_free(&g_nanmin);
    MPI_Op_free(&g_nanmax);
    if (g_we_init) {
        int rc = MPI_Finalize();
        if (rc != MPI_SUCCESS) return mpi_fail(op, "MPI_Finalize", rc);
    }
    return GAD_OK;
}

const dist_transport gad__dist_mpi = {"mpi",          mpi_init,    mpi_allreduce, mpi_broadcast,
                                      mpi_allgather,  mpi_barrier, mpi_finalize};
