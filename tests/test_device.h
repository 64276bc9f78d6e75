/* test_device.h: the test device, a second device for tests without a GPU
 * (test_device.c, test_dist.c): its memory is separate host memory (blocks
 * of its own, never core's caches) that core reaches only through the
 * table's copies, which it counts; its kernels are the CPU's. Call
 * register_test_device() once; TD is then its device number. It is a test
 * fixture, not a GPU. */
#ifndef GAD_TEST_DEVICE_H
#define GAD_TEST_DEVICE_H

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "gad_int.h"

static atomic_llong td_live, td_to_host, td_from_host;
static atomic_llong td_live_bytes; /* reported through mem_stats */

static gad_storage *td_storage_new(int dev, size_t nbytes) {
    gad_storage *s = malloc(sizeof *s);
    void *d = NULL;
    if (!s || posix_memalign(&d, 64, nbytes ? nbytes : 1)) {
        free(s);
        return NULL;
    }
    memset(s, 0, sizeof *s);
    atomic_init(&s->refs, 1);
    s->cap = nbytes;
    s->data = d;
    s->sclass = -1;
    s->dev = (uint8_t)dev;
    atomic_fetch_add(&td_live, 1);
    atomic_fetch_add(&td_live_bytes, (long long)nbytes);
    return s;
}

static void td_storage_free(gad_storage *s) {
    atomic_fetch_sub(&td_live_bytes, (long long)s->cap);
    free(s->data);
    free(s);
    atomic_fetch_sub(&td_live, 1);
}

static int td_to_host_copy(void *dst, const void *src, size_t n) {
    atomic_fetch_add(&td_to_host, 1);
    memcpy(dst, src, n);
    return 0;
}

static int td_from_host_copy(void *dst, const void *src, size_t n) {
    atomic_fetch_add(&td_from_host, 1);
    memcpy(dst, src, n);
    return 0;
}

static int td_sync(const char *op, int dev) {
    (void)op, (void)dev;
    return 0;
}

static int td_mem_info(int dev, size_t *free_bytes, size_t *total_bytes) {
    (void)dev;
    *free_bytes = (size_t)1 << 30;
    *total_bytes = (size_t)2 << 30;
    return 0;
}

/* Its live bytes as the back end counts them; it caches nothing. */
static int td_mem_stats(int dev, int64_t *live_bytes, int64_t *cached_bytes) {
    (void)dev;
    *live_bytes = atomic_load(&td_live_bytes);
    *cached_bytes = 0;
    return 0;
}

static const gad_devmem td_mem = {
    .name = "test:0",
    .type = GAD_DEVICE_OTHER,
    .storage_new = td_storage_new,
    .storage_free = td_storage_free,
    .to_host = td_to_host_copy,
    .from_host = td_from_host_copy,
    .copy_strided = gad__host_copy_strided, /* the CPU's kernels */
    .fill = gad__host_fill,
    .sync = td_sync,
    .mem_info = td_mem_info,
    .mem_stats = td_mem_stats,
};

static gad_backend td_backend;
static int TD = -1; /* its device number */

static void register_test_device(void) {
    td_backend = gad__cpu_backend; /* every kernel the CPU's */
    td_backend.name = "test";
    td_backend.mem = &td_mem;
    TD = gad__backend_register(&td_backend);
}

#endif
