/* helix_on_device.c: helix_lm's training, resume, evaluation and sampling
 * on a device other than the CPU (helix_lm --device), in-process with
 * helix_lm's own sources, on the test device (tests/test_device.h: separate
 * memory that core reaches only through counted copies, the CPU's
 * kernels). So every figure must equal the CPU run's bit for bit, and the
 * copies between host and device show what moves each step.
 * tests/cuda/check.sh runs `helix_lm --quick --device cuda` for a GPU. */
#include "test.h"
#include "test_device.h"
#include "test_tmpdir.h"

#include "config.h"
#include "data.h"
#include "helix_model.h"
#include "train.h"
#include "util.h"

static char root[256], text_path[300];

/* A tiny run into root/sub on device dev: `steps` steps, validation every
 * 6 (eval_every), the checkpoint at the end (or at stop_at). */
static int run(const char *sub, gad_device dev, int64_t steps, int64_t eval_every,
               int64_t stop_at, int resume, train_result *r) {
    char out[400];
    snprintf(out, sizeof out, "%s/%s", root, sub);
    config c = default_config();
    c.d = 16, c.layers = 2, c.batch = 4, c.seq = 16, c.steps = steps, c.warmup = 2;
    c.val_windows = 4, c.eval_every = eval_every, c.ckpt_every = 0, c.bytes = 0;
    c.time_budget = 0, c.stop_at = stop_at, c.resume = resume;
    c.data = text_path, c.out = out;
    given_set none;
    memset(&none, 0, sizeof none);
    memset(r, 0, sizeof *r);
    gad_device was = gad_set_default_device(dev);
    int rc = train(&c, &none, 1, r);
    gad_set_default_device(was);
    return rc;
}

static int same(double a, double b) { return (isnan(a) && isnan(b)) || memcmp(&a, &b, 8) == 0; }

/* Every row of a equal to b's, bit for bit, from step `from` on. */
static int same_rows(const train_result *a, const train_result *b, int64_t from) {
    if (a->mt.n != b->mt.n || a->steps != b->steps) return 0;
    for (size_t i = 0; i < a->mt.n; i++) {
        const metric_row *x = &a->mt.rows[i], *y = &b->mt.rows[i];
        if (x->step != y->step) return 0;
        if (x->step >= from && (!same(x->train, y->train) || !same(x->val, y->val) ||
                                !same(x->lr, y->lr) || !same(x->gnorm, y->gnorm)))
            return 0;
    }
    return 1;
}

static train_result cpu_run, dev_run;

TEST(device_trains_as_the_cpu) {
    CHECK(run("cpu", GAD_CPU, 12, 6, 0, 0, &cpu_run) == 0);
    CHECK(run("dev", TD, 12, 6, 0, 0, &dev_run) == 0);
    CHECK(cpu_run.steps == 12 && isfinite(cpu_run.val));
    CHECK_MSG(same_rows(&cpu_run, &dev_run, 0),
              "the device run's losses differ from the CPU's (val %.9g vs %.9g)", dev_run.val,
              cpu_run.val);
}

TEST(device_resumes_bit_for_bit) {
    train_result a, b;
    CHECK(run("stop", TD, 12, 6, 5, 0, &a) == 0 && a.interrupted && a.steps == 5);
    CHECK(run("stop", TD, 12, 6, 0, 1, &b) == 0 && b.steps == 12);
    CHECK_MSG(same_rows(&dev_run, &b, 6), "the resumed device run differs from the uninterrupted");
    free(a.mt.rows);
    free(b.mt.rows);
}

/* The device run's checkpoint, loaded on the CPU and on the device: the
 * same validation loss as the run's last, and the same sample. */
TEST(device_checkpoint_anywhere) {
    char ck[400];
    snprintf(ck, sizeof ck, "%s/dev/checkpoint.safetensors", root);
    dataset ds = {0};
    CHECK(load_text(text_path, &ds) == 0);
    char *txt[2] = {NULL, NULL};
    size_t len[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        gad_device was = gad_set_default_device(k == 0 ? GAD_CPU : TD);
        config c = default_config(), saved;
        c.ckpt = ck;
        run_state rs;
        model m;
        char path[4200];
        double v = NAN;
        if (load_model(&c, &saved, &rs, &m, path, sizeof path) != 0) {
            CHECK(!"the device run's checkpoint loads");
        } else {
            CHECK(gad_device_of(m.emb) == (k == 0 ? GAD_CPU : TD));
            CHECK(evaluate(&m, &ds, saved.val_windows, saved.batch, saved.seq, &v) == 0);
            CHECK_MSG(same(v, dev_run.val), "%s: eval %.9g, the run ended at %.9g",
                      k ? "device" : "cpu", v, dev_run.val);
            FILE *f = open_memstream(&txt[k], &len[k]);
            CHECK(f && generate(&m, "And", 3, 0.8, 40, 7, f) == 0);
            if (f) fclose(f);
            model_free(&m);
        }
        gad_set_default_device(was);
    }
    CHECK(txt[0] && txt[1] && len[0] == len[1] && len[0] > 3 && !memcmp(txt[0], txt[1], len[0]));
    free(txt[0]);
    free(txt[1]);
    free(ds.bytes);
}

/* What crosses between host and device per step: runs of 4, 8 and 12 steps
 * (no validation but the last) differ only in their steps, so the copies
 * per step are constant, and fewer than the model's 22 tensors: no
 * parameter, gradient or optimizer state goes through the host; only the
 * batch's bytes go in and the loss (and the gradient norm) come out. */
TEST(device_copies_per_step) {
    long long n[3], in[3];
    train_result r;
    for (int i = 0; i < 3; i++) {
        char sub[16];
        snprintf(sub, sizeof sub, "copies%d", i);
        long long before = atomic_load(&td_to_host) + atomic_load(&td_from_host);
        long long before_in = atomic_load(&td_from_host);
        CHECK(run(sub, TD, 4 * (i + 1), 0, 0, 0, &r) == 0);
        n[i] = atomic_load(&td_to_host) + atomic_load(&td_from_host) - before;
        in[i] = atomic_load(&td_from_host) - before_in;
        free(r.mt.rows);
    }
    long long per4 = n[1] - n[0], in4 = in[1] - in[0];
    printf("copies between host and device: %lld per step, %lld of them to the device (%lld "
           "for a run of 4 steps)\n",
           per4 / 4, in4 / 4, n[0]);
    CHECK_MSG(n[2] - n[1] == per4 && per4 % 4 == 0, "4 more steps cost %lld, then %lld copies",
              per4, n[2] - n[1]);
    CHECK_MSG(per4 / 4 > 0 && per4 / 4 < 22, "%lld copies a step", per4 / 4);
}

int main(void) {
    register_test_device();
    gad_set_num_threads(1);
    if (test_make_tmpdir(root, sizeof root, "helix_on_device", 1)) return 1;
    snprintf(text_path, sizeof text_path, "%s/text.txt", root);
    FILE *f = fopen(text_path, "w");
    if (!f) return 1;
    for (int i = 0; i < 400; i++) fprintf(f, "In the beginning God created %d\n", i * 7919 % 10007);
    fclose(f);
    RUN(device_trains_as_the_cpu);
    RUN(device_resumes_bit_for_bit);
    RUN(device_checkpoint_anywhere);
    RUN(device_copies_per_step);
    free(cpu_run.mt.rows);
    free(dev_run.mt.rows);
    test_remove_tree(root, 2);
    gad_cache_trim();
    return test_summary();
}
