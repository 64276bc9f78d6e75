/* test_threads.c: gad from several threads at once (issue "Reliability",
 * item 5), testing exactly what gad.h's rule 5 allows:
 *
 *   - private models: NTHREADS threads each train their own small HELIX
 *     language model (own parameters, own AdamW, own gad_rng for the data)
 *     at the same time; every loss and every final parameter is
 *     bit-identical to the same run made on the main thread, one after the
 *     other;
 *   - read-only tensors shared by every thread: constants made by the main
 *     thread are read by all threads at once - through ops, views (which
 *     share their storage), and as inputs saved by each thread's own graph
 *     (each thread differentiates its own leaf) - and every result matches
 *     the single-thread result bit for bit;
 *   - parameters shared during no-grad inference: the model's parameters
 *     (leaves that require grad) are read by all threads inside
 *     gad_no_grad_begin/end; the outputs match bit for bit, and the leaves
 *     are unchanged (no gradient slot filled, storage still unshared);
 *   - publishing parameters while training: a learner thread updates its
 *     parameters in place (AdamW, through gad_data_mut) and after every step
 *     publishes gad_detach snapshots under a mutex; reader threads run
 *     no-grad inference on whatever snapshot is current. Copy-on-write must
 *     keep every snapshot exactly as it was published: each reader's output
 *     matches a recomputation from the snapshot at the end, and each
 *     snapshot still holds the values the learner had when it published it;
 *   - errors are per thread: an error recorded in one thread is invisible
 *     in the others and does not replace theirs;
 *   - scopes are per thread: depths are independent, gad_keep hands to the
 *     thread's own enclosing scope, and a thread that exits with scopes
 *     still open has their tensors freed (and its caches given back).
 *
 * (Each thread reads the shared tensors through: matmul, tanh, softmax,
 * take, cat, amax, logsumexp, broadcasting add, slice, transpose, reshape,
 * contiguous, detach, gad_data, gad_read_f32, and as saved inputs of its
 * own graph.)
 *
 * Every byte gad takes goes through a counting allocator: after each test,
 * once every thread has exited and the main thread's caches are trimmed,
 * gad holds no more blocks than before it, and the live counters are back
 * to zero. Build with -DGAD_SANITIZE=thread to check for data races.
 *
 * Options: --threads N (default 4), --steps N (default 300). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "test.h"

static int nthreads = 4;
static int nsteps = 300;
#define MAXTHREADS 16

/* ------------------------------------------------------------ the hook */

static atomic_llong hook_blocks;

static void *hook_alloc(void *ctx, size_t size, size_t align) {
    (void)ctx;
    void *p = NULL;
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size ? size : 1))
        return NULL;
    atomic_fetch_add_explicit(&hook_blocks, 1, memory_order_relaxed);
    return p;
}

static void hook_free(void *ctx, void *p, size_t size) {
    (void)ctx;
    (void)size;
    if (!p) return;
    atomic_fetch_sub_explicit(&hook_blocks, 1, memory_order_relaxed);
    free(p);
}

static const gad_allocator hook_allocator = {hook_alloc, hook_free, NULL};

/* Every test starts and ends with nothing alive and nothing held
 * (reinstalling the hook empties this thread's caches and, with no scope
 * open, gives back its scope arrays). */
#define CHECK_CLEAN()                                                          \
    do {                                                                       \
        gad_set_allocator(&hook_allocator);                                    \
        gad_mem_stats ms_;                                                     \
        gad_mem_stats_get(&ms_);                                               \
        CHECK_MSG(ms_.live_tensors == 0 && ms_.live_storages == 0 &&           \
                      ms_.live_bytes == 0,                                     \
                  "%lld tensors, %lld storages, %lld bytes alive",             \
                  (long long)ms_.live_tensors, (long long)ms_.live_storages,   \
                  (long long)ms_.live_bytes);                                  \
        CHECK_MSG(atomic_load(&hook_blocks) == 0,                              \
                  "%lld blocks held from the allocator",                       \
                  (long long)atomic_load(&hook_blocks));                       \
    } while (0)

/* A failed check in a worker thread: counted, printed, never racing on the
 * harness's plain counters. */
static atomic_int worker_failures;
#define WCHECK(cond, ...)                                                      \
    do {                                                                       \
        if (!(cond)) {                                                         \
            if (atomic_fetch_add(&worker_failures, 1) < 20) {                  \
                fprintf(stderr, "%s:%d: in a thread: check failed: %s: ",      \
                        __FILE__, __LINE__, #cond);                            \
                fprintf(stderr, __VA_ARGS__);                                  \
                fputc('\n', stderr);                                           \
            }                                                                  \
        }                                                                      \
    } while (0)

#define CHECK_WORKERS()                                                        \
    do {                                                                       \
        int wf_ = atomic_exchange(&worker_failures, 0);                        \
        CHECK_MSG(wf_ == 0, "%d failed checks in threads", wf_);               \
    } while (0)

static void start_threads(pthread_t *th, int n, void *(*fn)(void *), void *args, size_t argsz) {
    for (int i = 0; i < n; i++) {
        int rc = pthread_create(&th[i], NULL, fn, (char *)args + (size_t)i * argsz);
        if (rc) {
            fprintf(stderr, "pthread_create: %s\n", strerror(rc));
            exit(1);
        }
    }
}

static void join_threads(pthread_t *th, int n) {
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
}

/* ------------------------------------------------------------ the model */

#define V 16
#define D 8
#define NL 2
#define B 2
#define T 8
#include "test_helix_model.h"

typedef struct model {
    gad_tensor *p[NP];
} model;

/* Parameters made with no scope open (the model owns them). */
static int model_init(model *m, uint64_t seed) { return hx_params_init(m->p, seed); }

static void model_free(model *m) { hx_params_free(m->p); }

/* Logits [B*T, V] of a batch, in the current scope. */
static gad_tensor *model_logits(gad_tensor *const *p, gad_tensor *x) { return hx_logits(p, x); }

static void make_batch(gad_rng *rng, int64_t *in, int64_t *tg) {
    for (int b = 0; b < B; b++) {
        int64_t tok = gad_rng_int(rng, 0, V);
        for (int t = 0; t <= T; t++) {
            if (t < T) in[b * T + t] = tok;
            if (t > 0) tg[b * T + t - 1] = tok;
            tok = gad_rng_uniform(rng) < 0.2 ? gad_rng_int(rng, 0, V) : (3 * tok + 1) % V;
        }
    }
}

static size_t model_numel(gad_tensor *const *p) {
    size_t n = 0;
    for (int i = 0; i < NP; i++) n += (size_t)gad_numel(p[i]);
    return n;
}

/* Every parameter's values, in order, into out (model_numel floats). */
static int read_params(gad_tensor *const *p, float *out) {
    size_t k = 0;
    for (int i = 0; i < NP; i++) {
        size_t c = (size_t)gad_numel(p[i]);
        if (gad_read_f32(p[i], out + k, c) != GAD_OK) return -1;
        k += c;
    }
    return 0;
}

/* ====================================================== private models */

typedef struct train_job {
    uint64_t seed;
    int steps;
    double *losses;  /* [steps] */
    float *params;   /* the final parameters */
    size_t nparams;
    int ok;
    pthread_barrier_t *start; /* NULL: run at once */
} train_job;

/* One complete training run: its own model, optimizer, rng and scopes. */
static void *train_run(void *arg) {
    train_job *j = arg;
    if (j->start) pthread_barrier_wait(j->start);
    model m;
    j->ok = model_init(&m, j->seed) == 0;
    gad_adamw_opts o = {.lr = 1e-2};
    gad_optim *opt = j->ok ? gad_adamw_new(m.p, NP, &o) : NULL;
    gad_rng *rng = gad_rng_new(j->seed ^ 0x5eedULL);
    j->ok = j->ok && opt && rng;
    for (int s = 0; j->ok && s < j->steps; s++) {
        int64_t in[B * T], tg[B * T];
        make_batch(rng, in, tg);
        gad_scope_begin();
        gad_tensor *x = gad_from_i64(in, (int64_t[]){B, T}, 2);
        gad_tensor *y = gad_from_i64(tg, (int64_t[]){B * T}, 1);
        gad_tensor *loss = gad_cross_entropy(model_logits(m.p, x), y, GAD_REDUCE_MEAN);
        j->losses[s] = loss ? gad_item(loss) : NAN;
        gad_tensor *grads[NP];
        gad_status st = gad_grad(loss, m.p, NP, grads);
        if (st == GAD_OK) st = gad_optim_step(opt, grads);
        gad_scope_end();
        if (st != GAD_OK) {
            fprintf(stderr, "seed %llu step %d: %s\n", (unsigned long long)j->seed, s,
                    gad_last_error() ? gad_last_error()->text : "?");
            j->ok = 0;
        }
    }
    j->nparams = model_numel(m.p);
    j->params = malloc(j->nparams * sizeof *j->params);
    if (j->ok && read_params(m.p, j->params) != 0) j->ok = 0;
    gad_optim_free(opt);
    gad_rng_free(rng);
    model_free(&m);
    return NULL;
}

TEST(private_models_train_as_if_alone) {
    int n = nthreads;
    train_job seq[MAXTHREADS], par[MAXTHREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        uint64_t seed = 1000 + 17 * (uint64_t)i;
        seq[i] = (train_job){seed, nsteps, calloc((size_t)nsteps, sizeof(double)), NULL, 0, 0, NULL};
        par[i] = (train_job){seed, nsteps, calloc((size_t)nsteps, sizeof(double)), NULL, 0, 0, &start};
    }
    /* one after the other, on this thread */
    for (int i = 0; i < n; i++) train_run(&seq[i]);
    /* all at once */
    pthread_t th[MAXTHREADS];
    start_threads(th, n, train_run, par, sizeof par[0]);
    join_threads(th, n);
    pthread_barrier_destroy(&start);
    int same = 0;
    for (int i = 0; i < n; i++) {
        CHECK(seq[i].ok && par[i].ok);
        CHECK_MSG(memcmp(seq[i].losses, par[i].losses, (size_t)nsteps * sizeof(double)) == 0,
                  "thread %d: losses differ from the sequential run", i);
        CHECK_MSG(seq[i].nparams == par[i].nparams &&
                      memcmp(seq[i].params, par[i].params, seq[i].nparams * sizeof(float)) == 0,
                  "thread %d: final parameters differ from the sequential run", i);
        CHECK_MSG(isfinite(par[i].losses[nsteps - 1]) &&
                      par[i].losses[nsteps - 1] < par[i].losses[0],
                  "thread %d: loss %g -> %g", i, par[i].losses[0], par[i].losses[nsteps - 1]);
        same += memcmp(seq[i].losses, par[i].losses, (size_t)nsteps * sizeof(double)) == 0;
        /* different seeds train different models */
        if (i > 0) CHECK(memcmp(par[i].losses, par[0].losses, sizeof(double)) != 0);
    }
    printf("  %d threads x %d steps: %d of %d runs bit-identical to the sequential ones "
           "(losses %.4f -> %.4f in thread 0)\n",
           n, nsteps, same, n, par[0].losses[0], par[0].losses[nsteps - 1]);
    for (int i = 0; i < n; i++) {
        free(seq[i].losses), free(seq[i].params);
        free(par[i].losses), free(par[i].params);
    }
    CHECK_CLEAN();
}

/* ================================================ shared read-only tensors */

#define NOUT 9

typedef struct shared_ro {
    gad_tensor *x, *w, *idx, *bias; /* made by the main thread, read by all */
    double want[NOUT];              /* the single-thread results */
    float want_grad[24 * 16];
    int iters;
    pthread_barrier_t *start;
} shared_ro;

/* Everything a thread computes from the shared tensors: plain ops, views,
 * and the gradient of a loss in which the shared x is a saved input, with
 * respect to the thread's own leaf (a copy of w). */
static void ro_compute(const shared_ro *s, double *out, float *grad) {
    gad_scope_begin();
    gad_tensor *x = s->x, *w = s->w;
    gad_tensor *y = gad_matmul(x, w);                           /* [32,16] */
    out[0] = gad_item(gad_sum_all(gad_tanh(y)));
    gad_tensor *v = gad_slice(x, (gad_range[]){GAD_RANGE_STEP(1, 30, 3), GAD_RANGE(2, 20)}, 2);
    out[1] = gad_item(gad_mean_all(gad_mul(v, v)));            /* a view of x */
    out[2] = gad_item(gad_sum_all(gad_softmax(gad_transpose(y), -1)));
    out[3] = gad_item(gad_sum_all(gad_take(x, 1, s->idx)));    /* [32] picks */
    gad_tensor *c = gad_cat((gad_tensor *[]){x, gad_contiguous(gad_transpose(gad_transpose(x)))},
                            2, 0);
    out[4] = gad_item(gad_amax(gad_sum(c, (int[]){1}, 1, 0), 0, 0));
    out[5] = gad_item(gad_sum_all(gad_add(y, s->bias)));       /* broadcast */
    gad_tensor *r = gad_reshape(x, (int64_t[]){8, 4, 24}, 3);
    out[6] = gad_item(gad_sum_all(gad_logsumexp(r, -1, 0)));
    /* plain reads: a detached alias's elements, gad_read_f32 */
    static _Thread_local float buf[32 * 24];
    const float *px = gad_data(gad_detach(x));
    out[8] = px && gad_read_f32(x, buf, 32 * 24) == GAD_OK && !memcmp(px, buf, sizeof buf)
                 ? (double)buf[77]
                 : NAN;
    /* the thread's own leaf; x and bias shared and saved by its graph */
    gad_tensor *mine = gad_requires_grad(gad_clone(w));
    gad_tensor *loss = gad_mean_all(gad_square(gad_tanh(gad_add(gad_matmul(x, mine), s->bias))));
    out[7] = gad_item(loss);
    gad_tensor *g;
    if (gad_grad(loss, &mine, 1, &g) == GAD_OK) gad_read_f32(g, grad, 24 * 16);
    gad_scope_end();
}

static void *ro_worker(void *arg) {
    shared_ro *s = arg;
    pthread_barrier_wait(s->start);
    for (int it = 0; it < s->iters; it++) {
        double got[NOUT];
        float grad[24 * 16];
        ro_compute(s, got, grad);
        WCHECK(memcmp(got, s->want, sizeof got) == 0, "iteration %d: results differ", it);
        WCHECK(memcmp(grad, s->want_grad, sizeof grad) == 0, "iteration %d: gradient differs",
               it);
        WCHECK(gad_last_error() == NULL, "%s", gad_last_error()->text);
    }
    return NULL;
}

TEST(shared_read_only_tensors) {
    shared_ro s = {0};
    s.x = gad_randn((int64_t[]){32, 24}, 2, 5);
    s.w = gad_randn((int64_t[]){24, 16}, 2, 6);
    s.bias = gad_randn((int64_t[]){16}, 1, 7);
    int64_t idx[32];
    for (int i = 0; i < 32; i++) idx[i] = (i * 7) % 24;
    s.idx = gad_from_i64(idx, (int64_t[]){32}, 1);
    ro_compute(&s, s.want, s.want_grad);
    CHECK_OK();
    for (int i = 0; i < NOUT; i++) CHECK(isfinite(s.want[i]));
    s.iters = 40;
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)nthreads);
    s.start = &start;
    pthread_t th[MAXTHREADS];
    for (int i = 0; i < nthreads; i++) pthread_create(&th[i], NULL, ro_worker, &s);
    join_threads(th, nthreads);
    pthread_barrier_destroy(&start);
    CHECK_WORKERS();
    /* the shared tensors are as they were, and shared with nobody */
    double again[NOUT];
    float grad[24 * 16];
    ro_compute(&s, again, grad);
    CHECK(memcmp(again, s.want, sizeof again) == 0);
    CHECK(gad_is_unique(s.x) && gad_is_unique(s.w) && gad_is_unique(s.bias));
    CHECK(!gad_is_tracked(s.x) && !gad_is_tracked(s.w));
    printf("  %d threads x %d iterations over 4 shared tensors: all bit-identical\n", nthreads,
           s.iters);
    gad_release(s.x), gad_release(s.w), gad_release(s.bias), gad_release(s.idx);
    CHECK_CLEAN();
}

/* ================================== shared parameters, no-grad inference */

#define NBATCH 4

typedef struct shared_params {
    model *m;
    int64_t in[NBATCH][B * T];
    float want[NBATCH][B * T * V];
    int iters;
    pthread_barrier_t *start;
} shared_params;

static int infer(model *m, const int64_t *in, float *out) {
    gad_scope_begin();
    gad_tensor *x = gad_from_i64(in, (int64_t[]){B, T}, 2);
    gad_tensor *logits = model_logits(m->p, x);
    int rc = logits && !gad_is_tracked(logits) &&
                     gad_read_f32(logits, out, B * T * V) == GAD_OK
                 ? 0
                 : -1;
    gad_scope_end();
    return rc;
}

static void *infer_worker(void *arg) {
    shared_params *s = arg;
    pthread_barrier_wait(s->start);
    gad_no_grad_begin();
    for (int it = 0; it < s->iters; it++) {
        float got[B * T * V];
        int b = it % NBATCH;
        WCHECK(infer(s->m, s->in[b], got) == 0, "%s",
               gad_last_error() ? gad_last_error()->text : "tracked output");
        WCHECK(memcmp(got, s->want[b], sizeof got) == 0, "iteration %d: logits differ", it);
    }
    gad_no_grad_end();
    return NULL;
}

TEST(shared_parameters_no_grad_inference) {
    model m;
    CHECK(model_init(&m, 99) == 0);
    shared_params s = {.m = &m, .iters = 60};
    gad_rng *rng = gad_rng_new(3);
    int64_t tg[B * T];
    for (int b = 0; b < NBATCH; b++) make_batch(rng, s.in[b], tg);
    gad_rng_free(rng);
    gad_no_grad_begin();
    for (int b = 0; b < NBATCH; b++) CHECK(infer(&m, s.in[b], s.want[b]) == 0);
    gad_no_grad_end();
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)nthreads);
    s.start = &start;
    pthread_t th[MAXTHREADS];
    for (int i = 0; i < nthreads; i++) pthread_create(&th[i], NULL, infer_worker, &s);
    join_threads(th, nthreads);
    pthread_barrier_destroy(&start);
    CHECK_WORKERS();
    /* the leaves are untouched: still leaves, no gradient, storage unshared */
    for (int i = 0; i < NP; i++) {
        CHECK(gad_is_leaf(m.p[i]) && gad_is_unique(m.p[i]));
        gad_scope_begin();
        CHECK(gad_leaf_grad(m.p[i]) == NULL);
        gad_scope_end();
    }
    CHECK_OK();
    /* and they still train: a gradient on the main thread works */
    gad_scope_begin();
    gad_tensor *x = gad_from_i64(s.in[0], (int64_t[]){B, T}, 2);
    gad_tensor *y = gad_from_i64(tg, (int64_t[]){B * T}, 1);
    gad_tensor *grads[NP];
    CHECK(gad_grad(gad_cross_entropy(model_logits(m.p, x), y, GAD_REDUCE_MEAN), m.p, NP, grads) ==
          GAD_OK);
    gad_scope_end();
    gad_zero_grad(m.p, NP);
    printf("  %d threads x %d no-grad forwards on shared leaves: all bit-identical\n", nthreads,
           s.iters);
    model_free(&m);
    CHECK_CLEAN();
}

/* ======================= a learner publishing snapshots to reader threads */

#define PUB_STEPS 60
#define PUB_MAX_READS 4096

typedef struct pub {
    pthread_mutex_t lock;
    int version;                         /* the current snapshot, -1: none */
    gad_tensor *snap[PUB_STEPS + 1][NP]; /* every version, kept to the end */
    float *values[PUB_STEPS + 1];        /* the learner's values at publication */
    atomic_int done;
    int64_t in[B * T];
    /* what the readers saw */
    pthread_mutex_t rlock;
    int nreads;
    int read_version[PUB_MAX_READS];
    float *read_out[PUB_MAX_READS];
} pub;

static void publish(pub *p, model *m, int v) {
    gad_tensor *s[NP];
    for (int i = 0; i < NP; i++) s[i] = gad_detach(m->p[i]); /* no scope: ours */
    p->values[v] = malloc(model_numel(m->p) * sizeof(float));
    read_params(m->p, p->values[v]);
    pthread_mutex_lock(&p->lock);
    memcpy(p->snap[v], s, sizeof s);
    p->version = v;
    pthread_mutex_unlock(&p->lock);
}

static void *learner(void *arg) {
    pub *p = arg;
    model m;
    model_init(&m, 5);
    gad_optim *opt = gad_adamw_new(m.p, NP, &(gad_adamw_opts){.lr = 1e-2});
    gad_rng *rng = gad_rng_new(8);
    publish(p, &m, 0);
    for (int s = 1; s <= PUB_STEPS; s++) {
        int64_t in[B * T], tg[B * T];
        make_batch(rng, in, tg);
        gad_scope_begin();
        gad_tensor *x = gad_from_i64(in, (int64_t[]){B, T}, 2);
        gad_tensor *y = gad_from_i64(tg, (int64_t[]){B * T}, 1);
        gad_tensor *grads[NP];
        gad_status st = gad_grad(gad_cross_entropy(model_logits(m.p, x), y, GAD_REDUCE_MEAN), m.p,
                                 NP, grads);
        /* the update writes the parameters in place: copy-on-write gives
         * them new storage, the published snapshots keep the old */
        if (st == GAD_OK) st = gad_optim_step(opt, grads);
        gad_scope_end();
        WCHECK(st == GAD_OK, "learner step %d: %s", s,
               gad_last_error() ? gad_last_error()->text : "");
        publish(p, &m, s);
    }
    atomic_store(&p->done, 1);
    gad_optim_free(opt);
    gad_rng_free(rng);
    model_free(&m);
    return NULL;
}

static void *reader(void *arg) {
    pub *p = arg;
    gad_no_grad_begin();
    for (;;) {
        int fin = atomic_load(&p->done);
        gad_tensor *s[NP];
        pthread_mutex_lock(&p->lock);
        int v = p->version;
        for (int i = 0; v >= 0 && i < NP; i++) s[i] = gad_retain(p->snap[v][i]);
        pthread_mutex_unlock(&p->lock);
        if (v >= 0) {
            float *out = malloc(B * T * V * sizeof *out);
            gad_scope_begin();
            gad_tensor *x = gad_from_i64(p->in, (int64_t[]){B, T}, 2);
            gad_tensor *logits = model_logits(s, x);
            WCHECK(logits && gad_read_f32(logits, out, B * T * V) == GAD_OK, "%s",
                   gad_last_error() ? gad_last_error()->text : "");
            gad_scope_end();
            for (int i = 0; i < NP; i++) gad_release(s[i]);
            pthread_mutex_lock(&p->rlock);
            if (p->nreads < PUB_MAX_READS) {
                p->read_version[p->nreads] = v;
                p->read_out[p->nreads++] = out;
                out = NULL;
            }
            pthread_mutex_unlock(&p->rlock);
            free(out);
        }
        if (fin) break;
    }
    gad_no_grad_end();
    return NULL;
}

TEST(learner_publishes_snapshots_to_readers) {
    static pub p; /* large: not on the stack */
    memset(&p, 0, sizeof p);
    pthread_mutex_init(&p.lock, NULL);
    pthread_mutex_init(&p.rlock, NULL);
    p.version = -1;
    gad_rng *rng = gad_rng_new(21);
    int64_t tg[B * T];
    make_batch(rng, p.in, tg);
    gad_rng_free(rng);
    int nr = nthreads - 1 > 0 ? nthreads - 1 : 1;
    pthread_t th[MAXTHREADS];
    pthread_create(&th[0], NULL, learner, &p);
    for (int i = 0; i < nr; i++) pthread_create(&th[1 + i], NULL, reader, &p);
    join_threads(th, 1 + nr);
    CHECK_WORKERS();
    CHECK(p.version == PUB_STEPS);
    /* every snapshot still holds the values it was published with */
    int intact = 0;
    for (int v = 0; v <= PUB_STEPS; v++) {
        float *now = malloc(model_numel(p.snap[v]) * sizeof *now);
        CHECK(read_params(p.snap[v], now) == 0);
        int same = memcmp(now, p.values[v], model_numel(p.snap[v]) * sizeof *now) == 0;
        CHECK_MSG(same, "snapshot %d changed after it was published", v);
        intact += same;
        free(now);
    }
    /* every read matches a recomputation from its snapshot */
    gad_no_grad_begin();
    int matched = 0, versions_seen = 0, seen[PUB_STEPS + 1] = {0};
    for (int r = 0; r < p.nreads; r++) {
        int v = p.read_version[r];
        float want[B * T * V];
        gad_scope_begin();
        gad_tensor *x = gad_from_i64(p.in, (int64_t[]){B, T}, 2);
        CHECK(gad_read_f32(model_logits(p.snap[v], x), want, B * T * V) == GAD_OK);
        gad_scope_end();
        int same = memcmp(want, p.read_out[r], sizeof want) == 0;
        CHECK_MSG(same, "read %d (snapshot %d) differs from its recomputation", r, v);
        matched += same;
        if (!seen[v]++) versions_seen++;
    }
    gad_no_grad_end();
    printf("  1 learner (%d steps) and %d readers: %d reads of %d versions, all matched; "
           "%d of %d snapshots intact\n",
           PUB_STEPS, nr, p.nreads, versions_seen, intact, PUB_STEPS + 1);
    CHECK(matched == p.nreads && p.nreads > 0);
    for (int r = 0; r < p.nreads; r++) free(p.read_out[r]);
    for (int v = 0; v <= PUB_STEPS; v++) {
        for (int i = 0; i < NP; i++) gad_release(p.snap[v][i]);
        free(p.values[v]);
    }
    pthread_mutex_destroy(&p.lock);
    pthread_mutex_destroy(&p.rlock);
    CHECK_CLEAN();
}

/* ==================================================== errors per thread */

typedef struct err_job {
    int id;
    pthread_barrier_t *bar;
} err_job;

/* Thread 0 makes a shape error, thread 1 a dtype error, the others an index
 * error; in turn, so that each sees the others' errors recorded. */
static void *err_worker(void *arg) {
    err_job *j = arg;
    WCHECK(gad_last_error() == NULL, "thread %d starts with an error: %s", j->id,
           gad_last_error()->text);
    pthread_barrier_wait(j->bar); /* the main thread's error is recorded */
    WCHECK(gad_last_error() == NULL, "thread %d sees another thread's error", j->id);
    gad_scope_begin();
    gad_tensor *a = gad_ones((int64_t[]){2, 3}, 2, GAD_F32);
    gad_status want;
    const char *op;
    if (j->id == 0) {
        WCHECK(gad_matmul(a, a) == NULL, "matmul [2,3]@[2,3] worked");
        want = GAD_ERR_SHAPE, op = "matmul";
    } else if (j->id == 1) {
        WCHECK(gad_add(a, gad_ones((int64_t[]){2, 3}, 2, GAD_F64)) == NULL, "f32 + f64 worked");
        want = GAD_ERR_DTYPE, op = "add";
    } else {
        WCHECK(gad_select(a, 0, 5) == NULL, "select 5 of 2 worked");
        want = GAD_ERR_INDEX, op = "select";
    }
    pthread_barrier_wait(j->bar); /* every thread has its error */
    const gad_error *e = gad_last_error();
    WCHECK(e && e->kind == want && !strcmp(e->op, op), "thread %d: expected %s in %s, got %s",
           j->id, gad_status_str(want), op, e ? e->text : "none");
    /* a later failure does not replace the first error */
    gad_sum(a, (int[]){7}, 1, 0);
    e = gad_last_error();
    WCHECK(e && e->kind == want && !strcmp(e->op, op), "thread %d: first error replaced: %s",
           j->id, e ? e->text : "none");
    gad_clear_error();
    pthread_barrier_wait(j->bar); /* every thread has cleared its error */
    gad_scope_end();
    return NULL;
}

TEST(errors_are_per_thread) {
    int n = nthreads < 3 ? 3 : nthreads;
    if (n > MAXTHREADS) n = MAXTHREADS;
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)n + 1);
    err_job jobs[MAXTHREADS];
    pthread_t th[MAXTHREADS];
    for (int i = 0; i < n; i++) jobs[i] = (err_job){i, &bar};
    start_threads(th, n, err_worker, jobs, sizeof jobs[0]);
    gad_reshape(NULL, (int64_t[]){1}, 1); /* this thread's error: domain */
    const gad_error *e = gad_last_error();
    CHECK(e && e->kind == GAD_ERR_DOMAIN);
    pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar);
    e = gad_last_error(); /* theirs did not replace ours */
    CHECK_MSG(e && e->kind == GAD_ERR_DOMAIN && !strcmp(e->op, "reshape"), "main thread: %s",
              e ? e->text : "no error");
    pthread_barrier_wait(&bar);
    e = gad_last_error(); /* their clear did not clear ours */
    CHECK(e && e->kind == GAD_ERR_DOMAIN);
    gad_clear_error();
    join_threads(th, n);
    pthread_barrier_destroy(&bar);
    CHECK_WORKERS();
    CHECK_CLEAN();
}

/* ==================================================== scopes per thread */

typedef struct scope_job {
    int id;
    pthread_barrier_t *bar;
    int leave_open; /* exit with scopes still open */
    double kept_value;
} scope_job;

static void *scope_worker(void *arg) {
    scope_job *j = arg;
    int depth = j->id + 1;
    for (int d = 0; d < depth; d++) gad_scope_begin();
    gad_tensor *mine = gad_full((int64_t[]){64}, 1, GAD_F32, (double)j->id);
    for (int k = 0; k < 100; k++) gad_add_scalar(mine, k); /* owned by the inner scope */
    pthread_barrier_wait(j->bar); /* every thread is inside its scopes */
    WCHECK(gad_scope_depth() == depth, "thread %d: depth %d, expected %d", j->id,
           gad_scope_depth(), depth);
    /* keep: to this thread's enclosing scope (or to the caller at depth 1) */
    gad_tensor *k = gad_keep(gad_sum_all(mine));
    gad_scope_end();
    WCHECK(gad_scope_depth() == depth - 1, "thread %d: depth after end %d", j->id,
           gad_scope_depth());
    j->kept_value = gad_item(k);
    if (depth == 1) gad_release(k); /* handed to us: no scope was left */
    pthread_barrier_wait(j->bar); /* every thread has closed one scope */
    WCHECK(gad_scope_depth() == depth - 1, "thread %d: depth changed by another thread", j->id);
    if (!j->leave_open)
        while (gad_scope_depth() > 0) gad_scope_end();
    /* else: the thread exits with depth - 1 scopes open; gad frees them */
    return NULL;
}

TEST(scopes_are_per_thread) {
    int n = nthreads < 2 ? 2 : nthreads;
    if (n > MAXTHREADS) n = MAXTHREADS;
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)n);
    scope_job jobs[MAXTHREADS];
    pthread_t th[MAXTHREADS];
    gad_scope_begin(); /* the main thread's own scope is not theirs */
    gad_tensor *main_t = gad_ones((int64_t[]){3}, 1, GAD_F32);
    for (int i = 0; i < n; i++) jobs[i] = (scope_job){i, &bar, i % 2, 0};
    start_threads(th, n, scope_worker, jobs, sizeof jobs[0]);
    join_threads(th, n);
    pthread_barrier_destroy(&bar);
    CHECK_WORKERS();
    CHECK(gad_scope_depth() == 1);
    CHECK_VALUES(main_t, 0, 1, 1, 1);
    gad_scope_end();
    for (int i = 0; i < n; i++) CHECK(jobs[i].kept_value == 64.0 * i);
    /* threads that exited with scopes open had them closed, and every
     * exited thread gave its caches back */
    CHECK_CLEAN();
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) nthreads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) nsteps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--threads N] [--steps N]\n", argv[0]);
            return 2;
        }
    }
    if (nthreads < 1) nthreads = 1;
    if (nthreads > MAXTHREADS) nthreads = MAXTHREADS;
    if (nsteps < 2) nsteps = 2;
    gad_set_allocator(&hook_allocator);
    RUN(private_models_train_as_if_alone);
    RUN(shared_read_only_tensors);
    RUN(shared_parameters_no_grad_inference);
    RUN(learner_publishes_snapshots_to_readers);
    RUN(errors_are_per_thread);
    RUN(scopes_are_per_thread);
    gad_set_allocator(NULL);
    return test_summary();
}
