/* scan.cu: the gated scan of SPEC section 4 on the device, forward and
 * backward: a thread per channel walks the time steps, as the recurrence
 * h_t = a_t h_{t-1} + b_t demands. */
#include "cuda/cuda_int.cuh"

#include "gad.h"

/* ------------------------------------------------------------- scan */

template <class T>
__global__ void k_scan_fwd(const T *a, const T *b, T *h, int64_t B, int64_t Tn, int64_t D) {
    GCU_FOR(w, B * D) {
        int64_t bi = w / D, d = w - bi * D;
        size_t base = (size_t)(bi * Tn * D) + (size_t)d;
        T prev = 0;
        for (int64_t t = 0; t < Tn; t++) {
            size_t k = base + (size_t)(t * D);
            prev = a[k] * prev + b[k];
            h[k] = prev;
        }
    }
}

/* G_t = gh_t + a_{t+1} G_{t+1}; gb = G; ga_t = G_t h_{t-1}, ga_0 = 0 */
template <class T>
__global__ void k_scan_bwd(const T *a, const T *h, const T *gh, T *ga, T *gb, int64_t B,
                           int64_t Tn, int64_t D) {
    GCU_FOR(w, B * D) {
        int64_t bi = w / D, d = w - bi * D;
        size_t base = (size_t)(bi * Tn * D) + (size_t)d;
        T carry = 0;
        for (int64_t t = Tn - 1; t >= 0; t--) {
            size_t k = base + (size_t)(t * D);
            T G = gh[k] + carry;
            if (gb) gb[k] = G;
            if (ga) ga[k] = t > 0 ? G * h[k - (size_t)D] : (T)0;
            carry = a[k] * G;
        }
    }
}

extern "C" void gcu_scan_fwd(int ord, int dtype, const void *a, const void *b, void *h, int64_t B,
                             int64_t Tn, int64_t D) {
    if (B * Tn * D == 0) return;
    cudaStream_t s = gcu_stream(ord);
    if (!s) return;
    if (dtype == GAD_F32)
        k_scan_fwd<float><<<gcu_blocks(B * D), GCU_THREADS, 0, s>>>((const float *)a, (const float *)b,
                                                                    (float *)h, B, Tn, D);
    else
        k_scan_fwd<double><<<gcu_blocks(B * D), GCU_THREADS, 0, s>>>(
            (const double *)a, (const double *)b, (double *)h, B, Tn, D);
    GCU_LAUNCHED(ord, "scan");
}

extern "C" void gcu_scan_bwd(int ord, int dtype, const void *a, const void *h, const void *gh,
                             void *ga, void *gb, int64_t B, int64_t Tn, int64_t D) {
    if (B * Tn * D == 0) return;
    cudaStream_t s = gcu_stream(ord);
    if (!s) return;
    if (dtype == GAD_F32)
        k_scan_bwd<float><<<gcu_blocks(B * D), GCU_THREADS, 0, s>>>(
            (const float *)a, (const float *)h, (const float *)gh, (float *)ga, (float *)gb, B, Tn, D);
    else
        k_scan_bwd<double><<<gcu_blocks(B * D), GCU_THREADS, 0, s>>>(
            (const double *)a, (const double *)h, (const double *)gh, (double *)ga, (double *)gb, B,
            Tn, D);
    GCU_LAUNCHED(ord, "scan backward");
}
