/* offload.c: g's matmul offload (SPEC §8). With offload on, a large f32
 * product of CPU tensors (gad_matmul, and so the two products of its
 * backward) is computed on the GPUs, or split between the CPU and the
 * GPUs, and the result comes back to the CPU; on any GPU error the CPU
 * computes it, as if offload were off. The caller's tensors never leave
 * the CPU: this is a speed setting, not a placement.
 *
 * The rule, g's exactly:
 * - the crossover (§8.2): single = M*N*K, total = single * batch and
 *   maxdim = max(M, N, K); offload iff single >= 2^20, total >= 2^28 and
 *   maxdim >= 512;
 * - the CPU+GPU split (§8.3): for rank2 x rank2 (the rows of a), rank3 x
 *   rank2 and rank3 x rank3 with b's batch the same or 1 (the batch), the
 *   CPU takes [0, cpu_end) of the `total` units and the GPUs the rest,
 *   concurrently; cpu_end = floor(total * share), g's share 1/(gpus + 1).
 *   Not applicable when cpu_end is 0 or total; the GPUs' part below the
 *   crossover fails, and then the GPUs take the whole product;
 * - the split over several GPUs (§8.4): parts = min(devices, units) over
 *   the flat batch (broadcast batches materialized), or over the rows of a
 *   rank-2 product, in device order. */
#include "ops_int.h"

#include <pthread.h>

static atomic_int g_on;
atomic_llong gad__offload_products; /* products a GPU took part in */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static double g_share = -1; /* < 0: g's 1/(gpus + 1) */
static int g_devs[GAD_MAX_DEVICES], g_ndevs = -1; /* -1: every CUDA device */

int gad_set_offload(int on) { return atomic_exchange(&g_on, on ? 1 : 0); }

double gad_set_offload_cpu_share(double share) {
    if (!(share <= 1)) share = -1; /* NaN, or above 1: g's default */
    pthread_mutex_lock(&g_lock);
    double old = g_share;
    g_share = share;
    pthread_mutex_unlock(&g_lock);
    return old;
}

gad_status gad_set_offload_devices(const gad_device *devs, int n) {
    if (n > 0 && !devs) {
        gad__err(GAD_ERR_DOMAIN, "set_offload_devices", "devs is NULL with n = %d", n);
        return GAD_ERR_DOMAIN;
    }
    if (n > GAD_MAX_DEVICES) {
        gad__err(GAD_ERR_DOMAIN, "set_offload_devices", "%d devices (at most %d)", n,
                 GAD_MAX_DEVICES);
        return GAD_ERR_DOMAIN;
    }
    for (int i = 0; i < n; i++) {
        if (!gad__dev_valid(devs[i]) || devs[i] == GAD_CPU) {
            gad__err(GAD_ERR_DEVICE, "set_offload_devices",
                     "device %d (%s) is not a device to offload to", devs[i],
                     gad__device_name(devs[i]));
            return GAD_ERR_DEVICE;
        }
        /* a device listed twice would take two shares of every product */
        for (int j = 0; j < i; j++)
            if (devs[j] == devs[i]) {
                gad__err(GAD_ERR_DOMAIN, "set_offload_devices",
                         "device %d (%s) is listed twice (devs[%d] and devs[%d])", devs[i],
                         gad__device_name(devs[i]), j, i);
                return GAD_ERR_DOMAIN;
            }
    }
    pthread_mutex_lock(&g_lock);
    g_ndevs = n < 0 ? -1 : n; /* -1: the default again */
    for (int i = 0; i < n; i++) g_devs[i] = devs[i];
    pthread_mutex_unlock(&g_lock);
    return GAD_OK;
}

bool gad__offload_wanted(void) { return atomic_load_explicit(&g_on, memory_order_relaxed); }

bool gad__offload_crossover(int64_t m, int64_t n, int64_t k, int64_t batch) {
    if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return false;
    const double single = (double)m * (double)n * (double)k, total = single * (double)batch;
    int64_t maxdim = m > n ? (m > k ? m : k) : (n > k ? n : k);
    return single >= 1048576.0 && total >= 268435456.0 && maxdim >= 512;
}

/* ------------------------------------------------------------ one product */

/* The product, seen as `units` independent pieces along its first axis:
 * the rows of a rank-2 a (batch 0), or the flat batch. A chunk [u0, u1) is
 * A[u0:u1] @ B (B[u0:u1] when B has that batch too), written to y's
 * elements from u0 * unit_elems on. */
typedef struct problem {
    const char *op;
    gad_tensor *A, *B; /* host, packed: [units, K] or [units, M, K]; B [K, N] or [units, K, N] */
    bool b_batched;
    int64_t M, N, K, units, unit_elems;
    float *y; /* the result's host elements */
} problem;

/* A[u0:u1] (and B's) as packed host tensors of the calling thread's scope. */
static gad_tensor *rows_of(const char *op, gad_tensor *t, int64_t u0, int64_t u1) {
    gad_range r[1] = {{u0, u1, GAD_NIL}};
    gad_tensor *v = gad_slice(t, r, 1);
    return v ? gad__own(gad__contig(op, v)) : NULL;
}

/* Chunk [u0, u1) on device dev (the host included), into p->y. 0 or -1. */
static int run_chunk(const problem *p, int dev, int64_t u0, int64_t u1) {
    gad_scope_begin();
    gad_no_grad_begin();
    int rc = -1;
    gad_tensor *a = rows_of(p->op, p->A, u0, u1);
    gad_tensor *b = p->b_batched ? rows_of(p->op, p->B, u0, u1) : p->B;
    if (a && b && dev != GAD_DEV_HOST) {
        a = gad__own(gad__to_dev(p->op, a, dev));
        b = b ? gad__own(gad__to_dev(p->op, b, dev)) : NULL;
    }
    int64_t ys[3] = {u1 - u0, p->M, p->N};
    int yr = p->A->rank == 2 ? 2 : 3;
    if (yr == 2) ys[1] = p->N;
    gad_tensor *y = a && b ? gad__own(gad__tensor_new(p->op, dev, GAD_F32, ys, yr)) : NULL;
    /* a GPU without a GEMM fails here and the CPU computes the part */
    if (y && gad__backends[dev]->matmul && gad__backends[dev]->matmul(p->op, a, b, y, 0, 0) == 0) {
        size_t bytes = (size_t)y->numel * sizeof(float);
        float *dst = p->y + u0 * p->unit_elems;
        rc = dev == GAD_DEV_HOST ? (memcpy(dst, gad__ptr(y), bytes), 0)
                                 : gad__devmem[dev]->to_host(dst, gad__ptr(y), bytes);
        if (rc == 0 && dev != GAD_DEV_HOST) rc = gad__devmem[dev]->sync(p->op, dev);
    }
    gad_no_grad_end();
    gad_scope_end();
    return rc;
}

typedef struct job {
    const problem *p;
    int dev;
    int64_t u0, u1;
    int rc;
} job;

static void *job_main(void *arg) {
    job *j = arg;
    j->rc = run_chunk(j->p, j->dev, j->u0, j->u1);
    return NULL;
}

/* Units [u0, u1) over the GPUs, min(ndev, units) parts in device order,
 * one thread each (the calling thread runs the last). 0 or -1. */
static int multi_device(const problem *p, const int *devs, int ndev, int64_t u0, int64_t u1) {
    int64_t units = u1 - u0;
    int parts = units < ndev ? (int)units : ndev;
    job jobs[GAD_MAX_DEVICES];
    pthread_t th[GAD_MAX_DEVICES];
    bool started[GAD_MAX_DEVICES] = {0};
    for (int q = 0; q < parts; q++)
        jobs[q] = (job){p, devs[q], u0 + q * units / parts, u0 + (q + 1) * units / parts, -1};
    for (int q = 0; q + 1 < parts; q++)
        started[q] = pthread_create(&th[q], NULL, job_main, &jobs[q]) == 0;
    jobs[parts - 1].rc = run_chunk(p, jobs[parts - 1].dev, jobs[parts - 1].u0, jobs[parts - 1].u1);
    int rc = jobs[parts - 1].rc;
    for (int q = 0; q + 1 < parts; q++) {
        if (started[q]) pthread_join(th[q], NULL);
        else jobs[q].rc = run_chunk(p, jobs[q].dev, jobs[q].u0, jobs[q].u1);
        rc |= jobs[q].rc;
    }
    return rc ? -1 : 0;
}

typedef struct gpu_part {
    const problem *p;
    const int *devs;
    int ndev;
    int64_t u0, u1;
    int rc;
} gpu_part;

static void *gpu_part_main(void *arg) {
    gpu_part *g = arg;
    g->rc = multi_device(g->p, g->devs, g->ndev, g->u0, g->u1);
    return NULL;
}

/* §8.3's split: the CPU's units and the GPUs' at once. 1 done, 0 not
 * applicable, -1 failed (the caller falls through). */
static int cpu_gpu_split(const problem *p, const gad_tensor *a, const gad_tensor *b,
                         const int *devs, int ndev, double share) {
    bool shape_ok = (a->rank == 2 && b->rank == 2) ||
                    (a->rank == 3 && b->rank == 2) ||
                    (a->rank == 3 && b->rank == 3 && (b->shape[0] == a->shape[0] || b->shape[0] == 1));
    int64_t total = p->units;
    if (!shape_ok || total < 2) return 0;
    double s = share >= 0 ? share : 1.0 / (ndev + 1);
    int64_t cpu_end = (int64_t)((double)total * s);
    if (cpu_end <= 0 || cpu_end >= total) return 0;
    /* the GPUs' part must itself be worth offloading */
    int64_t gu = total - cpu_end;
    bool big = a->rank == 2 ? gad__offload_crossover(gu, p->N, p->K, 1)
                            : gad__offload_crossover(p->M, p->N, p->K, gu);
    if (!big) return -1;
    gpu_part g = {p, devs, ndev, cpu_end, total, -1};
    pthread_t th;
    if (pthread_create(&th, NULL, gpu_part_main, &g) != 0) return -1;
    int rc = run_chunk(p, GAD_DEV_HOST, 0, cpu_end);
    pthread_join(th, NULL);
    return rc || g.rc ? -1 : 1;
}

int gad__offload_matmul(const char *op, gad_tensor *a, gad_tensor *b, gad_tensor *y, int a1,
                        int b1) {
    int64_t M = y->shape[y->rank - 2], N = y->shape[y->rank - 1];
    int64_t K = a->shape[a->rank - 1], batch = 1;
    for (int d = 0; d < y->rank - 2; d++) batch *= y->shape[d];
    if (!gad__offload_crossover(M, N, K, batch)) return 0;
    int devs[GAD_MAX_DEVICES], ndev = 0;
    pthread_mutex_lock(&g_lock);
    double share = g_share;
    bool chosen = g_ndevs >= 0;
    for (int i = 0; chosen && i < g_ndevs; i++) devs[ndev++] = g_devs[i];
    pthread_mutex_unlock(&g_lock);
    if (!chosen) (void)gad_device_count(GAD_DEVICE_CUDA); /* probed once */
    for (int d = 1; !chosen && d < GAD_MAX_DEVICES; d++) /* the default: every GPU */
        if (gad__dev_valid(d) && gad__devmem[d]->type == GAD_DEVICE_CUDA) devs[ndev++] = d;
    if (ndev == 0) return 0;

    const gad_error *pending = gad_last_error();
    int done = 0;
    gad_scope_begin();
    gad_no_grad_begin();
    /* the operands as the chunks need them: [units, K] rows, or the flat
     * batch with b broadcast to it unless b has no batch of its own */
    problem p = {.op = op, .M = M, .N = N, .K = K, .y = gad__ptr(y)};
    gad_tensor *A = a1 ? gad_unsqueeze(a, 0) : a, *B = b1 ? gad_unsqueeze(b, 1) : b;
    int nb = y->rank - 2;
    if (nb == 0) {
        p.A = A ? gad__own(gad__contig(op, A)) : NULL;
        p.B = B;
        p.units = M;
        p.unit_elems = N;
    } else {
        int64_t as[GAD_MAX_RANK], bs[GAD_MAX_RANK];
        memcpy(as, y->shape, (size_t)nb * sizeof *as);
        memcpy(bs, y->shape, (size_t)nb * sizeof *bs);
        as[nb] = M, as[nb + 1] = K, bs[nb] = K, bs[nb + 1] = N;
        int64_t a3[3] = {batch, M, K}, b3[3] = {batch, K, N};
        gad_tensor *Af = A ? gad_broadcast_to(A, as, nb + 2) : NULL;
        p.A = Af ? gad_reshape(gad__own(gad__contig(op, Af)), a3, 3) : NULL;
        p.b_batched = B && B->rank > 2;
        if (p.b_batched) {
            gad_tensor *Bf = gad_broadcast_to(B, bs, nb + 2);
            p.B = Bf ? gad_reshape(gad__own(gad__contig(op, Bf)), b3, 3) : NULL;
        } else {
            p.B = B;
        }
        p.units = batch;
        p.unit_elems = M * N;
    }
    if (p.A && p.B) {
        int r = cpu_gpu_split(&p, a, b, devs, ndev, share);
        if (r <= 0) r = multi_device(&p, devs, ndev, 0, p.units) == 0; /* GPUs only */
        done = r == 1;
    }
    gad_no_grad_end();
    gad_scope_end();
    if (done) atomic_fetch_add(&gad__offload_products, 1);
    else if (!pending) gad_clear_error(); /* a GPU's failure: the CPU computes it */
    return done;
}
