/* test_offload.c: g's matmul offload (SPEC §8) with stand-in GPUs: devices
 * registered here whose kernels are the CPU's and whose memory is separate
 * host memory, so that every decision of the rule (the crossover, the
 * CPU+GPU split, the split over several GPUs, the fallback on a GPU's
 * error, the backward's products) can be seen without a GPU: each stand-in
 * counts the products it computes and the output elements they make. The
 * values must be the CPU's (SPEC §7.9's closeness). */
#include "test.h"
#include "backend/backend.h"
#include "gad_int.h"
#include "ops/ops_int.h"

#include <math.h>
#include <stdlib.h>

/* ---------------------------------------------------------- stand-in GPUs */

static gad_storage *fake_new(int dev, size_t nbytes) {
    gad_storage *s = malloc(sizeof *s);
    void *d = s ? malloc(nbytes ? nbytes : 1) : NULL;
    if (!d) {
        free(s);
        return NULL;
    }
    atomic_init(&s->refs, 1);
    s->cap = nbytes;
    s->data = d;
    s->sclass = -1;
    s->dev = (uint8_t)dev;
    s->shift = 0;
    return s;
}

static void fake_free(gad_storage *s) {
    free(s->data);
    free(s);
}

static int fake_copy(void *dst, const void *src, size_t n) {
    if (n) memcpy(dst, src, n);
    return 0;
}

static int fake_sync(const char *op, int dev) {
    (void)op, (void)dev;
    return 0;
}

static const gad_devmem fake_mem = {
    .name = "fakegpu",
    .type = GAD_DEVICE_OTHER,
    .storage_new = fake_new,
    .storage_free = fake_free,
    .to_host = fake_copy,
    .from_host = fake_copy,
    .copy_strided = gad__host_copy_strided,
    .fill = gad__host_fill,
    .sync = fake_sync,
};

static atomic_llong calls[GAD_MAX_DEVICES], outputs[GAD_MAX_DEVICES];

static int counting_matmul(const char *op, const gad_tensor *a, const gad_tensor *b, gad_tensor *y,
                           int a1, int b1) {
    atomic_fetch_add(&calls[y->dev], 1);
    atomic_fetch_add(&outputs[y->dev], y->numel);
    return gad__cpu_backend.matmul(op, a, b, y, a1, b1);
}

static int failing_matmul(const char *op, const gad_tensor *a, const gad_tensor *b, gad_tensor *y,
                          int a1, int b1) {
    (void)a, (void)b, (void)a1, (void)b1;
    atomic_fetch_add(&calls[y->dev], 1);
    gad__err(GAD_ERR_DEVICE, op, "the stand-in GPU fails on purpose");
    return -1;
}

static gad_backend gpu_be[3];
static int GPU[3]; /* two good stand-ins and one that fails */

static void register_gpus(void) {
    for (int i = 0; i < 3; i++) {
        gpu_be[i] = gad__cpu_backend;
        gpu_be[i].name = "fakegpu";
        gpu_be[i].mem = &fake_mem;
        gpu_be[i].matmul = i < 2 ? counting_matmul : failing_matmul;
        GPU[i] = gad__backend_register(&gpu_be[i]);
    }
}

static void reset_counts(void) {
    for (int d = 0; d < GAD_MAX_DEVICES; d++) {
        atomic_store(&calls[d], 0);
        atomic_store(&outputs[d], 0);
    }
}

/* ---------------------------------------------------------------- helpers */

/* [nb, m, k] (nb = 0: [m, k]) with values (3i + 5j + b) mod 991 / 991. */
static gad_tensor *mat(int64_t nb, int64_t m, int64_t k, int salt) {
    int64_t n = (nb ? nb : 1) * m * k;
    float *v = malloc((size_t)n * sizeof *v);
    if (!v) return NULL;
    for (int64_t b = 0; b < (nb ? nb : 1); b++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < k; j++)
                v[(b * m + i) * k + j] = (float)((3 * i + 5 * j + b + salt) % 991) / 991.0f;
    gad_tensor *t = nb ? gad_from_f32(v, (int64_t[]){nb, m, k}, 3)
                       : gad_from_f32(v, (int64_t[]){m, k}, 2);
    free(v);
    return t;
}

/* Every element close in SPEC §7.9's sense: |a-b| <= 1e-3 + 1e-5 max(|a|,|b|). */
static int close_all(gad_tensor *x, gad_tensor *y) {
    int64_t n = gad_numel(x);
    if (n != gad_numel(y)) return 0;
    float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    int ok = a && b && gad_read_f32(x, a, (size_t)n) == GAD_OK &&
             gad_read_f32(y, b, (size_t)n) == GAD_OK;
    for (int64_t i = 0; ok && i < n; i++) {
        double d = fabs((double)a[i] - b[i]), m = fmax(fabs(a[i]), fabs(b[i]));
        ok = d <= 1e-3 + 1e-5 * m;
    }
    free(a);
    free(b);
    return ok;
}

/* a @ b with offload off: the reference. */
static gad_tensor *on_cpu(gad_tensor *a, gad_tensor *b) {
    int was = gad_set_offload(0);
    gad_tensor *y = gad_matmul(a, b);
    gad_set_offload(was);
    return y;
}

/* ------------------------------------------------------------------ tests */

TEST(the_crossover) {
    CHECK(gad__offload_crossover(512, 512, 512, 2));   /* exactly on it (SPEC §8.2) */
    CHECK(!gad__offload_crossover(512, 512, 512, 1));  /* total 2^27 */
    CHECK(!gad__offload_crossover(511, 512, 512, 2));  /* total just below */
    CHECK(gad__offload_crossover(1024, 1024, 1024, 1));
    CHECK(!gad__offload_crossover(256, 256, 256, 1024)); /* maxdim 256 */
    CHECK(!gad__offload_crossover(64, 64, 64, 1 << 20));  /* single below 2^20 */
    CHECK(gad__offload_crossover(16, 512, 128, 2048));     /* single 2^20 exactly */
    CHECK(!gad__offload_crossover(0, 512, 512, 4));
}

TEST(off_and_small_products_stay_on_the_cpu) {
    gad_scope_begin();
    int gs[1] = {GPU[0]};
    CHECK(gad_set_offload_devices(gs, 1) == GAD_OK);
    reset_counts();
    gad_tensor *a = mat(6, 512, 512, 0), *b = mat(0, 512, 512, 1);
    CHECK(gad_matmul(a, b) != NULL); /* offload is off at first */
    CHECK(atomic_load(&calls[GPU[0]]) == 0);
    int was = gad_set_offload(1);
    CHECK(was == 0);
    CHECK(gad_matmul(mat(1, 512, 512, 0), b) != NULL); /* below the crossover */
    CHECK(atomic_load(&calls[GPU[0]]) == 0);
    gad_set_offload(0);
    gad_scope_end();
}

/* [6,512,512] @ [512,512] with one GPU: the CPU takes floor(6/2) = 3 batch
 * entries, the GPU the other 3 (3 * 2^27 passes the crossover). */
TEST(cpu_gpu_split) {
    gad_scope_begin();
    int gs[1] = {GPU[0]};
    gad_set_offload_devices(gs, 1);
    gad_set_offload(1);
    reset_counts();
    long long before = atomic_load(&gad__offload_products);
    gad_tensor *a = mat(6, 512, 512, 0), *b = mat(0, 512, 512, 1);
    gad_tensor *y = gad_matmul(a, b);
    CHECK(y && gad_device_of(y) == GAD_CPU && gad_last_error() == NULL);
    CHECK(atomic_load(&calls[GPU[0]]) == 1);
    CHECK_MSG(atomic_load(&outputs[GPU[0]]) == 3 * 512 * 512, "the GPU made %lld",
              (long long)atomic_load(&outputs[GPU[0]]));
    CHECK(atomic_load(&gad__offload_products) == before + 1);
    CHECK(close_all(y, on_cpu(a, b)));
    /* a share of 1/6: the CPU 1 entry, the GPU 5 */
    reset_counts();
    gad_set_offload_cpu_share(1.0 / 6);
    CHECK(close_all(gad_matmul(a, b), on_cpu(a, b)));
    CHECK(atomic_load(&outputs[GPU[0]]) == 5 * 512 * 512);
    /* rank3 x rank3, b's batch the same: the pairing is kept */
    reset_counts();
    gad_set_offload_cpu_share(-1);
    gad_tensor *b3 = mat(6, 512, 512, 2);
    CHECK(close_all(gad_matmul(a, b3), on_cpu(a, b3)));
    CHECK(atomic_load(&outputs[GPU[0]]) == 3 * 512 * 512);
    /* [2,512,512]: the GPU's half (2^27) is below the crossover, so the
     * GPU computes the whole product */
    reset_counts();
    gad_tensor *a2 = mat(2, 512, 512, 3);
    CHECK(close_all(gad_matmul(a2, b), on_cpu(a2, b)));
    CHECK(atomic_load(&outputs[GPU[0]]) == 2 * 512 * 512);
    CHECK(atomic_load(&outputs[GAD_CPU]) == 0);
    gad_set_offload(0);
    gad_scope_end();
}

/* Two GPUs and the GPUs alone (share 0): min(2, 6) parts of 3 entries; a
 * rank-2 product splits its rows; a broadcast batch is materialized. */
TEST(split_over_two_gpus) {
    gad_scope_begin();
    int gs[2] = {GPU[0], GPU[1]};
    gad_set_offload_devices(gs, 2);
    gad_set_offload_cpu_share(0);
    gad_set_offload(1);
    reset_counts();
    gad_tensor *a = mat(6, 512, 512, 0), *b = mat(0, 512, 512, 1);
    CHECK(close_all(gad_matmul(a, b), on_cpu(a, b)));
    CHECK(atomic_load(&outputs[GPU[0]]) == 3 * 512 * 512);
    CHECK(atomic_load(&outputs[GPU[1]]) == 3 * 512 * 512);
    reset_counts();
    gad_tensor *r = mat(0, 1536, 512, 4);
    CHECK(close_all(gad_matmul(r, b), on_cpu(r, b)));
    CHECK(atomic_load(&outputs[GPU[0]]) == 768 * 512 && atomic_load(&outputs[GPU[1]]) == 768 * 512);
    /* [3,1,512,512] @ [1,2,512,512]: a broadcast batch of 6 */
    reset_counts();
    gad_tensor *a4 = gad_reshape(mat(3, 512, 512, 5), (int64_t[]){3, 1, 512, 512}, 4);
    gad_tensor *b4 = gad_reshape(mat(2, 512, 512, 6), (int64_t[]){1, 2, 512, 512}, 4);
    gad_tensor *y4 = gad_matmul(a4, b4);
    CHECK(y4 && gad_rank(y4) == 4 && gad_shape(y4)[0] == 3 && gad_shape(y4)[1] == 2);
    CHECK(close_all(y4, on_cpu(a4, b4)));
    CHECK(atomic_load(&calls[GPU[0]]) == 1 && atomic_load(&calls[GPU[1]]) == 1);
    gad_set_offload_cpu_share(-1);
    gad_set_offload(0);
    gad_scope_end();
}

/* A GPU that fails: the CPU computes the product, and no error is left. */
TEST(a_failing_gpu_falls_back) {
    gad_scope_begin();
    int gs[1] = {GPU[2]};
    gad_set_offload_devices(gs, 1);
    gad_set_offload(1);
    reset_counts();
    long long before = atomic_load(&gad__offload_products);
    gad_tensor *a = mat(6, 512, 512, 0), *b = mat(0, 512, 512, 1);
    gad_tensor *y = gad_matmul(a, b);
    CHECK(y && gad_last_error() == NULL);
    CHECK(atomic_load(&calls[GPU[2]]) >= 1);
    CHECK(atomic_load(&gad__offload_products) == before);
    CHECK(close_all(y, on_cpu(a, b)));
    gad_set_offload(0);
    gad_scope_end();
}

/* The backward's two products follow the same rule. */
TEST(the_backward_offloads_too) {
    gad_scope_begin();
    int gs[1] = {GPU[0]};
    gad_set_offload_devices(gs, 1);
    gad_tensor *a = gad_requires_grad(mat(6, 512, 512, 0));
    gad_tensor *b = gad_requires_grad(mat(0, 512, 512, 1));
    gad_tensor *in[2] = {a, b}, *want[2], *got[2];
    gad_tensor *w = mat(6, 512, 512, 7);
    CHECK(gad_grad(gad_sum_all(gad_mul(gad_matmul(a, b), w)), in, 2, want) == GAD_OK);
    gad_set_offload(1);
    long long before = atomic_load(&gad__offload_products);
    CHECK(gad_grad(gad_sum_all(gad_mul(gad_matmul(a, b), w)), in, 2, got) == GAD_OK);
    CHECK_MSG(atomic_load(&gad__offload_products) == before + 3, "%lld products offloaded",
              (long long)(atomic_load(&gad__offload_products) - before));
    CHECK(close_all(got[0], want[0]));
    CHECK(close_all(got[1], want[1]));
    gad_set_offload(0);
    gad_scope_end();
}

TEST(settings_refuse_what_is_not_a_gpu) {
    int cpu[1] = {GAD_CPU}, bad[1] = {13};
    CHECK(gad_set_offload_devices(cpu, 1) == GAD_ERR_DEVICE);
    gad_clear_error();
    CHECK(gad_set_offload_devices(bad, 1) == GAD_ERR_DEVICE);
    gad_clear_error();
    CHECK(gad_set_offload_devices(NULL, 3) == GAD_ERR_DOMAIN);
    gad_clear_error();
    CHECK(gad_set_offload_devices(NULL, -1) == GAD_OK); /* the default: every CUDA GPU */
    CHECK(gad_set_offload_cpu_share(0.25) < 0 && gad_set_offload_cpu_share(NAN) == 0.25);
    CHECK(gad_set_offload_cpu_share(-1) < 0);
    /* with the default list and no CUDA GPU, nothing is offloaded */
    gad_scope_begin();
    gad_set_offload(1);
    reset_counts();
    gad_tensor *a = mat(6, 512, 512, 0), *b = mat(0, 512, 512, 1);
    CHECK(gad_matmul(a, b) != NULL);
    CHECK(atomic_load(&calls[GPU[0]]) == 0 && atomic_load(&calls[GPU[1]]) == 0);
    gad_set_offload(0);
    gad_scope_end();
}

int main(void) {
    register_gpus();
    if (GPU[0] < 0 || GPU[1] < 0 || GPU[2] < 0) {
        fprintf(stderr, "could not register the stand-in GPUs\n");
        return 1;
    }
    RUN(the_crossover);
    RUN(off_and_small_products_stay_on_the_cpu);
    RUN(cpu_gpu_split);
    RUN(split_over_two_gpus);
    RUN(a_failing_gpu_falls_back);
    RUN(the_backward_offloads_too);
    RUN(settings_refuse_what_is_not_a_gpu);
    return test_summary();
}
