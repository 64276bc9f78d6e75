/* elementwise_unary.cu: the unary and helper (UKERNEL) kernels of elementwise.def
 * (elementwise.cuh makes them). */
#include "cuda/elementwise.cuh"

extern "C" void gcu_unary(int ord, int k, int dtype, const gcu_iter *it, const void *x, void *y,
                          double a, double b) {
    if (it->n == 0) return;
    cudaStream_t s = gcu_stream(ord);
    if (!s) return;
    switch (k) {
#define UNARY(ID, ...)                                                         \
    case GAD_UK_##ID: launch_unary<uf_##ID>(s, dtype, it, x, y, a, b); break;
#define UKERNEL(ID, ...) UNARY(ID)
#include "backend/elementwise.def"
    default: gcu_fault_set(ord, "unary: unknown kernel"); return;
    }
    GCU_LAUNCHED(ord, "unary kernel");
}
