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
#include <stdlib.h>
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

/* A block of gad_host_alloc: a 64-byte header (which keeps the memory
 * after it 64-aligned where the block is), then the caller's bytes. Which
 * allocator gave it is kept in a registry of the live blocks, not in the
 * header: gad_host_free of a pointer gad did not give, or of one already
 * freed, must be an error, and reading before a foreign pointer could
 * fault. */
#define HOST_HDR 64
enum { HOST_PLAIN = 1, HOST_PINNED = 2 };

/* Open addressing on the block's address (linear probing; a freed slot is
 * a tombstone until the table is rebuilt). */
typedef struct host_slot {
    uintptr_t p; /* 0: empty; 1: a freed slot */
    int kind;    /* HOST_PLAIN or HOST_PINNED */
    int by;      /* pinned: the driver that gave it (drivers[by]) */
} host_slot;
static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;
static host_slot *host_tab;
static size_t host_cap, host_used; /* used counts live and freed slots */

static size_t host_hash(uintptr_t p, size_t cap) {
    uint64_t h = (uint64_t)p * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 17) & (cap - 1);
}

/* The slot of p, or NULL (under host_lock). */
static host_slot *host_find(uintptr_t p) {
    if (!host_cap) return NULL;
    for (size_t i = host_hash(p, host_cap), k = 0; k < host_cap; k++, i = (i + 1) & (host_cap - 1)) {
        if (host_tab[i].p == p) return &host_tab[i];
        if (host_tab[i].p == 0) return NULL;
    }
    return NULL;
}

/* Record p; 0, or -1 when the table cannot grow (under host_lock). */
static int host_add(uintptr_t p, int kind, int by) {
    if (2 * (host_used + 1) > host_cap) { /* rebuild: twice the live blocks, at least 64 */
        size_t live = 0;
        for (size_t i = 0; i < host_cap; i++) live += host_tab[i].p > 1;
        size_t cap = 64;
        while (cap < 4 * (live + 1)) cap *= 2;
        /* calloc, not the installed allocator: gad's own bookkeeping,
         * which outlives the blocks (memory counters stay the user's) */
        host_slot *t = calloc(cap, sizeof *t);
        if (!t) return -1;
        for (size_t i = 0; i < host_cap; i++) {
            if (host_tab[i].p <= 1) continue;
            size_t j = host_hash(host_tab[i].p, cap);
            while (t[j].p) j = (j + 1) & (cap - 1);
            t[j] = host_tab[i];
        }
        free(host_tab);
        host_tab = t, host_cap = cap, host_used = live;
    }
    size_t j = host_hash(p, host_cap);
    while (host_tab[j].p > 1) j = (j + 1) & (host_cap - 1);
    if (host_tab[j].p == 0) host_used++;
    host_tab[j] = (host_slot){p, kind, by};
    return 0;
}

void *gad_host_alloc(size_t n) {
    ensure_probed();
    if (n > SIZE_MAX - HOST_HDR) {
        gad_error_set(GAD_ERR_MEMORY, "host_alloc", "%zu bytes is more than memory holds", n);
        return NULL;
    }
    int kind = HOST_PINNED, by = 0;
    char *p = NULL;
    for (int i = 0; i < ndrivers && !p; i++)
        if (drivers[i]->host_alloc && drivers[i]->host_free &&
            (p = drivers[i]->host_alloc(n + HOST_HDR)))
            by = i;
    if (!p) {
        kind = HOST_PLAIN;
        p = gad_mem_alloc(n + HOST_HDR);
    }
    if (!p) {
        gad_error_set(GAD_ERR_MEMORY, "host_alloc", "cannot allocate %zu bytes", n);
        return NULL;
    }
    pthread_mutex_lock(&host_lock);
    int rc = host_add((uintptr_t)(p + HOST_HDR), kind, by);
    pthread_mutex_unlock(&host_lock);
    if (rc != 0) {
        if (kind == HOST_PINNED) drivers[by]->host_free(p);
        else gad_mem_free(p);
        gad_error_set(GAD_ERR_MEMORY, "host_alloc", "cannot record a block of %zu bytes", n);
        return NULL;
    }
    return p + HOST_HDR;
}

int gad_host_is_pinned(const void *p) {
    if (!p) return 0;
    pthread_mutex_lock(&host_lock);
    host_slot *s = host_find((uintptr_t)p);
    int pinned = s && s->kind == HOST_PINNED;
    pthread_mutex_unlock(&host_lock);
    return pinned;
}

void gad_host_free(void *p) {
    if (!p) return;
    pthread_mutex_lock(&host_lock);
    host_slot *s = host_find((uintptr_t)p);
    int kind = s ? s->kind : 0, by = s ? s->by : 0;
    if (s) s->p = 1; /* a tombstone: the address may come back from malloc */
    pthread_mutex_unlock(&host_lock);
    char *base = (char *)p - HOST_HDR;
    if (kind == HOST_PINNED) drivers[by]->host_free(base);
    else if (kind == HOST_PLAIN) gad_mem_free(base);
    else
        gad_error_set(GAD_ERR_DOMAIN, "host_free",
                      "%p is not a live block of gad_host_alloc (never one, or freed already)", p);
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
