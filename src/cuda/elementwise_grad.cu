/* elementwise_grad.cu: the fused first-derivative kernels of the VJPs of
 * elementwise.def's rows (elementwise.cuh makes them). */
#include "cuda/elementwise.cuh"

extern "C" void gcu_grad(int ord, int k, int dtype, const gcu_iter *it, const void *gy,
                         const void *v, void *y, double a, double b) {
    if (it->n == 0) return;
    cudaStream_t s = gcu_stream(ord);
    if (!s) return;
    switch (k) {
#define CASE_GRAD(ID) case GAD_GK_##ID: launch_grad<gf_##ID>(s, dtype, it, gy, v, y, a, b); break;
#define UNARY(ID, name, args, pwords, save, fwd, cost, vjp, ...) GAD_EW_##vjp(CASE_GRAD(ID))
#include "backend/elementwise.def"
    default: gcu_fault_set(ord, "grad: unknown kernel"); return;
    }
    GCU_LAUNCHED(ord, "gradient kernel");
}
