/* device.c: the devices core knows by number: the host (device 0), whose
 * memory is core's own, and those that back ends register with the memory
 * half of their table (DESIGN §9). Copies between devices and the host go
 * through these hooks and nowhere else. */
#include "gad_int.h"

#include <pthread.h>
#include <unistd.h>

/* The host's hooks: core's storages and packing loops. */
static gad_storage *host_storage_new(int dev, size_t nbytes) {
    (void)dev;
    return gad__storage_new(nbytes);
}

static int host_copy(void *dst, const void *src, size_t n) {
    if (n) memcpy(dst, src, n);
    return 0;
}

static int host_sync(const char *op, int dev) {
    (void)op, (void)dev;
    return 0;
}

static int host_mem_info(int dev, size_t *free_bytes, size_t *total_bytes) {
    (void)dev;
    long page = sysconf(_SC_PAGESIZE), total = sysconf(_SC_PHYS_PAGES);
    long avail = sysconf(_SC_AVPHYS_PAGES);
    if (page <= 0 || total <= 0 || avail < 0) return -1;
    *free_bytes = (size_t)avail * (size_t)page;
    *total_bytes = (size_t)total * (size_t)page;
    return 0;
}

static int host_mem_stats(int dev, int64_t *live_bytes, int64_t *cached_bytes) {
    (void)dev;
    gad__host_mem_counts(live_bytes, cached_bytes);
    return 0;
}

const gad_devmem gad__host_mem = {
    .name = "cpu",
    .type = GAD_DEVICE_CPU,
    .index = 0,
    .storage_new = host_storage_new,
    .storage_free = NULL, /* host storages are freed by memory.c itself */
    .to_host = host_copy,
    .from_host = host_copy,
    .copy_strided = gad__host_copy_strided,
    .fill = gad__host_fill,
    .sync = host_sync,
    .mem_info = host_mem_info,
    .mem_stats = host_mem_stats,
};

const gad_devmem *gad__devmem[GAD_MAX_DEVICES] = {[GAD_DEV_HOST] = &gad__host_mem};

static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;

int gad__device_register(const gad_devmem *m) {
    int id = -1;
    pthread_mutex_lock(&dev_lock);
    for (int i = 1; i < GAD_MAX_DEVICES && id < 0; i++)
        if (!gad__devmem[i]) {
            gad__devmem[i] = m;
            id = i;
        }
    pthread_mutex_unlock(&dev_lock);
    return id;
}

const char *gad__device_name(int dev) {
    return dev >= 0 && dev < GAD_MAX_DEVICES && gad__devmem[dev] ? gad__devmem[dev]->name
                                                                 : "?";
}

void *gad__err_device(const char *op, int dev_a, int dev_b) {
    return gad__err(GAD_ERR_DEVICE, op,
                    "inputs are on different devices (%s and %s); nothing is "
                    "copied implicitly",
                    gad__device_name(dev_a), gad__device_name(dev_b));
}

/* ------------------------------------------------------ the default device */

_Thread_local int gad__default_dev;

gad_tensor *gad__own_on_default(const char *op, gad_tensor *t) {
    int dev = gad__default_dev;
    if (!t || GAD_LIKELY(dev == GAD_DEV_HOST)) return gad__own(t);
    gad_tensor *y = gad__to_dev(op, t, dev);
    gad_release(t);
    return gad__own(y);
}

gad_device gad_set_default_device(gad_device dev) {
    if (!gad__dev_valid(dev)) {
        gad__err(GAD_ERR_DEVICE, "set_default_device", "%d names no device", dev);
        return -1;
    }
    int old = gad__default_dev;
    gad__default_dev = dev;
    return old;
}

gad_device gad_default_device(void) { return gad__default_dev; }

gad_device gad_device_of(const gad_tensor *t) {
    if (!t) {
        gad__null_arg("device_of");
        return -1;
    }
    return t->dev;
}

void *gad_device_ptr(gad_tensor *t) {
    if (!t) return gad__null_arg("device_ptr");
    return gad__ptr(t);
}
