/* test_device.c: device dispatch without a GPU. A second device, "test",
 * registered here and nowhere else: its memory is separate host memory
 * (blocks of its own, never core's caches) that core reaches only through
 * the table's copies, and its kernels are the CPU's. Every op of the
 * registry runs on it (forward and VJP, on every gradcheck sample) and must
 * give the CPU's bits; its results stay on it; f64 samples pass gradcheck
 * there; no op or VJP copies to the host (checks of index values happen in
 * the back end's kernels); inputs on two devices are a device error that
 * names the op and both devices. It is a test fixture, not a GPU. */
#include "test.h"

#include "backend/backend.h"
#include "gad_int.h"
#include "ops/ops_int.h"
#include "test_registry.h"

#include <stdlib.h>

/* ----------------------------------------------------------- the device */

static atomic_llong td_live, td_to_host, td_from_host;

static gad_storage *td_storage_new(int dev, size_t nbytes) {
    gad_storage *s = malloc(sizeof *s);
    void *d = NULL;
    if (!s || posix_memalign(&d, 64, nbytes ? nbytes : 1)) {
        free(s);
        return NULL;
    }
    memset(s, 0, sizeof *s);
    atomic_init(&s->refs, 1);
    s->cap = nbytes;
    s->data = d;
    s->sclass = -1;
    s->dev = (uint8_t)dev;
    atomic_fetch_add(&td_live, 1);
    return s;
}

static void td_storage_free(gad_storage *s) {
    free(s->data);
    free(s);
    atomic_fetch_sub(&td_live, 1);
}

static int td_to_host_copy(void *dst, const void *src, size_t n) {
    atomic_fetch_add(&td_to_host, 1);
    memcpy(dst, src, n);
    return 0;
}

static int td_from_host_copy(void *dst, const void *src, size_t n) {
    atomic_fetch_add(&td_from_host, 1);
    memcpy(dst, src, n);
    return 0;
}

static int td_sync(const char *op, int dev) {
    (void)op, (void)dev;
    return 0;
}

static const gad_devmem td_mem = {
    .name = "test:0",
    .storage_new = td_storage_new,
    .storage_free = td_storage_free,
    .to_host = td_to_host_copy,
    .from_host = td_from_host_copy,
    .copy_strided = gad__host_copy_strided, /* the CPU's kernels */
    .fill = gad__host_fill,
    .sync = td_sync,
};

static gad_backend td_backend;
static int TD = -1; /* its device number */

static void register_test_device(void) {
    td_backend = gad__cpu_backend; /* every kernel the CPU's */
    td_backend.name = "test";
    td_backend.mem = &td_mem;
    TD = gad__backend_register(&td_backend);
}

/* A copy of t on the test device (a leaf again if t was one), owned by the
 * current scope. */
static gad_tensor *to_td(gad_tensor *t) {
    if (!t) return NULL;
    gad_tensor *d = gad__own(gad__to_dev("test", t, TD));
    return d && gad_is_leaf(t) ? gad_requires_grad(d) : d;
}

/* t's elements as doubles (n at most), through gad_read_f64. */
static int64_t read_all(gad_tensor *t, double *out, size_t n) {
    int64_t k = gad_numel(t);
    if ((size_t)k > n || gad_read_f64(t, out, n) != GAD_OK) return -1;
    return k;
}

#define MAXEL 4096

/* Same values, bit for bit (NaN equal to NaN). */
static int same_bits(gad_tensor *a, gad_tensor *b) {
    static double va[MAXEL], vb[MAXEL];
    int64_t na = read_all(a, va, MAXEL), nb = read_all(b, vb, MAXEL);
    if (na < 0 || na != nb || gad_dtype(a) != gad_dtype(b) || gad_rank(a) != gad_rank(b))
        return 0;
    for (int i = 0; i < gad_rank(a); i++)
        if (gad_shape(a)[i] != gad_shape(b)[i]) return 0;
    for (int64_t i = 0; i < na; i++)
        if (memcmp(&va[i], &vb[i], sizeof va[i]) != 0 && !(isnan(va[i]) && isnan(vb[i])))
            return 0;
    return 1;
}

/* sum(y * w) with w fixed weights on y's device, for a scalar to
 * differentiate. */
static gad_tensor *project(gad_tensor *y, gad_rng *r) {
    gad_tensor *w = gad_rng_uniform_tensor(r, gad_shape(y), gad_rank(y), gad_dtype(y), 0.5, 1.5);
    if (y->dev != GAD_DEV_HOST) w = gad__own(gad__to_dev("test", w, y->dev));
    return gad_sum_all(gad_mul(y, w));
}

/* The pending error is of this kind, from op, with needle in its text. */
#define CHECK_DEV_ERR(kind_, op_, needle_)                                     \
    do {                                                                       \
        const gad_error *e_ = gad_last_error();                                \
        CHECK_MSG(e_ && e_->kind == (kind_) && !strcmp(e_->op, (op_)) &&       \
                      strstr(e_->text, (needle_)),                             \
                  "want %s error in %s (\"%s\"), got: %s",                     \
                  gad_status_str(kind_), (op_), (needle_), e_ ? e_->text : "none"); \
    } while (0)

/* --------------------------------------------------------- the registry */

TEST(every_op_runs_on_the_device) {
    gad_rng *rng = gad_rng_new(77);
    int ops = 0, cases = 0;
    for (int op = 1; op < GAD_OP_COUNT_; op++) {
        const gad_op_entry *e = &gad__ops[op];
        int mine = 0;
        for (int v = 0;; v++) {
            gad_op_sample s;
            if (!test_sample(op, rng, v, &s)) break;
            mine++;
            /* on the CPU */
            gad_tensor *y = s.apply(&s, s.in, s.n);
            CHECK_MSG(y != NULL, "%s %s on the CPU: %s", e->info.name, s.what,
                      gad_last_error() ? gad_last_error()->text : "");
            gad_tensor *leaves[12], *dleaves[12], *g[12], *dg[12], *din[12];
            int nl = 0;
            for (int i = 0; i < s.n; i++) {
                din[i] = to_td(s.in[i]);
                if (s.in[i] && gad_is_leaf(s.in[i])) {
                    leaves[nl] = s.in[i];
                    dleaves[nl++] = din[i];
                }
            }
            /* on the test device: no copy to the host anywhere in the
             * forward, the VJPs or the engine */
            long long to_host_before = atomic_load(&td_to_host);
            gad_tensor *dy = s.apply(&s, din, s.n);
            CHECK_MSG(dy != NULL, "%s %s on the device: %s", e->info.name, s.what,
                      gad_last_error() ? gad_last_error()->text : "");
            if (!y || !dy) {
                gad_clear_error();
                gad_scope_end();
                continue;
            }
            CHECK_MSG(dy->dev == TD, "%s %s: the result is on %s", e->info.name, s.what,
                      gad__device_name(dy->dev));
            gad_rng *r1 = gad_rng_new(5 + (uint64_t)v), *r2 = gad_rng_new(5 + (uint64_t)v);
            gad_tensor *L = gad_is_tracked(y) ? project(y, r1) : NULL;
            gad_tensor *dL = gad_is_tracked(dy) ? project(dy, r2) : NULL;
            gad_rng_free(r1);
            gad_rng_free(r2);
            int gok = L && dL && gad_grad(L, leaves, nl, g) == GAD_OK &&
                      gad_grad(dL, dleaves, nl, dg) == GAD_OK;
            CHECK_MSG(atomic_load(&td_to_host) == to_host_before,
                      "%s %s: the op or its VJP copied to the host", e->info.name, s.what);
            CHECK_MSG(same_bits(y, dy), "%s %s: values differ from the CPU's", e->info.name,
                      s.what);
            CHECK_MSG(gok || nl == 0 || !gad_is_tracked(y), "%s %s: grad failed: %s",
                      e->info.name, s.what, gad_last_error() ? gad_last_error()->text : "");
            for (int q = 0; gok && q < nl; q++) {
                CHECK_MSG(dg[q]->dev == TD, "%s %s: gradient %d is on %s", e->info.name,
                          s.what, q, gad__device_name(dg[q]->dev));
                CHECK_MSG(same_bits(g[q], dg[q]), "%s %s: gradient %d differs from the CPU's",
                          e->info.name, s.what, q);
            }
            /* finite differences on the device itself (f64 samples) */
            int f64 = 1;
            for (int i = 0; i < s.n; i++)
                if (din[i] && gad_is_leaf(din[i]) && gad_dtype(din[i]) != GAD_F64) f64 = 0;
            if (f64 && nl > 0) {
                gad_gradcheck_result res;
                gad_status st = gad_gradcheck(s.apply, &s, din, s.n, NULL, &res);
                CHECK_MSG(st == GAD_OK && res.passed, "%s %s: gradcheck on the device: %s",
                          e->info.name, s.what,
                          st != GAD_OK && gad_last_error() ? gad_last_error()->text : "");
            }
            gad_clear_error();
            gad_scope_end();
            cases++;
        }
        if (mine) ops++;
    }
    gad_rng_free(rng);
    printf("  %d ops, %d cases on the test device, equal to the CPU bit for bit\n", ops, cases);
    CHECK(ops >= 40);
}

/* An op given inputs on two devices fails with a device error naming it
 * and both devices, and copies nothing. */
TEST(mixed_devices_are_an_error) {
    gad_rng *rng = gad_rng_new(78);
    int checked = 0;
    for (int op = 1; op < GAD_OP_COUNT_; op++) {
        const gad_op_entry *e = &gad__ops[op];
        gad_scope_begin();
        gad_op_sample s;
        memset(&s, 0, sizeof s);
        int ok = e->sample(&s, rng, 0);
        int tensors = 0;
        for (int i = 0; ok && i < s.n; i++) tensors += s.in[i] != NULL;
        if (ok && tensors >= 2) {
            gad_tensor *mixed[12];
            for (int i = 0; i < s.n; i++) mixed[i] = i == 0 ? to_td(s.in[i]) : s.in[i];
            gad_clear_error();
            long long copies = atomic_load(&td_to_host) + atomic_load(&td_from_host);
            gad_tensor *y = s.apply(&s, mixed, s.n);
            const gad_error *err = gad_last_error();
            CHECK_MSG(!y && err && err->kind == GAD_ERR_DEVICE, "%s: %s", e->info.name,
                      err ? err->text : "no error");
            CHECK_MSG(err && strstr(err->message, "test:0") && strstr(err->message, "cpu"),
                      "%s: %s", e->info.name, err ? err->message : "");
            CHECK(atomic_load(&td_to_host) + atomic_load(&td_from_host) == copies);
            checked++;
        }
        gad_clear_error();
        gad_scope_end();
    }
    gad_rng_free(rng);
    printf("  %d ops with two or more inputs refuse mixed devices\n", checked);
    CHECK(checked >= 15);
}

/* ------------------------------------------------------------ the rest */

TEST(placement_and_read_back) {
    gad_scope_begin();
    float v[6] = {1, -2, 3.5f, 4, 5, -6};
    gad_tensor *h = gad_from_f32(v, (int64_t[]){2, 3}, 2);
    gad_tensor *d = gad__own(gad__to_dev("test", h, TD));
    CHECK(d && d->dev == TD && d->st->dev == TD);
    /* reads copy to the host */
    float back[6] = {0};
    CHECK(gad_read_f32(d, back, 6) == GAD_OK && memcmp(back, v, sizeof v) == 0);
    double dv[6];
    gad_tensor *t = gad_transpose(d); /* a strided view, read in its order */
    CHECK(t && t->dev == TD && gad_read_f64(t, dv, 6) == GAD_OK && dv[1] == 4 && dv[2] == -2);
    CHECK(gad_item(gad_sum_all(d)) == 5.5);
    char buf[200];
    gad_snprint(buf, sizeof buf, d);
    CHECK_MSG(strstr(buf, "device=test:0") != NULL, "%s", buf);
    /* host pointers are refused */
    CHECK(gad_data(d) == NULL);
    CHECK_DEV_ERR(GAD_ERR_DEVICE, "data", "test:0");
    gad_clear_error();
    CHECK(gad_data_mut(d) == NULL);
    CHECK_DEV_ERR(GAD_ERR_DEVICE, "data_mut", "test:0");
    gad_clear_error();
    /* constants made by ops follow their inputs */
    CHECK(gad_zeros_like(d)->dev == TD && gad_full_like(d, 2)->dev == TD);
    gad_tensor *c = gad_cast(d, GAD_F64);
    CHECK(c && c->dev == TD && gad_item(gad_sum_all(c)) == 5.5);
    gad_tensor *cl = gad_contiguous(t);
    CHECK(cl && cl->dev == TD && gad_is_contiguous(cl));
    /* and back to the host */
    gad_tensor *hb = gad__own(gad__to_dev("test", t, GAD_DEV_HOST));
    CHECK(hb && hb->dev == GAD_DEV_HOST && same_bits(hb, gad_transpose(h)));
    gad_scope_end();
    CHECK(atomic_load(&td_live) == 0);
}

/* Copy-on-write works there too: writing through an optimizer-style
 * gad__make_unique gives a private device storage. */
TEST(copy_on_write_on_the_device) {
    gad_scope_begin();
    gad_tensor *d = gad__own(gad__to_dev("test", gad_ones((int64_t[]){4}, 1, GAD_F32), TD));
    gad_tensor *alias = gad_detach(d);
    CHECK(!gad_is_unique(d));
    CHECK(gad__make_unique("test", d) == 0);
    CHECK(gad_is_unique(d) && d->st != alias->st && d->st->dev == TD);
    gad_scope_end();
    CHECK(atomic_load(&td_live) == 0);
}

/* The anomaly check and index checks run in the back end, and report. */
TEST(checks_in_the_back_end) {
    gad_scope_begin();
    gad_tensor *x = to_td(gad_requires_grad(gad_ones((int64_t[]){3}, 1, GAD_F64)));
    gad_tensor *idx = to_td(gad_from_i64((int64_t[]){0, 3}, (int64_t[]){2}, 1));
    long long th = atomic_load(&td_to_host);
    CHECK(gad_gather(x, 0, idx) == NULL);
    CHECK_DEV_ERR(GAD_ERR_INDEX, "gather", "index 3 out of bounds for size 3");
    gad_clear_error();
    CHECK(gad_embedding_fused(gad_reshape(x, (int64_t[]){3, 1}, 2), idx) == NULL);
    CHECK_DEV_ERR(GAD_ERR_INDEX, "embedding_fused", "index 3 out of bounds for 3 rows");
    gad_clear_error();
    CHECK(atomic_load(&td_to_host) == th);
    int was = gad_set_anomaly(1);
    gad_tensor *g;
    gad_tensor *l = gad_sum_all(gad_sqrt(gad_mul_scalar(x, 0)));
    CHECK(gad_grad(l, &x, 1, &g) == GAD_ERR_DOMAIN);
    CHECK_DEV_ERR(GAD_ERR_DOMAIN, "sqrt", "anomaly");
    gad_clear_error();
    gad_set_anomaly(was);
    gad_scope_end();
}

/* Integer data (labels, tokens) gathered on the device: gather, take and
 * index_select of i64 x give the CPU's values, stay on the device and copy
 * nothing to the host. */
TEST(integer_gather_on_the_device) {
    gad_scope_begin();
    int64_t xv[12];
    for (int i = 0; i < 12; i++) xv[i] = INT64_MAX - 100 + 9 * i;
    gad_tensor *x = gad_from_i64(xv, (int64_t[]){3, 4}, 2);
    gad_tensor *gi = gad_from_i64((int64_t[]){2, 0, -1, 1, 0, 2, 1, -3}, (int64_t[]){2, 4}, 2);
    gad_tensor *ti = gad_from_i64((int64_t[]){3, -4, 1}, (int64_t[]){3}, 1);
    gad_tensor *si = gad_from_i64((int64_t[]){2, 2, 0, -1, 1}, (int64_t[]){5}, 1);
    gad_tensor *dx = to_td(x), *dgi = to_td(gi), *dti = to_td(ti), *dsi = to_td(si);
    long long th = atomic_load(&td_to_host);
    gad_tensor *cpu[4] = {gad_gather(x, 0, gi), gad_take(x, 1, ti), gad_index_select(x, 0, si),
                          gad_index_select(x, 1, si)};
    gad_tensor *dev[4] = {gad_gather(dx, 0, dgi), gad_take(dx, 1, dti),
                          gad_index_select(dx, 0, dsi), gad_index_select(dx, 1, dsi)};
    CHECK(atomic_load(&td_to_host) == th);
    for (int k = 0; k < 4; k++) {
        CHECK_MSG(cpu[k] && dev[k] && dev[k]->dev == TD && gad_dtype(dev[k]) == GAD_I64,
                  "case %d: %s", k, gad_last_error() ? gad_last_error()->text : "");
        int64_t a[20], b[20];
        int64_t n = gad_numel(cpu[k]);
        CHECK(n <= 20 && n == gad_numel(dev[k]));
        CHECK(gad_read_i64(cpu[k], a, 20) == GAD_OK && gad_read_i64(dev[k], b, 20) == GAD_OK);
        CHECK_MSG(memcmp(a, b, (size_t)n * sizeof a[0]) == 0, "case %d differs", k);
    }
    /* a bad index is found on the device too */
    th = atomic_load(&td_to_host);
    CHECK(gad_index_select(dx, 0, to_td(gad_from_i64((int64_t[]){3}, (int64_t[]){1}, 1))) ==
          NULL);
    CHECK_DEV_ERR(GAD_ERR_INDEX, "index_select", "index 3 out of bounds for size 3");
    gad_clear_error();
    CHECK(atomic_load(&td_to_host) == th);
    gad_scope_end();
}

/* The engine refuses a VJP that fills a gradient it was not asked for or
 * of the wrong shape: an op's bug becomes an error, not a wrong sum. */
static int bad_vjp(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)n, (void)need;
    gin[0] = gad_reshape(gy, (int64_t[]){-1}, 1); /* [2,2] -> [4]: wrong */
    return 0;
}

TEST(engine_checks_what_a_vjp_fills) {
    static const gad_op_info bad = {"bad_op", bad_vjp, 0};
    gad_scope_begin();
    gad_tensor *x = gad_requires_grad(gad_ones((int64_t[]){2, 2}, 2, GAD_F32));
    gad_tensor *y = gad__tensor_like("bad_op", x);
    gad__fill(y, 1);
    y = gad__own(gad__track(y, &bad, &x, 1, NULL, 0));
    gad_tensor *g;
    CHECK(gad_grad(gad_sum_all(y), &x, 1, &g) == GAD_ERR_DOMAIN);
    CHECK_DEV_ERR(GAD_ERR_DOMAIN, "bad_op", "internal error");
    gad_clear_error();
    gad_scope_end();
}

int main(void) {
    register_test_device();
    if (TD < 0) {
        fprintf(stderr, "could not register the test device\n");
        return 1;
    }
    RUN(every_op_runs_on_the_device);
    RUN(mixed_devices_are_an_error);
    RUN(placement_and_read_back);
    RUN(copy_on_write_on_the_device);
    RUN(checks_in_the_back_end);
    RUN(integer_gather_on_the_device);
    RUN(engine_checks_what_a_vjp_fills);
    return test_summary();
}
