/* signals.c: SIGINT and SIGTERM as a request to stop: a flag that training,
 * evaluation and sampling check in their loops, instead of the default end
 * of the process. */
#include "signals.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

volatile sig_atomic_t g_interrupted = 0;
static struct timespec first_signal; /* when g_interrupted was set */

/* The first SIGINT or SIGTERM sets g_interrupted. Another one half a second
 * or more later ends the program at once (the default action), for a batch
 * that takes long; one sooner is the same request: `timeout` sends its
 * signal twice, to the program and to its process group. (clock_gettime,
 * sigaction and raise are async-signal-safe.) */
static void on_signal(int sig) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (!g_interrupted) {
        first_signal = now;
        g_interrupted = 1;
        return;
    }
    double since = (double)(now.tv_sec - first_signal.tv_sec) +
                   1e-9 * (double)(now.tv_nsec - first_signal.tv_nsec);
    if (since >= 0.5) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, NULL);
        raise(sig); /* blocked in its handler: delivered, fatally, on return */
    }
}

void signals_catch(signal_state *ss) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaction(SIGINT, &sa, &ss->old_int);
    sigaction(SIGTERM, &sa, &ss->old_term);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_UNBLOCK, &set, &ss->old_mask);
}

void signals_restore(const signal_state *ss) {
    sigaction(SIGINT, &ss->old_int, NULL);
    sigaction(SIGTERM, &ss->old_term, NULL);
    pthread_sigmask(SIG_SETMASK, &ss->old_mask, NULL);
}
