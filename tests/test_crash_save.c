/* test_crash_save.c: a process killed while it saves a checkpoint never
 * leaves a broken one (issue "Reliability", item 7).
 *
 * Checkpoint A (small, known content) is saved to a path. Then, again and
 * again, a forked child saves checkpoint B (large: 24 MiB in 7 tensors)
 * over the same path and the parent kills it with SIGKILL:
 *
 *   - timed kills: after the child says it is about to call gad_save, the
 *     parent waits a delay spread evenly over 0 .. 1.25 x the measured
 *     duration of a save, then sends SIGKILL;
 *   - kills at exact points: the child installs an allocator that sends
 *     itself SIGKILL at its j-th allocation, for every allocation gad_save
 *     makes (before the temporary file exists, while its data is being
 *     written, and after the rename, before the directory is synced).
 *
 * After every kill the file at the path must be byte for byte checkpoint A
 * or checkpoint B (never a mixture, never truncated), gad_load must accept
 * it with no error, and its tensors must be A's or B's. A file that is B
 * is put back to A for the next round. Temporary files of killed saves
 * ("<path>.tmp.<pid>.<k>") may stay in the directory - gad cannot remove
 * the files of a process that was killed - and are counted; the test
 * checks that they do not disturb later saves and loads, then removes them.
 *
 * Options: --kills N (timed kills, default 50; 20 under a sanitizer), -v
 * (one line per kill). */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"
#include "test_tmpdir.h"

static char dir[200], path[256];

/* forking a sanitized process is slow (its shadow memory): fewer kills */
static int verbose = 0, nkills = TEST_SANITIZED ? 20 : 50;

/* ------------------------------------------------------------ helpers */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sleep_s(double s) {
    if (s <= 0) return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static unsigned char *read_file(const char *p, size_t *n) {
    FILE *f = fopen(p, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 20, len = 0;
    unsigned char *buf = malloc(cap);
    for (;;) {
        if (len == cap) buf = realloc(buf, cap *= 2);
        size_t r = fread(buf + len, 1, cap - len, f);
        if (r == 0) break;
        len += r;
    }
    fclose(f);
    *n = len;
    return buf;
}

/* Files in the directory whose name starts with the checkpoint's name plus
 * ".tmp.", removed when `remove` is set. */
static int temp_files(int remove) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    char p[512];
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "ckpt.safetensors.tmp.", 21) != 0) continue;
        n++;
        if (remove) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    }
    closedir(d);
    return n;
}

/* ------------------------------------------------------------ checkpoints */

#define NA 2
#define NB 7

typedef struct ckpt {
    int n;
    const char *names[8];
    gad_tensor *t[8];
    unsigned char *bytes; /* the file gad_save writes */
    size_t len;
} ckpt;

static ckpt A, B;

static void make_checkpoints(void) {
    int64_t one = 1, two = 2;
    A.n = NA;
    A.names[0] = "w";
    A.t[0] = gad_randn((int64_t[]){64, 64}, 2, 1);
    A.names[1] = "step";
    A.t[1] = gad_from_i64(&one, NULL, 0);
    B.n = NB;
    static const char *bn[NB] = {"w", "layer.0", "layer.1", "layer.2", "layer.3", "layer.4",
                                 "step"};
    for (int i = 0; i < NB; i++) B.names[i] = bn[i];
    B.t[0] = gad_randn((int64_t[]){64, 64}, 2, 2); /* same name and shape as A's */
    for (int i = 1; i < NB - 1; i++)
        B.t[i] = gad_randn((int64_t[]){1024, 1024 + 256 * (i - 1)}, 2, (uint64_t)(10 + i));
    B.t[NB - 1] = gad_from_i64(&two, NULL, 0);
}

static gad_status save(const ckpt *c, const char *p) {
    return gad_save(p, c->names, c->t, c->n);
}

/* Which checkpoint the file at path is: 'A', 'B', or '?' (with why). */
static char classify(char *why, size_t cap) {
    size_t len = 0;
    unsigned char *got = read_file(path, &len);
    char r = '?';
    if (!got) snprintf(why, cap, "the file is missing");
    else if (len == A.len && !memcmp(got, A.bytes, len)) r = 'A';
    else if (len == B.len && !memcmp(got, B.bytes, len)) r = 'B';
    else snprintf(why, cap, "%zu bytes, neither A (%zu) nor B (%zu)", len, A.len, B.len);
    free(got);
    /* and gad reads it as that checkpoint */
    gad_checkpoint *cp = gad_load(path);
    if (!cp) {
        snprintf(why, cap, "gad_load: %.150s", gad_last_error() ? gad_last_error()->text : "?");
        gad_clear_error();
        return '?';
    }
    const ckpt *want = r == 'B' ? &B : &A;
    if (r != '?' && gad_checkpoint_count(cp) != want->n) r = '?';
    gad_scope_begin();
    for (int i = 0; r != '?' && i < want->n; i++) {
        gad_tensor *t = gad_checkpoint_get(cp, want->names[i]);
        gad_tensor *d = t ? gad_sum_all(gad_abs(gad_sub(gad_cast(t, GAD_F64),
                                                         gad_cast(want->t[i], GAD_F64))))
                          : NULL;
        if (!d || gad_item(d) != 0) {
            snprintf(why, cap, "tensor %s differs from the file's bytes", want->names[i]);
            r = '?';
        }
    }
    gad_scope_end();
    gad_checkpoint_free(cp);
    gad_clear_error();
    return r;
}

/* Put A back at the path (when the last round left B there). */
static void reset_to_a(void) {
    CHECK(save(&A, path) == GAD_OK);
}

/* ------------------------------------------------------------ the child */

/* The allocator of a child killed at an exact point: it sends itself
 * SIGKILL at allocation number kill_at. */
static long alloc_calls, kill_at = -1;

static void *killing_alloc(void *ctx, size_t size, size_t align) {
    (void)ctx;
    if (alloc_calls++ == kill_at) raise(SIGKILL);
    void *p = NULL;
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size ? size : 1))
        return NULL;
    return p;
}

static void plain_free(void *ctx, void *p, size_t size) {
    (void)ctx;
    (void)size;
    free(p);
}

/* Fork a child that saves B over the path. It writes one byte to the pipe
 * just before gad_save, then exits 0 (saved) or 1 (failed). With
 * at_alloc >= 0 it kills itself at that allocation. */
static pid_t spawn_saver(int *ready_fd, long at_alloc) {
    int fds[2];
    if (pipe(fds) != 0) return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        close(fds[0]);
        if (at_alloc >= 0) {
            gad_allocator al = {killing_alloc, plain_free, NULL};
            gad_set_allocator(&al); /* memory gad holds is plain malloc: compatible */
            alloc_calls = 0;
            kill_at = at_alloc;
        }
        char c = 's';
        if (write(fds[1], &c, 1) != 1) _exit(3);
        gad_status st = save(&B, path);
        _exit(st == GAD_OK ? 0 : 1);
    }
    close(fds[1]);
    *ready_fd = fds[0];
    return pid;
}

/* Wait for the child's byte (it is about to call gad_save); 0 or -1. */
static int wait_ready(int fd) {
    char ch;
    ssize_t r;
    do r = read(fd, &ch, 1);
    while (r < 0 && errno == EINTR);
    close(fd);
    return r == 1 ? 0 : -1;
}

/* How a child ended: 'k' killed, 's' saved, 'f' gad_save failed, 'x' else. */
static char reap(pid_t pid) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) return 'k';
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 's';
    if (WIFEXITED(status) && WEXITSTATUS(status) == 1) return 'f';
    return 'x';
}

/* ------------------------------------------------------------ the tests */

typedef struct counts {
    int killed_a, killed_b, saved_b, bad;
} counts;

static void record(counts *c, char how, char what, const char *why, const char *label, double at) {
    if (what == '?' || (how == 's' && what != 'B') || how == 'f' || how == 'x') {
        c->bad++;
        CHECK_MSG(0, "%s at %.3f ms: child %s, file %c%s%s", label, at * 1e3,
                  how == 'k' ? "killed" : how == 's' ? "saved" : how == 'f' ? "failed to save"
                                                                            : "died otherwise",
                  what, what == '?' ? ": " : "", what == '?' ? why : "");
    } else if (how == 'k') {
        if (what == 'A') c->killed_a++;
        else c->killed_b++;
    } else {
        c->saved_b++;
    }
    if (verbose)
        printf("    %s at %7.3f ms: %s, file %c\n", label, at * 1e3,
               how == 'k' ? "killed" : "finished", what);
}

static double t_save; /* seconds for one save of B, in a forked child */

TEST(setup_and_calibrate) {
    make_checkpoints();
    char ref[300];
    snprintf(ref, sizeof ref, "%s/ref.safetensors", dir);
    CHECK(save(&A, ref) == GAD_OK);
    A.bytes = read_file(ref, &A.len);
    double best = 1e9;
    for (int i = 0; i < 3; i++) {
        double t0 = now_s();
        CHECK(save(&B, ref) == GAD_OK);
        double t = now_s() - t0;
        if (t < best) best = t;
    }
    B.bytes = read_file(ref, &B.len);
    unlink(ref);
    /* a forked child is slower (a fresh process, its first writes), and it
     * is the child that the parent kills: time it there */
    reset_to_a();
    double child_best = 1e9;
    for (int i = 0; i < 3; i++) {
        int fd;
        pid_t pid = spawn_saver(&fd, -1);
        CHECK(pid > 0 && wait_ready(fd) == 0);
        double t0 = now_s();
        CHECK(reap(pid) == 's');
        double t = now_s() - t0;
        if (t < child_best) child_best = t;
    }
    t_save = child_best;
    CHECK(A.bytes && B.bytes && A.len > 0 && B.len > (size_t)20 << 20);
    reset_to_a();
    char why[200] = "";
    CHECK(classify(why, sizeof why) == 'A');
    printf("  A: %zu bytes, B: %zu bytes; one save of B takes %.2f ms (%.2f ms in a forked "
           "child) in %s\n",
           A.len, B.len, best * 1e3, t_save * 1e3, dir);
}

TEST(timed_kills) {
    counts c = {0};
    int temps = 0;
    const double t_timed = t_save;
    for (int k = 0; k < nkills; k++) {
        double delay = t_save * 1.25 * (k + 0.5) / nkills;
        int fd;
        pid_t pid = spawn_saver(&fd, -1);
        CHECK(pid > 0);
        if (pid <= 0) break;
        CHECK(wait_ready(fd) == 0);
        sleep_s(delay);
        kill(pid, SIGKILL);
        char how = reap(pid);
        char why[200] = "";
        char what = classify(why, sizeof why);
        char label[32];
        snprintf(label, sizeof label, "kill %d", k);
        record(&c, how, what, why, label, delay);
        /* The save finished before this kill: saves run faster now than
         * when timed (the machine was busier then), so the later kills
         * aim inside the shorter save. */
        if (how == 's' && delay < t_save) t_save = delay;
        /* a temporary file left by the killed save does not disturb the
         * next save and load (A is put back with it still there) */
        int t = temp_files(0);
        temps += t;
        reset_to_a();
        CHECK(classify(why, sizeof why) == 'A');
        CHECK(temp_files(1) == t); /* then removed: 30 MiB each */
    }
    printf("  %d timed kills over 0 .. %.1f ms (save time %.1f ms, %.1f by the end): %d landed "
           "mid-save (old file A intact), %d after the rename (file B), %d after the child "
           "finished; %d temporary files left by killed saves\n",
           nkills, 1.25 * t_timed * 1e3, t_timed * 1e3, t_save * 1e3, c.killed_a, c.killed_b,
           c.saved_b, temps);
    CHECK(c.bad == 0);
    /* most kills must land inside the save for the test to mean anything */
    CHECK_MSG(c.killed_a >= nkills / 2, "only %d of %d kills landed mid-save", c.killed_a,
              nkills);
    CHECK(temp_files(0) == 0);
}

TEST(kills_at_every_allocation_of_a_save) {
    /* how many allocations one save of B makes, counted in this process
     * the way the children count */
    int fd;
    pid_t pid;
    gad_allocator al = {killing_alloc, plain_free, NULL};
    gad_set_allocator(&al);
    alloc_calls = 0;
    kill_at = -1;
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s/count.safetensors", dir);
    CHECK(save(&B, tmp) == GAD_OK);
    long count = alloc_calls;
    unlink(tmp);
    gad_set_allocator(NULL);
    counts c = {0};
    int temps = 0;
    for (long j = 0; j <= count; j++) {
        pid = spawn_saver(&fd, j);
        CHECK(pid > 0 && wait_ready(fd) == 0);
        char how = reap(pid);
        char why[200] = "";
        char what = classify(why, sizeof why);
        char label[48];
        snprintf(label, sizeof label, "kill at allocation %ld", j);
        int t = temp_files(1);
        temps += t > 0;
        if (verbose) printf("    allocation %ld: %d temporary file(s)\n", j, t);
        record(&c, how, what, why, label, 0);
        if (what != 'A') reset_to_a();
    }
    printf("  gad_save(B) makes %ld allocations; killed at each: %d left A, %d left B, %d "
           "finished; %d left a temporary file\n",
           count, c.killed_a, c.killed_b, c.saved_b, temps);
    CHECK(c.bad == 0);
    CHECK(c.killed_a + c.killed_b == count);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--kills") && i + 1 < argc) nkills = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-v")) verbose = 1;
        else {
            fprintf(stderr, "usage: %s [--kills N] [-v]\n", argv[0]);
            return 2;
        }
    }
    if (nkills < 1) nkills = 1;
    /* one thread: the children are killed at random points, and a fork
     * child has none of the parent's worker threads anyway */
    gad_set_num_threads(1);
    if (test_make_tmpdir(dir, sizeof dir, "gad_crash", 0)) return 1;
    snprintf(path, sizeof path, "%s/ckpt.safetensors", dir);
    RUN(setup_and_calibrate);
    RUN(timed_kills);
    RUN(kills_at_every_allocation_of_a_save);
    test_remove_tree(dir, 0);
    for (int i = 0; i < A.n; i++) gad_release(A.t[i]);
    for (int i = 0; i < B.n; i++) gad_release(B.t[i]);
    free(A.bytes);
    free(B.bytes);
    gad_mem_stats ms;
    gad_mem_stats_get(&ms);
    CHECK(ms.live_tensors == 0);
    return test_summary();
}
