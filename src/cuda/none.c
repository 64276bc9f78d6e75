/* none.c: the CUDA back end's entry points in a build without CUDA
 * (GAD_CUDA off or nvcc not found): no driver for the registry, and for the
 * tests and gad-bench, which call cuda.h directly, no device and no error. */
#include "backend/driver.h"
#include "cuda/cuda.h"

#include <stdio.h>

const gad_driver *gad__cuda_driver(void) { return (const gad_driver *)0; }

int gad__cuda_init(void) { return 0; }
int gad__cuda_unavailable(char *msg, size_t cap) { return (void)msg, (void)cap, 0; }
int gad__cuda_device(int ord) { return (void)ord, -1; }
int gad__cuda_ordinal(int dev) { return (void)dev, -1; }

int gad__cuda_info(int dev, char *name, size_t cap, size_t *total, size_t *free_,
                   long long *pool_bytes) {
    (void)dev, (void)name, (void)cap, (void)total, (void)free_, (void)pool_bytes;
    return -1;
}

void gad__cuda_trim(void) {}
int gad__cuda_set_tf32(int on) { return (void)on, 0; }
void *gad__cuda_host_alloc(size_t n) { return (void)n, (void *)0; }
void gad__cuda_host_free(void *p) { (void)p; }
void *gad__cuda_stream(int dev) { return (void)dev, (void *)0; }
int gad__cuda_stream_done(int dev, char *msg, size_t cap) {
    (void)dev;
    if (cap) msg[0] = '\0';
    return -1;
}

int gad__cuda_bench_sgemm(int dev, int64_t M, int64_t N, int64_t K, const void *A,
                          const void *B, void *C, char *msg, size_t cap) {
    (void)M, (void)N, (void)K, (void)A, (void)B, (void)C;
    if (cap) snprintf(msg, cap, "device %d: this build has no CUDA back end", dev);
    return -1;
}

int gad__cuda_bench_copy(int dev, void *dst, const void *src, size_t n, char *msg, size_t cap) {
    (void)dst, (void)src, (void)n;
    if (cap) snprintf(msg, cap, "device %d: this build has no CUDA back end", dev);
    return -1;
}
