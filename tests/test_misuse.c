/* test_misuse.c: misuse that must fail the same way every time (issue 17,
 * item 4). A released or scope-ended tensor passed to gad is an error
 * ("use of a released tensor") and never an alias of a newer tensor; a
 * second release frees nothing; a freed optimizer is refused; the
 * live-tensor report names what is still alive; gad_set_allocator makes
 * every thread give its cached blocks back to the allocator that made
 * them. Each test below failed (or crashed) before the fix it names. */
#include "test.h"

#include "ops/ops_int.h"
#include "test_registry.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>

#define SHP(...) (int64_t[]){__VA_ARGS__}, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))

static int released_error(const char *op) {
    const gad_error *e = gad_last_error();
    int ok = e && e->kind == GAD_ERR_DOMAIN && strcmp(e->op, op) == 0 &&
             strstr(e->text, "use of a released tensor") != NULL;
    if (!ok) fprintf(stderr, "  expected a released-tensor error in %s, got: %s\n", op,
                     e ? e->text : "no error");
    gad_clear_error();
    return ok;
}

/* Before: gad_add returned a result with no error, and `a` named that
 * result's header (the freed header was the next one handed out). */
TEST(add_after_release) {
    gad_tensor *a = gad_full(SHP(4), GAD_F32, 1.0), *b = gad_full(SHP(4), GAD_F32, 2.0);
    gad_release(a);
    CHECK(gad_add(a, b) == NULL);
    CHECK(released_error("add"));
    gad_tensor *c = gad_add(b, b); /* a fresh header, not a's */
    CHECK(c && c != a);
    gad_scope_begin();
    CHECK(c && gad_item(gad_sum_all(c)) == 16.0);
    gad_scope_end();
    CHECK(gad_add(a, b) == NULL && released_error("add"));
    gad_release(c);
    gad_release(gad_sum_all(c)); /* (c released: refused, nothing freed) */
    gad_clear_error();
    gad_release(b);
}

/* Before: a tensor made in a scope and used after gad_scope_end read the
 * tensor made next in its header: 5 + 5 = 10 instead of an error (3 + 3
 * would have been 6). */
TEST(use_after_scope_end) {
    gad_scope_begin();
    gad_tensor *a = gad_scalar_f32(3);
    gad_scope_end();
    gad_tensor *b = gad_scalar_f32(5);
    CHECK(gad_add(a, a) == NULL && released_error("add"));
    CHECK(isnan(gad_item(a)) && released_error("item"));
    CHECK(gad_item(b) == 5.0);
    gad_release(b);
}

/* Before: the second release, after the header had been handed out again,
 * freed the new tensor. */
TEST(double_release_after_reuse) {
    gad_mem_stats s0, s1;
    gad_mem_stats_get(&s0);
    gad_tensor *t = gad_scalar_f32(1);
    gad_release(t);
    gad_tensor *u = gad_scalar_f32(7);
    gad_release(t);
    CHECK(released_error("release"));
    CHECK(gad_item(u) == 7.0);
    gad_mem_stats_get(&s1);
    CHECK(s1.live_tensors == s0.live_tensors + 1);
    gad_release(u);
}

/* Before: with the cache disabled the header went straight back to malloc,
 * and the second release read freed memory (ASan: heap-use-after-free). */
TEST(double_release_cache_off) {
    size_t old = gad_set_cache_limit(0);
    gad_tensor *t = gad_full(SHP(3), GAD_F64, 2.0);
    gad_release(t);
    gad_release(t);
    CHECK(released_error("release"));
    CHECK(gad_mul(t, t) == NULL && released_error("mul"));
    gad_set_cache_limit(old);
}

/* The core functions and the tape's refuse a released tensor as they
 * refuse NULL, and say why. */
TEST(core_functions_refuse_released) {
    gad_tensor *x = gad_requires_grad(gad_full(SHP(2), GAD_F32, 1.0));
    gad_scope_begin();
    gad_tensor *y = gad_retain(gad_sum_all(gad_mul(x, x)));
    gad_scope_end();
    gad_release(gad_retain(y)); /* still alive: one reference left */
    gad_release(y);
    CHECK(gad_rank(y) == -1 && released_error("rank"));
    CHECK(gad_shape(y) == NULL && released_error("shape"));
    CHECK(gad_numel(y) == 0 && released_error("numel"));
    CHECK(gad_dtype(y) == GAD_DTYPE_INVALID && released_error("dtype"));
    CHECK(gad_retain(y) == NULL && released_error("retain"));
    CHECK(gad_data(y) == NULL && released_error("data"));
    CHECK(gad_backward(y) != GAD_OK && released_error("backward"));
    CHECK(!gad_is_leaf(y) && released_error("is_leaf"));
    CHECK(gad_clone(y) == NULL && released_error("clone"));
    CHECK(gad_reshape(y, SHP(1)) == NULL && released_error("reshape"));
    gad_scope_begin();
    CHECK(gad_keep(y) == NULL && released_error("keep"));
    gad_scope_end();
    char buf[64];
    gad_snprint(buf, sizeof buf, y);
    CHECK(strstr(buf, "released") != NULL && released_error("print"));
    gad_release(x);
    /* an optimizer refuses a released parameter */
    CHECK(gad_adamw_new(&x, 1, NULL) == NULL);
    CHECK(gad_last_error() && strstr(gad_last_error()->text, "use of a released tensor"));
    gad_clear_error();
}

/* Every op of the registry (src/ops/ops.def), each input in turn replaced
 * by a released tensor: NULL and the released-tensor error, nothing
 * leaked. */
TEST(every_op_refuses_released) {
    gad_rng *r = gad_rng_new(3);
    int cases = 0;
    for (int op = 1; op < GAD_OP_COUNT_; op++) {
        gad_op_sample s;
        if (!test_sample(op, r, 0, &s)) continue;
        for (int j = 0; j < s.n; j++) {
            if (!s.in[j]) continue;
            gad_scope_begin();
            gad_tensor *dead = gad_retain(gad_clone(s.in[j]));
            gad_scope_end();
            gad_release(dead); /* a released pointer, owned by no scope */
            gad_tensor *in[12];
            memcpy(in, s.in, sizeof in);
            in[j] = dead;
            gad_mem_stats m0, m1;
            gad_mem_stats_get(&m0);
            gad_clear_error();
            gad_scope_begin();
            gad_tensor *y = s.apply(&s, in, s.n);
            gad_scope_end();
            gad_mem_stats_get(&m1);
            const gad_error *e = gad_last_error();
            int ok = y == NULL && e && e->kind == GAD_ERR_DOMAIN &&
                     strstr(e->text, "use of a released tensor") != NULL;
            CHECK_MSG(ok, "op %s input %d: %s", gad__ops[op].info.name, j,
                      e ? e->text : "no error");
            CHECK_MSG(m1.live_tensors == m0.live_tensors, "op %s leaked",
                      gad__ops[op].info.name);
            gad_clear_error();
            cases++;
        }
        gad_scope_end();
    }
    CHECK(cases > 50);
    gad_rng_free(r);
}

/* Before: the second gad_optim_free read the freed struct (a use after
 * free; glibc aborted on the double free of its arrays). */
TEST(optim_free_twice) {
    gad_tensor *w = gad_requires_grad(gad_full(SHP(3), GAD_F32, 1.0));
    gad_optim *o = gad_adamw_new(&w, 1, NULL);
    CHECK(o != NULL);
    gad_optim_free(o);
    CHECK_OK();
    gad_optim_free(o);
    const gad_error *e = gad_last_error();
    CHECK(e && e->kind == GAD_ERR_DOMAIN && strcmp(e->op, "optim_free") == 0 &&
          strstr(e->text, "freed optimizer"));
    gad_clear_error();
    CHECK(gad_optim_step(o, NULL) == GAD_ERR_DOMAIN);
    CHECK(gad_last_error() && strstr(gad_last_error()->text, "freed optimizer"));
    gad_clear_error();
    CHECK(isnan(gad_optim_lr(o)));
    gad_clear_error();
    CHECK(gad_optim_steps(o) == -1);
    gad_clear_error();
    gad_release(w);
}

/* The quarantine holds a released header back for GAD_QUARANTINE more
 * releases: the misuse above is caught however busy the thread is in
 * between, up to that window. */
TEST(quarantine_window) {
    gad_tensor *t = gad_scalar_f32(1);
    gad_release(t);
    for (int i = 0; i < GAD_QUARANTINE - 2; i++) gad_release(gad_scalar_f32(2));
    CHECK(gad_neg(t) == NULL && released_error("neg"));
}

/* The window holds with the cache off too (the quarantine is not cache:
 * the ring keeps GAD_QUARANTINE headers and gives older ones back), and
 * after the ring has gone round many times; the cache off keeps nothing
 * beyond the quarantine. */
TEST(quarantine_without_cache) {
    size_t old = gad_set_cache_limit(0);
    for (int i = 0; i < 5 * GAD_QUARANTINE + 7; i++) gad_release(gad_scalar_f32(2));
    gad_tensor *t = gad_scalar_f32(1);
    gad_release(t);
    for (int i = 0; i < GAD_QUARANTINE - 2; i++) gad_release(gad_scalar_f32(2));
    CHECK(gad_neg(t) == NULL && released_error("neg"));
    gad_mem_stats m;
    gad_mem_stats_get(&m);
    CHECK_MSG(m.cached_bytes == 0, "%lld bytes cached with the cache off",
              (long long)m.cached_bytes);
    gad_set_cache_limit(old);
    /* with the cache back on, a burst of releases is kept and reused: the
     * window still holds right after it */
    gad_scope_begin();
    for (int i = 0; i < 3 * GAD_QUARANTINE; i++) gad_scalar_f32(3);
    gad_scope_end();
    gad_tensor *u = gad_scalar_f32(1);
    gad_release(u);
    for (int i = 0; i < GAD_QUARANTINE - 2; i++) gad_release(gad_scalar_f32(2));
    CHECK(gad_neg(u) == NULL && released_error("neg"));
    CHECK_OK();
}

/* Off (gad_debug_quarantine(0), or GAD_QUARANTINE=0), a header is reused
 * at once: the next tensor takes the released one's header, which is why
 * the quarantine is on by default. */
TEST(quarantine_off) {
    CHECK(gad_debug_quarantine(0) == 1);
    gad_tensor *t = gad_scalar_f32(1);
    gad_release(t);
    gad_tensor *u = gad_scalar_f32(2);
    CHECK(u == t); /* the alias the quarantine prevents */
    gad_release(u);
    CHECK(gad_debug_quarantine(1) == 0);
    gad_tensor *a = gad_scalar_f32(3);
    gad_release(a);
    gad_tensor *b = gad_scalar_f32(4);
    CHECK(b != a && gad_neg(a) == NULL && released_error("neg"));
    gad_release(b);
}

/* ------------------------------------------------------ the leak report */

static int64_t report_to(char *buf, size_t cap) {
    FILE *f = tmpfile();
    if (!f) return -1;
    int64_t n = gad_debug_live_report(f);
    rewind(f);
    size_t k = fread(buf, 1, cap - 1, f);
    buf[k] = 0;
    fclose(f);
    return n;
}

TEST(live_report) {
    int was = gad_debug_track(1);
    CHECK(was == 0);
    static char out[8192];
    const float v[6] = {1, 2, 3, 4, 5, 6};
    gad_tensor *a = gad_from_f32(v, SHP(2, 3));
    gad_tensor *b = gad_add(a, a);
    gad_tensor *c = gad_transpose(b);
    gad_release(b); /* c keeps b's storage, not b */
    CHECK(report_to(out, sizeof out) == 2); /* (transpose is a permute) */
    CHECK(strstr(out, "gad: 2 tensors alive") != NULL);
    CHECK(strstr(out, "from_f32 f32 [2,3] thread") != NULL);
    CHECK(strstr(out, "permute f32 [3,2] thread") != NULL);
    CHECK(strstr(out, " add ") == NULL);
    char *p = strstr(out, "from_f32"), *q = strstr(out, "permute");
    CHECK(p && q && p < q); /* oldest first */
    gad_release(a);
    gad_release(c);
    CHECK(report_to(out, sizeof out) == 0);
    CHECK(strstr(out, "gad: 0 tensors alive") != NULL);
    gad_debug_track(0);
    gad_tensor *d = gad_scalar_f32(1); /* tracking off: not recorded */
    CHECK(report_to(out, sizeof out) == 0);
    gad_release(d);
}

/* GAD_DEBUG_LEAKS=1: a child that leaks a tensor made by mul prints it at
 * exit. */
TEST(live_report_at_exit) {
    int fd[2];
    CHECK(pipe(fd) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        setenv("GAD_DEBUG_LEAKS", "1", 1);
        execl("/proc/self/exe", "test_misuse", "--leak-child", (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    static char out[4096];
    size_t n = 0;
    ssize_t k;
    while (n < sizeof out - 1 && (k = read(fd[0], out + n, sizeof out - 1 - n)) > 0)
        n += (size_t)k;
    out[n] = 0;
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_MSG(strstr(out, "gad: 1 tensor alive") && strstr(out, " mul f64 [5] thread 1"),
              "child printed: %s", out);
}

static int leak_child(void) {
    gad_tensor *a = gad_full(SHP(5), GAD_F64, 2.0);
    gad_mul(a, a); /* leaked: no scope */
    gad_release(a);
    return 0;
}

/* ---------------------------------------------- allocators and threads */

/* A tagging allocator: each block starts with the id of the allocator that
 * made it; a free by another allocator is counted as a mismatch. */
typedef struct tag_alloc {
    int id;
    atomic_long allocs, frees, mismatched;
} tag_alloc;

#define TAG_HDR 64

static void *tag_alloc_fn(void *ctx, size_t size, size_t align) {
    tag_alloc *a = ctx;
    (void)align; /* TAG_HDR keeps 64-byte alignment */
    char *p = NULL;
    if (posix_memalign((void **)&p, 64, size + TAG_HDR) != 0) return NULL;
    memcpy(p, &a->id, sizeof a->id);
    atomic_fetch_add(&a->allocs, 1);
    return p + TAG_HDR;
}

static void tag_free_fn(void *ctx, void *q, size_t size) {
    tag_alloc *a = ctx;
    (void)size;
    char *p = (char *)q - TAG_HDR;
    int id;
    memcpy(&id, p, sizeof id);
    if (id != a->id) atomic_fetch_add(&a->mismatched, 1);
    atomic_fetch_add(&a->frees, 1);
    free(p);
}

static tag_alloc A = {.id = 1}, B = {.id = 2};

typedef struct worker_sync {
    pthread_mutex_t m;
    pthread_cond_t c;
    int phase; /* 0: run under A; 1: main installed B; 2: done */
    int ready;
} worker_sync;

static worker_sync ws = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};

static void some_work(void) {
    gad_scope_begin();
    gad_tensor *x = gad_requires_grad(gad_full(SHP(8, 8), GAD_F32, 0.5));
    gad_tensor *y = gad_sum_all(gad_tanh(gad_matmul(x, x)));
    CHECK(y && gad_backward(y) == GAD_OK);
    gad_scope_end();
    gad_release(x);
}

static void *idle_worker(void *arg) {
    (void)arg;
    some_work(); /* fills this thread's caches with A's blocks */
    pthread_mutex_lock(&ws.m);
    ws.ready = 1;
    pthread_cond_broadcast(&ws.c);
    while (ws.phase == 0) pthread_cond_wait(&ws.c, &ws.m);
    pthread_mutex_unlock(&ws.m);
    some_work(); /* under B: A's blocks must go back to A first */
    return NULL;
}

/* Before: the idle thread's cache kept A's blocks and handed them to B's
 * free (mismatched > 0). */
TEST(allocator_switch_threads) {
    gad_set_num_threads(1);
    gad_set_allocator(&(gad_allocator){tag_alloc_fn, tag_free_fn, &A});
    pthread_t th;
    CHECK(pthread_create(&th, NULL, idle_worker, NULL) == 0);
    pthread_mutex_lock(&ws.m);
    while (!ws.ready) pthread_cond_wait(&ws.c, &ws.m);
    pthread_mutex_unlock(&ws.m);
    gad_set_allocator(&(gad_allocator){tag_alloc_fn, tag_free_fn, &B});
    some_work();
    pthread_mutex_lock(&ws.m);
    ws.phase = 1;
    pthread_cond_broadcast(&ws.c);
    pthread_mutex_unlock(&ws.m);
    pthread_join(th, NULL);
    gad_set_allocator(NULL); /* the main thread gives B's back */
    gad_set_num_threads(0);
    CHECK(atomic_load(&A.allocs) > 0 && atomic_load(&B.allocs) > 0);
    CHECK_MSG(atomic_load(&A.mismatched) == 0 && atomic_load(&B.mismatched) == 0,
              "A freed %ld of B's blocks, B freed %ld of A's",
              atomic_load(&A.mismatched), atomic_load(&B.mismatched));
    CHECK_MSG(atomic_load(&A.allocs) == atomic_load(&A.frees),
              "A: %ld allocations, %ld frees", atomic_load(&A.allocs), atomic_load(&A.frees));
    CHECK_MSG(atomic_load(&B.allocs) == atomic_load(&B.frees),
              "B: %ld allocations, %ld frees", atomic_load(&B.allocs), atomic_load(&B.frees));
}

int main(int argc, char **argv) {
    /* the quarantine is on by default (unless GAD_QUARANTINE=0): what these
     * tests check needs it (gad_release) */
    if (gad_debug_quarantine(1) != 1) {
        const char *e = getenv("GAD_QUARANTINE");
        fprintf(stderr, "FAIL: the quarantine is off by default (GAD_QUARANTINE=%s)\n",
                e ? e : "(unset)");
        return 1;
    }
    if (argc > 1 && strcmp(argv[1], "--leak-child") == 0) return leak_child();
    gad_mem_stats start;
    gad_mem_stats_get(&start);
    RUN(add_after_release);
    RUN(use_after_scope_end);
    RUN(double_release_after_reuse);
    RUN(double_release_cache_off);
    RUN(core_functions_refuse_released);
    RUN(every_op_refuses_released);
    RUN(optim_free_twice);
    RUN(quarantine_window);
    RUN(quarantine_without_cache);
    RUN(quarantine_off);
    RUN(live_report);
    RUN(live_report_at_exit);
    RUN(allocator_switch_threads);
    gad_mem_stats end;
    gad_mem_stats_get(&end);
    test_current_ = "main";
    CHECK(end.live_tensors == start.live_tensors);
    return test_summary();
}
