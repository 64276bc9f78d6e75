/* rms_norm.cu: the RMS norm on the device, forward and backward: the row
 * passes of rows.cuh (a block per row, sums by fixed trees). */
#include "cuda/rows.cuh"

extern "C" void gcu_rms_fwd(int ord, int dtype, const void *x, void *y, int64_t rows, int64_t n,
                            double eps) {
    cudaStream_t s = gcu_stream(ord);
    if (!s) return;
    if (dtype == GAD_F32) {
        pass_args<float> c = {};
        c.x = (const float *)x, c.o = (float *)y, c.eps = eps;
        run_pass<float>(ord, s, HX_XN, rows, n, c);
    } else {
        pass_args<double> c = {};
        c.x = (const double *)x, c.o = (double *)y, c.eps = eps;
        run_pass<double>(ord, s, HX_XN, rows, n, c);
    }
}

extern "C" void gcu_rms_bwd(int ord, int dtype, const void *x, const void *g, void *dx,
                            int64_t rows, int64_t n, double eps) {
    cudaStream_t s = gcu_stream(ord);
    if (!s) return;
    if (dtype == GAD_F32) {
        pass_args<float> c = {};
        c.x = (const float *)x, c.g = (const float *)g, c.o = (float *)dx, c.eps = eps;
        run_pass<float>(ord, s, HX_RMS_BWD, rows, n, c);
    } else {
        pass_args<double> c = {};
        c.x = (const double *)x, c.g = (const double *)g, c.o = (double *)dx, c.eps = eps;
        run_pass<double>(ord, s, HX_RMS_BWD, rows, n, c);
    }
}
