/* driver.h: the back ends whose devices come from a driver (CUDA), as the
 * rest of gad reaches them. Each gives one descriptor, through one entry
 * point that the registry lists (registry.c, gad__drivers): the registry
 * is the one place in src/backend that names a back end, and nothing else
 * of a back end's folder is named outside it (tests/layers/check.sh).
 * The drivers are probed once, on the first device call (devices.c), so
 * that a program that never asks for a device never loads one. What is per
 * tensor goes through each device's table (backend.h); a descriptor holds
 * what is not: the probe, the TF32 switch, pinned host memory, and the
 * stream that dist's NCCL transport queues its collectives on. */
#ifndef GAD_BACKEND_DRIVER_H
#define GAD_BACKEND_DRIVER_H

#include <stddef.h>

typedef struct gad_driver {
    const char *name; /* "cuda" */
    int type;         /* the gad_device_type of its devices */
    /* Register the driver's devices (gad__backend_register), once: later
     * calls return the same count. 0, and no error, when there is no
     * driver, no device, or no free device slot. Thread-safe. */
    int (*probe)(void);
    /* Why the probe found no device although a driver is there (a driver
     * too old for the runtime, a failing driver): 1 and the reason in msg,
     * or 0 when there is nothing to tell (no driver, or devices found). */
    int (*unavailable)(char *msg, size_t cap);
    /* Each of the rest may be NULL when the driver has no such thing. */
    /* TF32 for f32 matrix products; returns the previous setting. */
    int (*set_tf32)(int on);
    /* n bytes of page-locked host memory, NULL when refused; its free. */
    void *(*host_alloc)(size_t n);
    void (*host_free)(void *p);
    /* The calling thread's stream on device dev, made current; NULL when
     * dev is not the driver's or the stream cannot be made. And whether its
     * work is done without waiting: 1 done, 0 running, -1 failed (the
     * device's fault text in msg, taken). */
    void *(*stream)(int dev);
    int (*stream_done)(int dev, char *msg, size_t cap);
} gad_driver;

/* The drivers of this build, by their entry points (registry.c); an entry
 * gives NULL where its back end was not built (src/cuda/none.c). */
extern const gad_driver *(*const gad__drivers[])(void);
extern const int gad__ndrivers;

/* The entry point of each driver's back end: named by registry.c only. */
const gad_driver *gad__cuda_driver(void);

/* Device dev's stream and its state, from the driver that owns dev (the
 * descriptor's stream and stream_done; devices.c): NULL, and -1 with an
 * empty msg, when no driver owns dev. For dist's NCCL transport. */
void *gad__device_stream(int dev);
int gad__device_stream_done(int dev, char *msg, size_t cap);

#endif
