/* test_cuda_host.c: the CUDA back end's logic that needs no GPU, in a
 * build with CUDA (ctest runs it on every such build, CI's included, where
 * there is no driver): what CUDA's calls answer is substituted through the
 * back end's test hooks (cuda_abi.h), so that the paths a GPU machine
 * takes rarely run here.
 *
 * - Discovery: no driver at all, or no GPU, is no device and no error (the
 *   CPU machines skip cleanly); a driver too old for the CUDA runtime gad
 *   was built with (or another failure of cudaGetDeviceCount with a
 *   driver present) is no device and an error that gad_cuda reports,
 *   naming both versions. Each case in a child process, since discovery
 *   runs once per process; and the real discovery of this machine.
 * - Dead devices: an error CUDA keeps returning after a fault in a kernel
 *   (an illegal address...) marks the device dead, and every later entry
 *   there fails at once with a fault naming the first one, in any thread;
 *   other errors and other devices are not touched. */
#include "test.h"

#include "cuda/cuda.h"
#include "cuda/cuda_abi.h"

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

/* cudaError_t values (driver_types.h), to need no CUDA header here */
enum {
    E_INVALID_VALUE = 1,
    E_MEMORY = 2,
    E_INSUFFICIENT_DRIVER = 35,
    E_DEVICES_UNAVAILABLE = 46,
    E_NO_DEVICE = 100,
    E_ILLEGAL_ADDRESS = 700,
    E_ASSERT = 710,
    E_LAUNCH_FAILURE = 719,
};

/* Run fn in a child process: its failed checks as the exit status. */
static int in_child(void (*fn)(void)) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        test_failures_ = 0; /* the child's own */
        fn();
        fflush(stdout);
        _exit(test_failures_ > 100 ? 100 : test_failures_);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#define CHILD(fn) CHECK_MSG(in_child(fn) == 0, "%s failed in its process", #fn)

static const char *err_text(void) { return gad_last_error() ? gad_last_error()->text : ""; }

/* ------------------------------------------------------------ discovery */

TEST(verdicts) {
    char m[300];
    CHECK(gcu_discovery_verdict(0, 2, 13000, 13000, m, sizeof m) == 2 && !m[0]);
    CHECK(gcu_discovery_verdict(0, 0, 13000, 13000, m, sizeof m) == 0 && !m[0]);
    /* no driver: CUDA says "insufficient driver" and the driver version is 0 */
    CHECK(gcu_discovery_verdict(E_INSUFFICIENT_DRIVER, 0, 0, 13000, m, sizeof m) == 0 && !m[0]);
    CHECK(gcu_discovery_verdict(E_NO_DEVICE, 0, 13000, 13000, m, sizeof m) == 0 && !m[0]);
    /* a driver older than the runtime: both versions named */
    CHECK(gcu_discovery_verdict(E_INSUFFICIENT_DRIVER, 0, 12080, 13000, m, sizeof m) == -1);
    CHECK_MSG(strstr(m, "too old") && strstr(m, "CUDA up to 12.8") && strstr(m, "CUDA 13.0") &&
                  strstr(m, "R580"),
              "%s", m);
    /* another failure with a driver there: an error, not "no GPU" */
    CHECK(gcu_discovery_verdict(E_DEVICES_UNAVAILABLE, 0, 13000, 13000, m, sizeof m) == -1);
    CHECK_MSG(strstr(m, "cudaGetDeviceCount failed") && strstr(m, "13.0"), "%s", m);
    CHECK(gcu_discovery_verdict(E_DEVICES_UNAVAILABLE, 0, 13000, 13000, NULL, 0) == -1);
}

static void no_driver(void) {
    gcu_discovery_fake(E_INSUFFICIENT_DRIVER, 0, 0, 13000);
    char m[300];
    CHECK(gad__cuda_init() == 0 && gad__cuda_unavailable(m, sizeof m) == 0);
    CHECK(gad_device_count(GAD_DEVICE_CUDA) == 0);
    CHECK(gad_cuda(0) == -1);
    const gad_error *e = gad_last_error();
    CHECK_MSG(e && e->kind == GAD_ERR_DEVICE && strstr(e->text, "no CUDA device 0 (0 found)") &&
                  !strstr(e->text, "driver"),
              "%s", err_text());
    gad_clear_error();
    /* and the CPU works */
    CHECK(gad_item(gad_sum_all(gad_ones((int64_t[]){3}, 1, GAD_F64))) == 3);
}

static void old_driver(void) {
    gcu_discovery_fake(E_INSUFFICIENT_DRIVER, 0, 12080, 13000);
    char m[300];
    CHECK(gad__cuda_init() == 0 && gad__cuda_unavailable(m, sizeof m) == 1);
    CHECK_MSG(strstr(m, "12.8") && strstr(m, "13.0"), "%s", m);
    CHECK(gad_device_count(GAD_DEVICE_CUDA) == 0);
    CHECK(gad_cuda(0) == -1);
    const gad_error *e = gad_last_error();
    CHECK_MSG(e && e->kind == GAD_ERR_DEVICE && strstr(e->text, "no CUDA device 0 (0 found)") &&
                  strstr(e->text, "driver is too old") && strstr(e->text, "12.8") &&
                  strstr(e->text, "13.0"),
              "%s", err_text());
    gad_clear_error();
    CHECK(gad_item(gad_sum_all(gad_ones((int64_t[]){3}, 1, GAD_F64))) == 3);
}

static void broken_driver(void) {
    gcu_discovery_fake(E_DEVICES_UNAVAILABLE, 0, 13000, 13000);
    CHECK(gad_cuda(0) == -1);
    CHECK_MSG(gad_last_error() && strstr(err_text(), "cudaGetDeviceCount failed"), "%s",
              err_text());
    gad_clear_error();
}

/* This machine as it is: a GPU, or none and no error (no driver, or no
 * GPU); a driver that cannot be used fails here, as it should. */
static void real_discovery(void) {
    char m[300] = "";
    int n = gad__cuda_init();
    int bad = gad__cuda_unavailable(m, sizeof m);
    CHECK_MSG(n > 0 || !bad, "discovery failed: %s", m);
    printf("  this machine: %d CUDA device(s)%s%s\n", n, bad ? ": " : "", m);
}

TEST(discovery) {
    CHILD(no_driver);
    CHILD(old_driver);
    CHILD(broken_driver);
    CHILD(real_discovery);
}

/* --------------------------------------------------------- dead devices */

/* The devices used here are never set up: every CUDA call on them would
 * fail on a machine without a driver, so what is tested is that a dead
 * device's entries stop before any. */
enum { DEAD = 5, ALIVE = 6, OTHER = 7 };

static void *other_thread(void *arg) {
    char m[300] = "";
    int *ok = arg;
    /* a thread that never saw the fault gets the same error */
    *ok = gcu_sync(DEAD) == -1 && gcu_fault_take(DEAD, m, sizeof m) == 1 &&
          strstr(m, "illegal memory access") && strstr(m, "unusable");
    if (!*ok) fprintf(stderr, "other thread: %s\n", m);
    return NULL;
}

static void dead_device(void) {
    char m[300] = "", first[200] = "";
    CHECK(gcu_error_is_sticky(E_ILLEGAL_ADDRESS) && gcu_error_is_sticky(E_ASSERT) &&
          gcu_error_is_sticky(E_LAUNCH_FAILURE));
    CHECK(!gcu_error_is_sticky(0) && !gcu_error_is_sticky(E_MEMORY) &&
          !gcu_error_is_sticky(E_INVALID_VALUE) && !gcu_error_is_sticky(E_INSUFFICIENT_DRIVER));
    CHECK(!gcu_device_dead(DEAD, first, sizeof first));

    /* the fault itself: reported once, as any fault, saying it is final */
    CHECK(gcu_fault_inject(DEAD, E_ILLEGAL_ADDRESS, "the queued work") == -1);
    CHECK(gcu_fault_take(DEAD, m, sizeof m) == 1);
    CHECK_MSG(strstr(m, "cuda:5: the queued work failed: an illegal memory access") &&
                  strstr(m, "cannot be used again"),
              "%s", m);
    CHECK(gcu_device_dead(DEAD, first, sizeof first) == 1);
    CHECK_MSG(strstr(first, "the queued work failed: an illegal memory access"), "%s", first);

    /* a later fault does not replace the first */
    CHECK(gcu_fault_inject(DEAD, E_LAUNCH_FAILURE, "a later launch") == -1);
    gcu_fault_take(DEAD, m, sizeof m);
    CHECK(gcu_device_dead(DEAD, first, sizeof first) == 1 && strstr(first, "illegal memory"));

    /* every later entry fails at once, each time, naming the first fault */
    for (int i = 0; i < 3; i++) {
        m[0] = '\0';
        CHECK(gcu_sync(DEAD) == -1);
        CHECK(gcu_fault_take(DEAD, m, sizeof m) == 1);
        CHECK_MSG(strstr(m, "cuda:5 is unusable since a fault on the device") &&
                      strstr(m, "illegal memory access") && strstr(m, "restart"),
                  "%s", m);
    }
    double host = 1;
    void *owner = (void *)&host;
    CHECK(gcu_storage_alloc(DEAD, 64, &owner) == NULL && owner == NULL);
    CHECK(gcu_fault_take(DEAD, m, sizeof m) == 1 && strstr(m, "unusable"));
    CHECK(gcu_to_host(DEAD, &host, (void *)&host, sizeof host) == -1);
    CHECK(gcu_fault_take(DEAD, m, sizeof m) == 1 && strstr(m, "unusable"));
    CHECK(gcu_stream_handle(DEAD) == NULL && gcu_stream_done(DEAD) == -1);
    CHECK(gcu_fault_take(DEAD, m, sizeof m) == 1 && strstr(m, "unusable"));
    CHECK(gcu_device_info(DEAD, NULL, 0, NULL, NULL) == -1);
    CHECK(gcu_fault_take(DEAD, m, sizeof m) == 1 && strstr(m, "unusable"));
    /* in every thread */
    pthread_t th;
    int ok = 0;
    CHECK(pthread_create(&th, NULL, other_thread, &ok) == 0 && pthread_join(th, NULL) == 0);
    CHECK(ok);

    /* an ordinary error is reported once and marks nothing dead */
    CHECK(gcu_fault_inject(ALIVE, E_INVALID_VALUE, "a call") == -1);
    CHECK(gcu_fault_take(ALIVE, m, sizeof m) == 1 && strstr(m, "cuda:6: a call failed"));
    CHECK(!strstr(m, "cannot be used again"));
    CHECK(!gcu_device_dead(ALIVE, first, sizeof first));
    CHECK(gcu_fault_take(ALIVE, m, sizeof m) == 0);
    CHECK(gcu_fault_inject(ALIVE, 0, "a call") == 0 && gcu_fault_take(ALIVE, m, sizeof m) == 0);
    /* another device is not touched */
    CHECK(!gcu_device_dead(OTHER, first, sizeof first));
    CHECK(!gcu_device_dead(-1, first, sizeof first) && !gcu_device_dead(99, first, sizeof first));
}

TEST(dead_devices) { CHILD(dead_device); }

int main(void) {
    RUN(verdicts);
    RUN(discovery);
    RUN(dead_devices);
    return test_summary();
}
