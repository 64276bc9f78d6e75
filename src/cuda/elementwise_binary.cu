/* elementwise_binary.cu: the binary and helper (BKERNEL) kernels of elementwise.def
 * (elementwise.cuh makes them). */
#include "cuda/elementwise.cuh"

extern "C" void gcu_binary(int ord, int k, int dtype, const gcu_iter *it, const void *x0,
                           const void *x1, void *y) {
    if (it->n == 0) return;
    cudaStream_t s = gcu_stream(ord);
    if (!s) return;
    switch (k) {
#define BINARY(ID, ...)                                                        \
    case GAD_BK_##ID: launch_binary<bf_##ID>(s, dtype, it, x0, x1, y); break;
#define BKERNEL(ID, ...) BINARY(ID)
#include "backend/elementwise.def"
    default: gcu_fault_set(ord, "binary: unknown kernel"); return;
    }
    GCU_LAUNCHED(ord, "binary kernel");
}
