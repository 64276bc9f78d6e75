/* debug.c: the live-tensor report (gad_debug_track, gad_debug_live_report,
 * GAD_DEBUG_LEAKS). While tracking is on, every tensor header made is
 * recorded with the op that made it, the thread and a serial number, and
 * forgotten when the header is freed; the report lists what is left. The
 * records live in plain malloc memory, not the allocator hook's, so that
 * turning the report on changes no allocation count a test checks. */
#include "gad_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct record {
    const gad_tensor *t;
    struct record *next; /* in its bucket */
    uint64_t serial;
    unsigned thread;
    char op[24];
} record;

#define NBUCKET 4096

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static record *buckets[NBUCKET];
static uint64_t next_serial = 1;
static unsigned next_thread = 1;
static int64_t nlive;
static _Thread_local unsigned tl_thread;

static size_t bucket_of(const gad_tensor *t) {
    uintptr_t h = (uintptr_t)t;
    h ^= h >> 17;
    h *= (uintptr_t)0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 7) % NBUCKET;
}

void gad__debug_made(const gad_tensor *t, const char *op) {
    pthread_mutex_lock(&lock);
    size_t b = bucket_of(t);
    record *r = buckets[b];
    while (r && r->t != t) r = r->next;
    if (!r) { /* a new header, made by op ("?": not yet named) */
        r = malloc(sizeof *r);
        if (r) {
            if (!tl_thread) tl_thread = next_thread++;
            *r = (record){.t = t, .next = buckets[b], .serial = next_serial++,
                          .thread = tl_thread};
            snprintf(r->op, sizeof r->op, "%s", op ? op : "?");
            buckets[b] = r;
            nlive++;
        }
    } else if (op) { /* the op that made it, named later */
        snprintf(r->op, sizeof r->op, "%s", op);
    }
    pthread_mutex_unlock(&lock);
}

void gad__debug_gone(const gad_tensor *t) {
    pthread_mutex_lock(&lock);
    for (record **p = &buckets[bucket_of(t)]; *p; p = &(*p)->next)
        if ((*p)->t == t) {
            record *r = *p;
            *p = r->next;
            free(r);
            nlive--;
            break;
        }
    pthread_mutex_unlock(&lock);
}

/* A flag of memory.c's, which the header functions read on every call;
 * the header documents that tracking is switched while no other thread
 * uses gad (as gad_set_allocator). */
int gad_debug_track(int on) {
    int old = gad__debug_live_get();
    gad__debug_live_set(on != 0);
    return old;
}

static int by_serial(const void *a, const void *b) {
    uint64_t x = (*(record *const *)a)->serial, y = (*(record *const *)b)->serial;
    return x < y ? -1 : x > y;
}

#define REPORT_LINES 100

int64_t gad_debug_live_report(FILE *f) {
    if (!f) f = stderr;
    pthread_mutex_lock(&lock);
    int64_t n = nlive;
    record **all = n > 0 ? malloc((size_t)n * sizeof *all) : NULL;
    if (all) {
        int64_t k = 0;
        for (size_t b = 0; b < NBUCKET; b++)
            for (record *r = buckets[b]; r; r = r->next) all[k++] = r;
        qsort(all, (size_t)n, sizeof *all, by_serial);
    }
    fprintf(f, "gad: %lld tensor%s alive%s\n", (long long)n, n == 1 ? "" : "s",
            n > 0 ? " (serial, the op that made it, dtype, shape, thread):" : "");
    for (int64_t i = 0; all && i < n && i < REPORT_LINES; i++) {
        const record *r = all[i];
        char shape[GAD_SHAPE_BUF];
        fprintf(f, "  #%llu %s %s %s thread %u\n", (unsigned long long)r->serial,
                r->op, gad_dtype_name((gad_dtype_t)r->t->dtype),
                gad__shape_str(shape, r->t->shape, r->t->rank), r->thread);
    }
    if (n > REPORT_LINES) fprintf(f, "  ... and %lld more\n", (long long)(n - REPORT_LINES));
    pthread_mutex_unlock(&lock);
    free(all);
    fflush(f);
    return n;
}

static void report_at_exit(void) { gad_debug_live_report(stderr); }

/* GAD_DEBUG_LEAKS=1 (any value but empty or 0): tracking from the start,
 * and the report on stderr at exit. */
GAD_CONSTRUCTOR(debug_from_env) {
    const char *v = getenv("GAD_DEBUG_LEAKS");
    if (v && v[0] && strcmp(v, "0") != 0) {
        gad__debug_live_set(true);
        atexit(report_at_exit);
    }
}
