/* runtime.cu: the CUDA back end's runtime: devices, one stream and one
 * cuBLAS handle per (thread, device), the caching allocator, the pending
 * fault, the record of the deferred index checks, and the copies, fills
 * and conversions of the memory half of the table (gad_devmem).
 *
 * Memory is the device's stream-ordered pool (cudaMallocAsync, CUDA
 * Programming Guide, "Stream Ordered Memory Allocator"), with its release
 * threshold raised to the maximum: freed blocks stay in the pool and are
 * handed out again, so a training step that reuses its sizes does not
 * reach the driver's allocator. Blocks are reused in stream order. A
 * storage remembers the stream of the thread that made it (its owner,
 * below): freed by another thread, its free waits for both streams, so
 * that the pool cannot hand the block out again while the kernels the
 * making thread queued still write it; work of a third thread that
 * touches the tensor must still be waited for (gad's sync) before the
 * free.
 *
 * Faults: a CUDA call that fails records the thread's pending fault for
 * that device (the first one is kept). Kernels are queued, so an error in
 * one shows at the next synchronising call: gcu_sync, gcu_to_host,
 * gcu_from_host and the entries that wait for an answer (all_finite,
 * sumsq). The back end never aborts. A fault in a kernel itself (an
 * illegal address, a trap, an assert: gcu_error_is_sticky) ends the
 * device's CUDA context for the rest of the process, and CUDA returns it
 * from every later call there: the device is then marked dead (process
 * wide, the first such fault kept), and every later entry on it fails at
 * once with a fault naming that first one, instead of failing in ways
 * that look like other errors (an allocation that looks out of memory).
 * The GPU side of this, and the cross-thread free, are compiled and not
 * yet run on a GPU (issue 32); the logic is tested on the CPU
 * (tests/cuda/test_cuda_host.c).
 *
 * Index checks do not wait (index.cu, masked_ce.cu):
 * their kernels note the first bad index of the thread's checks on a
 * device in a record of pinned host memory mapped into the device's
 * address space (cudaHostAllocMapped), which the host reads, without a
 * copy, after each of the waits above (late_collect): the error is then
 * pending beside the fault until the C side takes it (gcu_index_take), and
 * the record is cleared, so that the device stays usable. */
#include "cuda/cuda_int.cuh"

#include <atomic>
#include <dlfcn.h>
#include <new>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gad.h"

/* ------------------------------------------------------------ cuBLAS */

/* cuBLAS is opened at run time (dlopen), not linked: a gad built with CUDA
 * then needs neither the driver nor the toolkit's libraries on a machine
 * that has no GPU, and libgad.so names no CUDA library. The functions gad
 * calls, by their names in cublas_api.h. */
gcu_cublas_fns gcu_cb;

static pthread_once_t cb_once = PTHREAD_ONCE_INIT;
static bool cb_ok;

#define CB_LOAD(h, f) (gcu_cb.f = (decltype(&::f))dlsym((h), #f)) != NULL

static void cb_open(void) {
    void *h = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    cb_ok = CB_LOAD(h, cublasCreate_v2) && CB_LOAD(h, cublasDestroy_v2) &&
            CB_LOAD(h, cublasSetStream_v2) && CB_LOAD(h, cublasSetMathMode) &&
            CB_LOAD(h, cublasGetStatusString) && CB_LOAD(h, cublasSgemm_v2_64) &&
            CB_LOAD(h, cublasDgemm_v2_64) && CB_LOAD(h, cublasSgemmStridedBatched_64) &&
            CB_LOAD(h, cublasDgemmStridedBatched_64);
}

bool gcu_cublas_open(void) {
    pthread_once(&cb_once, cb_open);
    return cb_ok;
}

/* ------------------------------------------------------------ per thread */

/* A thread's stream for a device, shared with the storages made on it
 * (gcu_storage_alloc): a reference for the thread and one for each such
 * storage. The thread waits for the stream when it ends; the stream is
 * destroyed by whoever drops the last reference, so that a storage freed
 * after its thread ended can still order its free after that stream. */
struct gcu_owner {
    cudaStream_t s;
    int ord;
    std::atomic<long> refs;
};

static void owner_drop(gcu_owner *o) {
    if (!o || o->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    if (cudaSetDevice(o->ord) == cudaSuccess) cudaStreamDestroy(o->s);
    cudaGetLastError();
    delete o;
}

struct gcu_tls {
    cudaStream_t stream[GCU_MAXDEV];
    gcu_owner *own[GCU_MAXDEV]; /* the stream above, shared */
    cudaEvent_t ev[GCU_MAXDEV]; /* for the frees of other threads' storages */
    cublasHandle_t blas[GCU_MAXDEV];
    int blas_tf32[GCU_MAXDEV]; /* the math mode the handle has: -1 unset */
    bool fault[GCU_MAXDEV];
    char msg[GCU_MAXDEV][256];
    /* index checks: their state in device memory, their record (the host's
     * pointer and the device's to the same mapped bytes), and the error a
     * wait found there, pending until taken */
    gcu_chk *chk[GCU_MAXDEV];
    gcu_index_fault *rec[GCU_MAXDEV], *rec_dev[GCU_MAXDEV];
    bool late[GCU_MAXDEV];
    gcu_index_fault late_f[GCU_MAXDEV];
};

static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;
/* The thread's state: made on first use, freed by the key's destructor
 * when the thread ends (which clears this, so that a storage freed later
 * in the thread's exit, by another destructor, makes a fresh one instead
 * of touching freed memory). */
static thread_local gcu_tls *mine = NULL;

/* A thread that ends gives its streams and handles back (the main
 * thread's live until the process ends, when the driver reclaims them). */
static void tls_free(void *p) {
    gcu_tls *t = (gcu_tls *)p;
    for (int d = 0; d < GCU_MAXDEV; d++) {
        if (!t->stream[d]) continue;
        if (cudaSetDevice(d) == cudaSuccess) {
            cudaStreamSynchronize(t->stream[d]);
            if (t->blas[d]) gcu_cb.cublasDestroy_v2(t->blas[d]);
            if (t->chk[d]) cudaFree(t->chk[d]);
            if (t->rec[d]) cudaFreeHost(t->rec[d]);
            if (t->ev[d]) cudaEventDestroy(t->ev[d]);
        }
        owner_drop(t->own[d]); /* the stream, unless a storage still holds it */
    }
    if (mine == t) mine = NULL;
    free(t);
}

/* Without a key (it could not be made) threads keep their state: a leak at
 * each thread's end, nothing worse. */
static bool tls_key_ok;
static void tls_init(void) { tls_key_ok = pthread_key_create(&tls_key, tls_free) == 0; }

/* The thread's state, NULL only when even that small block could not be
 * had. */
static gcu_tls *tls(void) {
    if (mine) return mine;
    pthread_once(&tls_once, tls_init);
    gcu_tls *t = (gcu_tls *)calloc(1, sizeof *t);
    if (!t) return NULL;
    for (int d = 0; d < GCU_MAXDEV; d++) t->blas_tf32[d] = -1;
    if (tls_key_ok) pthread_setspecific(tls_key, t);
    mine = t;
    return t;
}

static void fault_set(int ord, const char *what, const char *why) {
    gcu_tls *t = tls();
    if (!t || ord < 0 || ord >= GCU_MAXDEV || t->fault[ord]) return;
    t->fault[ord] = true;
    snprintf(t->msg[ord], sizeof t->msg[ord], "cuda:%d: %s failed: %s", ord, what, why);
}

extern "C" void gcu_fault_set(int ord, const char *what) {
    fault_set(ord, what, "out of device memory for scratch");
}

/* ------------------------------------------------------- dead devices */

/* The errors after which CUDA returns the same error from every later call
 * in the process on that device (driver_types.h: "the process must be
 * terminated and relaunched"): faults in a kernel, not in a call. */
extern "C" int gcu_error_is_sticky(int e) {
    switch ((cudaError_t)e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorTensorMemoryLeak:
    case cudaErrorContained:
    case cudaErrorMpsClientTerminated:
    case cudaErrorExternalDevice:
        return 1;
    default:
        return 0;
    }
}

/* Per device, process wide: 0 usable, 1 being marked, 2 dead (dead_msg
 * written before the 2 is stored, read after it is loaded). */
static std::atomic<int> dead[GCU_MAXDEV];
static char dead_msg[GCU_MAXDEV][128];

/* Mark ord dead after a sticky fault; the first one's text is kept. */
static void mark_dead(int ord, const char *what, cudaError_t e) {
    if (ord < 0 || ord >= GCU_MAXDEV) return;
    int want = 0;
    if (!dead[ord].compare_exchange_strong(want, 1)) return;
    snprintf(dead_msg[ord], sizeof dead_msg[ord], "%s failed: %s", what, cudaGetErrorString(e));
    dead[ord].store(2, std::memory_order_release);
}

/* Whether ord is dead; its first fault's text in msg then. */
extern "C" int gcu_device_dead(int ord, char *msg, size_t cap) {
    if (ord < 0 || ord >= GCU_MAXDEV || dead[ord].load(std::memory_order_acquire) != 2) return 0;
    if (msg && cap) snprintf(msg, cap, "%s", dead_msg[ord]);
    return 1;
}

/* On a dead device: the thread's fault says so (naming the first fault),
 * and the entry must stop. */
static bool is_dead(int ord) {
    char first[128];
    if (!gcu_device_dead(ord, first, sizeof first)) return false;
    gcu_tls *t = tls();
    if (t && !t->fault[ord]) {
        t->fault[ord] = true;
        snprintf(t->msg[ord], sizeof t->msg[ord],
                 "cuda:%d is unusable since a fault on the device (%s): "
                 "restart the process to use it again", ord, first);
    }
    return true;
}

bool gcu_check(int ord, cudaError_t e, const char *what) {
    if (e == cudaSuccess) return false;
    if (gcu_error_is_sticky(e)) {
        mark_dead(ord, what, e);
        char why[200];
        snprintf(why, sizeof why, "%s (the device cannot be used again in this process)",
                 cudaGetErrorString(e));
        fault_set(ord, what, why);
        return true;
    }
    fault_set(ord, what, cudaGetErrorString(e));
    return true;
}

extern "C" int gcu_fault_inject(int ord, int e, const char *what) {
    return gcu_check(ord, (cudaError_t)e, what) ? -1 : 0;
}

bool gcu_check_blas(int ord, cublasStatus_t s, const char *what) {
    if (s == CUBLAS_STATUS_SUCCESS) return false;
    fault_set(ord, what, gcu_cb.cublasGetStatusString ? gcu_cb.cublasGetStatusString(s) : "cuBLAS error");
    return true;
}

extern "C" int gcu_fault_take(int ord, char *msg, size_t cap) {
    gcu_tls *t = tls();
    if (!t || ord < 0 || ord >= GCU_MAXDEV || !t->fault[ord]) return 0;
    if (msg && cap) snprintf(msg, cap, "%s", t->msg[ord]);
    t->fault[ord] = false;
    return 1;
}

/* --------------------------------------------------------- index checks */

bool gcu_checks(int ord, gcu_chk **chk, gcu_index_fault **rec) {
    cudaStream_t s = gcu_stream(ord);
    if (!s) return false;
    gcu_tls *t = tls();
    if (!t->chk[ord]) {
        void *h = NULL, *d = NULL, *c = NULL;
        const char *what = "the index checks' record";
        if (gcu_check(ord, cudaHostAlloc(&h, sizeof(gcu_index_fault), cudaHostAllocMapped), what) ||
            gcu_check(ord, cudaHostGetDevicePointer(&d, h, 0), what) ||
            gcu_check(ord, cudaMalloc(&c, sizeof(gcu_chk)), what) ||
            gcu_check(ord, cudaMemsetAsync(c, 0xff, sizeof(gcu_chk), s), what)) {
            cudaGetLastError(); /* not sticky: the fault says it */
            if (c) cudaFree(c);
            if (h) cudaFreeHost(h);
            return false;
        }
        memset(h, 0, sizeof(gcu_index_fault));
        t->rec[ord] = (gcu_index_fault *)h;
        t->rec_dev[ord] = (gcu_index_fault *)d;
        t->chk[ord] = (gcu_chk *)c; /* key none, open (all bytes 0xff) */
    }
    *chk = t->chk[ord];
    *rec = t->rec_dev[ord];
    return true;
}

/* After a wait on the thread's stream s for ord: an error the checks noted
 * moves from the record to the thread's pending one (the first is kept
 * until taken), the record is cleared, and the checks' device state is
 * reset on the stream for the next ones; also after a fault, which may
 * have stopped a check between its two kernels. Whether an index error is
 * pending. */
static bool late_collect(gcu_tls *t, int ord, cudaStream_t s) {
    volatile gcu_index_fault *r = t->rec[ord];
    if (!r) return t->late[ord];
    bool reset = t->fault[ord];
    if (r->set) {
        if (!t->late[ord]) {
            gcu_index_fault *f = &t->late_f[ord];
            f->pos = r->pos;
            f->value = r->value;
            f->lo = r->lo;
            f->hi = r->hi;
            f->target = r->target;
            for (size_t i = 0; i < sizeof f->op; i++) f->op[i] = r->op[i];
            f->op[sizeof f->op - 1] = '\0';
            f->set = 1;
            t->late[ord] = true;
        }
        r->set = 0;
        reset = true;
    }
    if (reset)
        gcu_check(ord, cudaMemsetAsync(t->chk[ord], 0xff, sizeof(gcu_chk), s), "index check reset");
    return t->late[ord];
}

/* After a wait: -1 when a fault or an index error is pending, else 0. */
static int waited(int ord, cudaStream_t s) {
    gcu_tls *t = tls();
    if (!t) return -1;
    bool late = late_collect(t, ord, s);
    return t->fault[ord] || late ? -1 : 0;
}

extern "C" int gcu_index_take(int ord, gcu_index_fault *f) {
    gcu_tls *t = tls();
    if (!t || ord < 0 || ord >= GCU_MAXDEV || !t->late[ord]) return 0;
    if (f) *f = t->late_f[ord];
    t->late[ord] = false;
    return 1;
}

/* ------------------------------------------------------------ devices */

static int ndev = -1;
static cudaMemPool_t pools[GCU_MAXDEV];
static std::atomic<int> tf32_on(0);

/* CUDA's version numbers (1000 major + 10 minor) as "13.0". */
static void cuda_version(char *buf, size_t cap, int v) {
    snprintf(buf, cap, "%d.%d", v / 1000, v % 1000 / 10);
}

extern "C" int gcu_discovery_verdict(int err, int count, int driver, int runtime, char *msg,
                                     size_t cap) {
    if (msg && cap) msg[0] = '\0';
    if (err == cudaSuccess) return count > 0 ? count : 0;
    /* no GPU, or no driver at all (cudaDriverGetVersion gives 0 then):
     * a machine without CUDA, which is no failure */
    if (err == cudaErrorNoDevice || driver <= 0) return 0;
    char dv[16], rv[16];
    cuda_version(dv, sizeof dv, driver);
    cuda_version(rv, sizeof rv, runtime);
    if (!msg || !cap) return -1;
    if (driver < runtime)
        snprintf(msg, cap,
                 "the NVIDIA driver is too old: it supports CUDA up to %s, and this gad was "
                 "built with the CUDA %s runtime (%s)%s",
                 dv, rv, cudaGetErrorString((cudaError_t)err),
                 runtime / 1000 == 13 ? "; CUDA 13 needs driver R580 or newer" : "");
    else
        snprintf(msg, cap, "cudaGetDeviceCount failed: %s (driver for CUDA %s, runtime CUDA %s)",
                 cudaGetErrorString((cudaError_t)err), dv, rv);
    return -1;
}

/* A test's stand-in for the answers of the three CUDA calls of the
 * discovery (gcu_discovery_fake), and the reason discovery failed. */
static bool fake_on;
static int fake_v[4];
static char disc_why[300];
static pthread_mutex_t disc_lock = PTHREAD_MUTEX_INITIALIZER;

extern "C" void gcu_discovery_fake(int err, int count, int driver, int runtime) {
    pthread_mutex_lock(&disc_lock);
    fake_on = true;
    fake_v[0] = err;
    fake_v[1] = count;
    fake_v[2] = driver;
    fake_v[3] = runtime;
    pthread_mutex_unlock(&disc_lock);
}

extern "C" int gcu_discovery_error(char *msg, size_t cap) {
    pthread_mutex_lock(&disc_lock);
    int failed = disc_why[0] != '\0';
    if (failed && msg && cap) snprintf(msg, cap, "%s", disc_why);
    pthread_mutex_unlock(&disc_lock);
    return failed;
}

extern "C" int gcu_device_count(void) {
    pthread_mutex_lock(&disc_lock);
    if (ndev < 0) {
        int n = 0, err = 0, driver = 0, runtime = 0;
        if (fake_on) {
            err = fake_v[0], n = fake_v[1], driver = fake_v[2], runtime = fake_v[3];
        } else {
            err = (int)cudaGetDeviceCount(&n);
            if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
            if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = CUDART_VERSION;
            cudaGetLastError();
        }
        n = gcu_discovery_verdict(err, n, driver, runtime, disc_why, sizeof disc_why);
        if (n < 0) n = 0;
        ndev = n > GCU_MAXDEV ? GCU_MAXDEV : n;
        const char *e = getenv("GAD_CUDA_TF32");
        if (e && e[0] == '1') tf32_on.store(1);
    }
    pthread_mutex_unlock(&disc_lock);
    return ndev;
}

extern "C" int gcu_device_info(int ord, char *name, size_t cap, size_t *total, size_t *free_) {
    if (is_dead(ord)) return -1;
    cudaDeviceProp p;
    if (gcu_check(ord, cudaGetDeviceProperties(&p, ord), "cudaGetDeviceProperties")) return -1;
    if (name && cap) snprintf(name, cap, "%s", p.name);
    if (total) *total = p.totalGlobalMem;
    if (free_) {
        size_t f = 0, t = 0;
        if (cudaSetDevice(ord) != cudaSuccess || cudaMemGetInfo(&f, &t) != cudaSuccess) {
            cudaGetLastError();
            f = 0;
        }
        *free_ = f;
    }
    return 0;
}

extern "C" int gcu_device_setup(int ord) {
    if (gcu_check(ord, cudaSetDevice(ord), "cudaSetDevice")) return -1;
    if (gcu_check(ord, cudaDeviceGetDefaultMemPool(&pools[ord], ord), "cudaDeviceGetDefaultMemPool"))
        return -1;
    uint64_t keep = UINT64_MAX; /* cache every freed block */
    if (gcu_check(ord, cudaMemPoolSetAttribute(pools[ord], cudaMemPoolAttrReleaseThreshold, &keep),
                  "cudaMemPoolSetAttribute"))
        return -1;
    return 0;
}

extern "C" int gcu_set_tf32(int on) { return tf32_on.exchange(on ? 1 : 0); }

extern "C" void *gcu_host_alloc(size_t n) {
    void *p = NULL;
    if (cudaHostAlloc(&p, n ? n : 1, cudaHostAllocPortable) != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: clear it */
        return NULL;
    }
    return p;
}

extern "C" void gcu_host_free(void *p) {
    if (p && cudaFreeHost(p) != cudaSuccess) (void)cudaGetLastError();
}

cudaStream_t gcu_stream(int ord) {
    gcu_tls *t = tls();
    if (!t || is_dead(ord)) return NULL;
    if (gcu_check(ord, cudaSetDevice(ord), "cudaSetDevice")) return NULL;
    if (!t->stream[ord]) {
        cudaStream_t s;
        if (gcu_check(ord, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                      "cudaStreamCreate"))
            return NULL;
        gcu_owner *o = new (std::nothrow) gcu_owner;
        if (!o) {
            cudaStreamDestroy(s);
            fault_set(ord, "cudaStreamCreate", "out of host memory");
            return NULL;
        }
        o->s = s;
        o->ord = ord;
        o->refs.store(1); /* the thread's */
        t->own[ord] = o;
        t->stream[ord] = s;
    }
    return t->stream[ord];
}

cublasHandle_t gcu_blas(int ord) {
    cudaStream_t s = gcu_stream(ord);
    if (!s) return NULL;
    gcu_tls *t = tls();
    if (!t->blas[ord]) {
        if (!gcu_cublas_open()) {
            fault_set(ord, "cuBLAS", "libcublas.so.13 could not be loaded");
            return NULL;
        }
        cublasHandle_t h;
        if (gcu_check_blas(ord, gcu_cb.cublasCreate_v2(&h), "cublasCreate")) return NULL;
        if (gcu_check_blas(ord, gcu_cb.cublasSetStream_v2(h, s), "cublasSetStream")) {
            gcu_cb.cublasDestroy_v2(h);
            return NULL;
        }
        t->blas[ord] = h;
    }
    int want = tf32_on.load();
    if (t->blas_tf32[ord] != want) {
        /* strict f32 unless asked: CUBLAS_DEFAULT_MATH never uses TF32 for
         * SGEMM (cuBLAS documentation, cublasMath_t) */
        cublasMath_t mode = want ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH;
        if (gcu_check_blas(ord, gcu_cb.cublasSetMathMode(t->blas[ord], mode), "cublasSetMathMode"))
            return NULL;
        t->blas_tf32[ord] = want;
    }
    return t->blas[ord];
}

/* ------------------------------------------------------------ memory */

extern "C" void *gcu_alloc(int ord, size_t n) {
    cudaStream_t s = gcu_stream(ord);
    if (!s) return NULL;
    void *p = NULL;
    size_t want = n ? n : 1;
    cudaError_t e = cudaMallocAsync(&p, want, s);
    if (e == cudaErrorMemoryAllocation) {
        /* out of memory: wait for the frees this thread queued so far, give
         * the cache back to the driver and try once more. Only this
         * thread's stream: the whole device could be busy for long with
         * another thread's work (a collective waiting for another rank). */
        cudaGetLastError();
        if (gcu_check(ord, cudaStreamSynchronize(s), "the queued work")) return NULL;
        cudaMemPoolTrimTo(pools[ord], 0);
        p = NULL;
        e = cudaMallocAsync(&p, want, s);
    }
    if (e != cudaSuccess) {
        cudaGetLastError(); /* not sticky: the device stays usable */
        if (e != cudaErrorMemoryAllocation) gcu_check(ord, e, "cudaMallocAsync");
        return NULL;
    }
    return p;
}

extern "C" void gcu_free(int ord, void *p) {
    if (!p) return;
    cudaStream_t s = gcu_stream(ord);
    if (s) gcu_check(ord, cudaFreeAsync(p, s), "cudaFreeAsync");
}

extern "C" void *gcu_storage_alloc(int ord, size_t n, void **owner) {
    *owner = NULL;
    void *p = gcu_alloc(ord, n);
    if (!p) return NULL;
    gcu_owner *o = tls()->own[ord]; /* made with the stream gcu_alloc used */
    o->refs.fetch_add(1, std::memory_order_relaxed);
    *owner = o;
    return p;
}

/* The free is queued on this thread's stream, after the work queued there
 * and, when another thread made the storage, after the work queued so far
 * on that thread's stream (an event recorded there, waited for here): the
 * pool may hand the block out again, on any stream, only after both. A
 * dead device frees nothing (its memory goes with the process). Compiled,
 * not yet run on a GPU (issue 32; test_cuda's a_free_waits_for_the_maker
 * is its check). */
extern "C" void gcu_storage_free(int ord, void *p, void *owner) {
    gcu_owner *o = (gcu_owner *)owner;
    cudaStream_t s = p ? gcu_stream(ord) : NULL;
    if (s && o && o->s != s) {
        gcu_tls *t = tls();
        if (!t->ev[ord] && cudaEventCreateWithFlags(&t->ev[ord], cudaEventDisableTiming))
            t->ev[ord] = NULL;
        /* the event reused: a wait takes the state it had when queued */
        if (!t->ev[ord] || cudaEventRecord(t->ev[ord], o->s) != cudaSuccess ||
            cudaStreamWaitEvent(s, t->ev[ord], 0) != cudaSuccess) {
            cudaGetLastError();
            gcu_check(ord, cudaStreamSynchronize(o->s), "the making thread's work");
        }
    }
    if (s) gcu_check(ord, cudaFreeAsync(p, s), "cudaFreeAsync");
    owner_drop(o);
}

void *gcu_scratch(int ord, size_t n) {
    void *p = gcu_alloc(ord, n);
    if (!p) gcu_fault_set(ord, "scratch");
    return p;
}

extern "C" long long gcu_pool_bytes(int ord) {
    uint64_t v = 0;
    if (!pools[ord] ||
        cudaMemPoolGetAttribute(pools[ord], cudaMemPoolAttrReservedMemCurrent, &v) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    return (long long)v;
}

extern "C" int gcu_pool_stats(int ord, long long *reserved, long long *used) {
    uint64_t r = 0, u = 0;
    if (ord < 0 || ord >= GCU_MAXDEV || !pools[ord] ||
        cudaMemPoolGetAttribute(pools[ord], cudaMemPoolAttrReservedMemCurrent, &r) != cudaSuccess ||
        cudaMemPoolGetAttribute(pools[ord], cudaMemPoolAttrUsedMemCurrent, &u) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    *reserved = (long long)r;
    *used = (long long)u;
    return 0;
}

extern "C" void gcu_trim(int ord) {
    if (!pools[ord] || cudaSetDevice(ord) != cudaSuccess) return;
    cudaDeviceSynchronize();
    cudaMemPoolTrimTo(pools[ord], 0);
    cudaGetLastError();
}

extern "C" int gcu_ptr_device(const void *p) {
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    return a.type == cudaMemoryTypeDevice ? a.device : -1;
}

static int copy_wait(int ord, void *dst, const void *src, size_t n, cudaMemcpyKind kind,
                     const char *what) {
    cudaStream_t s = gcu_stream(ord);
    if (!s) return -1;
    if (n && gcu_check(ord, cudaMemcpyAsync(dst, src, n, kind, s), what)) return -1;
    gcu_check(ord, cudaStreamSynchronize(s), what);
    return waited(ord, s); /* an earlier kernel's fault, or a bad index it found */
}

extern "C" int gcu_to_host(int ord, void *dst, const void *src, size_t n) {
    return copy_wait(ord, dst, src, n, cudaMemcpyDeviceToHost, "copy to the host");
}

extern "C" int gcu_from_host(int ord, void *dst, const void *src, size_t n) {
    return copy_wait(ord, dst, src, n, cudaMemcpyHostToDevice, "copy from the host");
}

extern "C" void *gcu_stream_handle(int ord) { return (void *)gcu_stream(ord); }

extern "C" int gcu_stream_done(int ord) {
    cudaStream_t s = gcu_stream(ord);
    if (!s) return -1;
    cudaError_t e = cudaStreamQuery(s);
    if (e == cudaErrorNotReady) return 0;
    if (gcu_check(ord, e, "the queued work")) return -1;
    gcu_tls *t = tls();
    return t && t->fault[ord] ? -1 : 1;
}

extern "C" int gcu_sync(int ord) {
    cudaStream_t s = gcu_stream(ord);
    if (!s) return -1;
    gcu_check(ord, cudaStreamSynchronize(s), "the queued work");
    return waited(ord, s);
}

/* ------------------------------------------------ copies, fills, casts */

template <class U>
__global__ void k_copy(gcu_iter it, const U *src, U *dst) {
    GCU_FOR(i, it.n) {
        int64_t off[2];
        gcu_offsets(it, i, 2, off);
        dst[off[1]] = src[off[0]];
    }
}

extern "C" void gcu_copy(int ord, size_t es, const gcu_iter *it, const void *src, void *dst) {
    if (it->n == 0) return;
    cudaStream_t s = gcu_stream(ord);
    if (!s) return;
    if (it->nd == 1 && it->st[0][0] == 1 && it->st[1][0] == 1) {
        gcu_check(ord, cudaMemcpyAsync(dst, src, (size_t)it->n * es, cudaMemcpyDeviceToDevice, s),
                  "device copy");
        return;
    }
    if (es == 4) k_copy<uint32_t><<<gcu_blocks(it->n), GCU_THREADS, 0, s>>>(
        *it, (const uint32_t *)src, (uint32_t *)dst);
    else if (es == 1) k_copy<uint8_t><<<gcu_blocks(it->n), GCU_THREADS, 0, s>>>(
        *it, (const uint8_t *)src, (uint8_t *)dst);
    else k_copy<uint64_t><<<gcu_blocks(it->n), GCU_THREADS, 0, s>>>(
        *it, (const uint64_t *)src, (uint64_t *)dst);
    GCU_LAUNCHED(ord, "strided copy");
}

template <class T>
__global__ void k_fill(T *p, int64_t n, T v) {
    GCU_FOR(i, n) p[i] = v;
}

extern "C" void gcu_fill(int ord, void *p, int dtype, int64_t n, double v) {
    if (n <= 0) return;
    cudaStream_t s = gcu_stream(ord);
    if (!s) return;
    if (v == 0.0 && !signbit(v)) { /* all-zero bits, whatever the dtype */
        size_t es = dtype == GAD_F32 ? 4 : dtype == GAD_BOOL ? 1 : 8;
        gcu_check(ord, cudaMemsetAsync(p, 0, (size_t)n * es, s), "fill");
        return;
    }
    if (dtype == GAD_F32) k_fill<float><<<gcu_blocks(n), GCU_THREADS, 0, s>>>((float *)p, n, (float)v);
    else if (dtype == GAD_F64) k_fill<double><<<gcu_blocks(n), GCU_THREADS, 0, s>>>((double *)p, n, v);
    else if (dtype == GAD_BOOL) k_fill<uint8_t><<<gcu_blocks(n), GCU_THREADS, 0, s>>>((uint8_t *)p, n, (uint8_t)(v != 0));
    else k_fill<int64_t><<<gcu_blocks(n), GCU_THREADS, 0, s>>>((int64_t *)p, n, (int64_t)v);
    GCU_LAUNCHED(ord, "fill");
}

/* gad_cast's conversions (SPEC 1.9): float -> i64 truncates toward zero,
 * saturates, NaN -> 0; i64 -> f32 in one rounding. */
template <class To, class From>
__device__ __forceinline__ To cvt(From v) {
    return (To)v;
}
template <>
__device__ __forceinline__ int64_t cvt<int64_t, double>(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}
template <>
__device__ __forceinline__ int64_t cvt<int64_t, float>(float v) {
    return cvt<int64_t, double>((double)v);
}
/* to bool: nonzero, NaN included */
template <>
__device__ __forceinline__ uint8_t cvt<uint8_t, double>(double v) {
    return v != 0;
}
template <>
__device__ __forceinline__ uint8_t cvt<uint8_t, float>(float v) {
    return v != 0;
}
template <>
__device__ __forceinline__ uint8_t cvt<uint8_t, int64_t>(int64_t v) {
    return v != 0;
}

template <class From, class To>
__global__ void k_convert(gcu_iter it, const From *x, To *y) {
    GCU_FOR(i, it.n) {
        int64_t off[2];
        gcu_offsets(it, i, 1, off);
        y[i] = cvt<To, From>(x[off[0]]);
    }
}

template <class From>
static void convert_from(cudaStream_t s, const gcu_iter *it, const void *x, void *y, int to) {
    unsigned g = gcu_blocks(it->n);
    if (to == GAD_F32) k_convert<From, float><<<g, GCU_THREADS, 0, s>>>(*it, (const From *)x, (float *)y);
    else if (to == GAD_F64) k_convert<From, double><<<g, GCU_THREADS, 0, s>>>(*it, (const From *)x, (double *)y);
    else if (to == GAD_BOOL) k_convert<From, uint8_t><<<g, GCU_THREADS, 0, s>>>(*it, (const From *)x, (uint8_t *)y);
    else k_convert<From, int64_t><<<g, GCU_THREADS, 0, s>>>(*it, (const From *)x, (int64_t *)y);
}

extern "C" void gcu_convert(int ord, const gcu_iter *it, const void *x, int from, void *y, int to) {
    if (it->n == 0) return;
    cudaStream_t s = gcu_stream(ord);
    if (!s) return;
    if (from == GAD_F32) convert_from<float>(s, it, x, y, to);
    else if (from == GAD_F64) convert_from<double>(s, it, x, y, to);
    else if (from == GAD_BOOL) convert_from<uint8_t>(s, it, x, y, to);
    else convert_from<int64_t>(s, it, x, y, to);
    GCU_LAUNCHED(ord, "convert");
}

template <class T>
__global__ void k_finite(gcu_iter it, const T *x, int *bad) {
    GCU_FOR(i, it.n) {
        int64_t off[2];
        gcu_offsets(it, i, 1, off);
        if (!isfinite(x[off[0]])) *bad = 1; /* every writer stores the same 1 */
    }
}

/* f16 and bf16: Inf or NaN when the exponent bits (expo) are all ones. */
__global__ void k_finite_half(gcu_iter it, const uint16_t *x, unsigned expo, int *bad) {
    GCU_FOR(i, it.n) {
        int64_t off[2];
        gcu_offsets(it, i, 1, off);
        if ((x[off[0]] & expo) == expo) *bad = 1;
    }
}

extern "C" int gcu_all_finite(int ord, const gcu_iter *it, const void *x, int dtype) {
    if (it->n == 0) return 1;
    cudaStream_t s = gcu_stream(ord);
    if (!s) return -1;
    int *flag = (int *)gcu_scratch(ord, sizeof(int));
    if (!flag) return -1;
    int host = 0;
    gcu_check(ord, cudaMemsetAsync(flag, 0, sizeof(int), s), "all_finite");
    if (dtype == GAD_F32) k_finite<float><<<gcu_blocks(it->n), GCU_THREADS, 0, s>>>(*it, (const float *)x, flag);
    else if (dtype == GAD_F16 || dtype == GAD_BF16)
        k_finite_half<<<gcu_blocks(it->n), GCU_THREADS, 0, s>>>(*it, (const uint16_t *)x,
                                                                 dtype == GAD_F16 ? 0x7c00u : 0x7f80u, flag);
    else k_finite<double><<<gcu_blocks(it->n), GCU_THREADS, 0, s>>>(*it, (const double *)x, flag);
    GCU_LAUNCHED(ord, "all_finite");
    int rc = gcu_to_host(ord, &host, flag, sizeof host);
    gcu_free(ord, flag);
    return rc ? -1 : !host;
}
