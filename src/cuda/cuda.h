/* cuda.h: the CUDA back end's entry points. The library reaches them only
 * through the back end's driver descriptor (gad__cuda_driver,
 * backend/driver.h), which the registry lists; the CUDA tests and gad-bench
 * call some directly. Nothing else of src/cuda is visible. Built with
 * GAD_CUDA; without it, none.c gives the same functions, which find no
 * device, and no descriptor. */
#ifndef GAD_CUDA_H
#define GAD_CUDA_H

#include <stddef.h>
#include <stdint.h>

/* Register every CUDA device as a gad device (once; later calls return the
 * same answer). Returns how many were registered: 0, and no error, when
 * gad was built without CUDA, when there is no driver or no GPU, or when
 * every device slot is taken. Thread-safe. */
int gad__cuda_init(void);
/* Why gad__cuda_init found no device when that is an error (the driver is
 * too old for the CUDA runtime gad was built with, or it failed): 1 and
 * the text in msg; 0 when devices were found, or when there is no driver
 * or no GPU (a machine without CUDA), or without CUDA in the build. */
int gad__cuda_unavailable(char *msg, size_t cap);

/* gad's device number of CUDA device ord (0..), -1 when none; and the CUDA
 * ordinal of gad device dev, -1 when dev is not a CUDA device. */
int gad__cuda_device(int ord);
int gad__cuda_ordinal(int dev);

/* The device's name (e.g. "NVIDIA H200"), total and free memory, and the
 * bytes its caching allocator holds (in use and cached). 0, or -1 when
 * dev is not a CUDA device. */
int gad__cuda_info(int dev, char *name, size_t cap, size_t *total, size_t *free_,
                   long long *pool_bytes);

/* Give the cached device memory of every CUDA device back to the driver
 * (waits for each device's work first). */
void gad__cuda_trim(void);

/* TF32 tensor-core arithmetic for f32 matrix products (off by default:
 * strict f32; the environment variable GAD_CUDA_TF32=1 turns it on at
 * start). Returns the previous setting. */
int gad__cuda_set_tf32(int on);

/* For the NCCL transport (src/dist/nccl.c, through gad__device_stream),
 * which queues its collectives after gad's kernels: the calling thread's stream (a cudaStream_t) for
 * CUDA device dev, made current; NULL when dev is not a CUDA device or
 * the stream cannot be made. And whether that stream's work is done
 * without waiting: 1 done, 0 still running, -1 failed (the device's fault
 * text in msg, taken). */
void *gad__cuda_stream(int dev);
int gad__cuda_stream_done(int dev, char *msg, size_t cap);

/* n bytes of page-locked host memory (gad_host_alloc), from which copies
 * to the GPUs go at the bus's speed: NULL when gad has no CUDA device or
 * the driver refuses; gad__cuda_host_free gives it back. */
void *gad__cuda_host_alloc(size_t n);
void gad__cuda_host_free(void *p);

/* For gad-bench's GPU workloads (bench/gad_bench.c), which time gad's ops
 * against what runs beneath them. On CUDA device dev, queued on the
 * calling thread's stream (gad_device_sync waits for them and reports a
 * fault they met):
 * - sgemm: row-major C [M, N] = A [M, K] B [K, N], f32, packed, device
 *   pointers (gad_device_ptr): one cuBLAS SGEMM call on the handle gad's
 *   matmul uses (gcu_gemm), strict f32 or TF32 as gad_set_tf32 says, into
 *   the caller's C (no allocation, no checks of the tensors);
 * - copy: n bytes from src to dst, both on the device (cudaMemcpyAsync,
 *   device to device).
 * 0, or -1 when dev is not a CUDA device or when the call, or work queued
 * before it, failed: the reason in msg (cap bytes; the fault is taken). */
int gad__cuda_bench_sgemm(int dev, int64_t M, int64_t N, int64_t K, const void *A,
                          const void *B, void *C, char *msg, size_t cap);
int gad__cuda_bench_copy(int dev, void *dst, const void *src, size_t n, char *msg, size_t cap);

#endif
