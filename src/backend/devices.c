/* devices.c: the public face of the devices (gad.h, "Devices"): counting,
 * naming and finding them, their memory, waiting for their work. The back
 * ends that need a driver (CUDA) are probed once, on the first call here,
 * so that a program that never asks for a device never loads a driver;
 * they are reached through their descriptors (backend/driver.h), which the
 * registry lists. */
#include "backend/backend.h"
#include "backend/driver.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static pthread_once_t probed = PTHREAD_ONCE_INIT;

/* The descriptors of the drivers this build has, probed. */
#define DRIVERS_MAX 8
static const gad_driver *drivers[DRIVERS_MAX];
static int ndrivers;

static void probe(void) {
    for (int i = 0; i < gad__ndrivers && ndrivers < DRIVERS_MAX; i++) {
        const gad_driver *d = gad__drivers[i]();
        if (!d) continue; /* not built */
        drivers[ndrivers++] = d;
        (void)d->probe();
    }
}

static void ensure_probed(void) { pthread_once(&probed, probe); }

int gad_device_count(gad_device_type type) {
    ensure_probed();
    int n = 0;
    for (int d = 0; d < GAD_MAX_DEVICES; d++)
        n += gad__dev_valid(d) && gad__devmem[d]->type == (int)type;
    return n;
}

gad_device gad_cuda(int index) {
    ensure_probed();
    for (int d = 1; d < GAD_MAX_DEVICES; d++)
        if (gad__dev_valid(d) && gad__devmem[d]->type == GAD_DEVICE_CUDA &&
            gad__devmem[d]->index == index)
            return d;
    int built = 0;
    char why[280], tail[300] = ""; /* why discovery failed, when it did */
    for (int i = 0; i < ndrivers; i++) {
        if (drivers[i]->type != GAD_DEVICE_CUDA) continue;
        built = 1;
        if (drivers[i]->unavailable && drivers[i]->unavailable(why, sizeof why))
            snprintf(tail, sizeof tail, "; %s", why);
    }
    gad__err(GAD_ERR_DEVICE, "cuda", "no CUDA device %d (%d found%s)%s", index,
             gad_device_count(GAD_DEVICE_CUDA), built ? "" : "; this build has no CUDA back end",
             tail);
    return -1;
}

int gad_device_type_of(gad_device dev) {
    ensure_probed();
    return gad__dev_valid(dev) ? gad__devmem[dev]->type : -1;
}

const char *gad_device_name(gad_device dev) {
    ensure_probed();
    return gad__device_name(dev);
}

gad_status gad_device_memory(gad_device dev, size_t *free_bytes, size_t *total_bytes) {
    ensure_probed();
    if (!gad__dev_valid(dev)) {
        gad__err(GAD_ERR_DEVICE, "device_memory", "%d names no device", dev);
        return GAD_ERR_DEVICE;
    }
    size_t f = 0, t = 0;
    const gad_devmem *m = gad__devmem[dev];
    if (!m->mem_info || m->mem_info(dev, &f, &t)) {
        gad__err(GAD_ERR_DEVICE, "device_memory", "%s does not say how much memory it has",
                 m->name);
        return GAD_ERR_DEVICE;
    }
    if (free_bytes) *free_bytes = f;
    if (total_bytes) *total_bytes = t;
    return GAD_OK;
}

gad_status gad_device_sync(gad_device dev) {
    ensure_probed();
    if (!gad__dev_valid(dev)) {
        gad__err(GAD_ERR_DEVICE, "device_sync", "%d names no device", dev);
        return GAD_ERR_DEVICE;
    }
    if (gad__devmem[dev]->sync("device_sync", dev)) {
        const gad_error *e = gad_last_error();
        return e ? e->kind : GAD_ERR_DEVICE;
    }
    return GAD_OK;
}

int gad_set_tf32(int on) {
    ensure_probed();
    int prev = 0, first = 1;
    for (int i = 0; i < ndrivers; i++)
        if (drivers[i]->set_tf32) {
            int p = drivers[i]->set_tf32(on ? 1 : 0);
            if (first) prev = p, first = 0;
        }
    return prev;
}

/* The driver that owns device dev (one per device type), if it has
 * streams. */
static const gad_driver *driver_of(int dev) {
    int type = gad_device_type_of(dev);
    for (int i = 0; i < ndrivers; i++)
        if (drivers[i]->type == type && drivers[i]->stream && drivers[i]->stream_done)
            return drivers[i];
    return NULL;
}

void *gad__device_stream(int dev) {
    const gad_driver *d = driver_of(dev);
    return d ? d->stream(dev) : NULL;
}

int gad__device_stream_done(int dev, char *msg, size_t cap) {
    const gad_driver *d = driver_of(dev);
    if (d) return d->stream_done(dev, msg, cap);
    if (cap) msg[0] = '\0';
    return -1;
}

/* A block of gad_host_alloc: a 64-byte header that says which allocator
 * gave it, and for pinned memory which driver (and keeps the memory after
 * it 64-aligned where the block is), then the caller's bytes. */
#define HOST_HDR 64
#define HOST_PINNED 0x64656e6e69702067ull /* "g pinned" */
#define HOST_PLAIN 0x6e69616c70206467ull  /* "gd plain" */

void *gad_host_alloc(size_t n) {
    ensure_probed();
    if (n > SIZE_MAX - HOST_HDR) {
        gad_error_set(GAD_ERR_MEMORY, "host_alloc", "%zu bytes is more than memory holds", n);
        return NULL;
    }
    uint64_t kind = HOST_PINNED, by = 0;
    char *p = NULL;
    for (int i = 0; i < ndrivers && !p; i++)
        if (drivers[i]->host_alloc && drivers[i]->host_free &&
            (p = drivers[i]->host_alloc(n + HOST_HDR)))
            by = (uint64_t)i;
    if (!p) {
        kind = HOST_PLAIN;
        p = gad_mem_alloc(n + HOST_HDR);
    }
    if (!p) {
        gad_error_set(GAD_ERR_MEMORY, "host_alloc", "cannot allocate %zu bytes", n);
        return NULL;
    }
    memcpy(p, &kind, sizeof kind);
    memcpy(p + sizeof kind, &by, sizeof by);
    return p + HOST_HDR;
}

/* The kind of a block of gad_host_alloc, 0 for anything else. */
static uint64_t host_kind(const void *p) {
    uint64_t kind;
    memcpy(&kind, (const char *)p - HOST_HDR, sizeof kind);
    return kind == HOST_PINNED || kind == HOST_PLAIN ? kind : 0;
}

int gad_host_is_pinned(const void *p) { return p && host_kind(p) == HOST_PINNED; }

void gad_host_free(void *p) {
    if (!p) return;
    uint64_t kind = host_kind(p);
    char *base = (char *)p - HOST_HDR;
    memset(base, 0, sizeof kind);
    uint64_t by = 0;
    if (kind == HOST_PINNED) {
        ensure_probed(); /* the drivers, as the thread that allocated saw them */
        memcpy(&by, base + sizeof kind, sizeof by);
    }
    if (kind == HOST_PINNED && by < (uint64_t)ndrivers) drivers[by]->host_free(base);
    else if (kind == HOST_PLAIN) gad_mem_free(base);
    else gad_error_set(GAD_ERR_DOMAIN, "host_free", "not a block of gad_host_alloc");
}

gad_status gad_device_mem_stats(gad_device dev, int64_t *live_bytes, int64_t *cached_bytes) {
    ensure_probed();
    if (!gad__dev_valid(dev)) {
        gad__err(GAD_ERR_DEVICE, "device_mem_stats", "%d names no device", dev);
        return GAD_ERR_DEVICE;
    }
    int64_t live = 0, cached = 0;
    const gad_devmem *m = gad__devmem[dev];
    if (!m->mem_stats || m->mem_stats(dev, &live, &cached)) {
        gad__err(GAD_ERR_DEVICE, "device_mem_stats", "%s does not count its memory", m->name);
        return GAD_ERR_DEVICE;
    }
    if (live_bytes) *live_bytes = live;
    if (cached_bytes) *cached_bytes = cached;
    return GAD_OK;
}
