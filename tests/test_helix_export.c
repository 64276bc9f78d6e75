/* test_helix_export.c: `helix_lm export` (issue 29): a tiny model trained a
 * few steps, exported, and the export re-loaded: the PyTorch state_dict
 * names of examples/helix_lm/torch_helix.py in order, [out, in] shapes,
 * every value the checkpoint's (matrices transposed, wa split into the gate
 * weight and bias), and the configuration in __metadata__. Python is not
 * needed (torch_helix.py's loss comparison is a manual check, README).
 *
 *   test_helix_export PATH/TO/helix_lm SCRATCH   (ctest: helix_lm_export)
 * Without arguments (the plain test_* ctest entry) it has nothing to run. */
#include "gad.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char dir[1100];

static gad_tensor *get(gad_checkpoint *cp, const char *name) {
    gad_tensor *t = gad_checkpoint_get(cp, name);
    CHECK_MSG(t != NULL, "no tensor '%s'", name);
    return t;
}

/* a and b hold the same values (b perhaps a view) */
static int same(gad_tensor *a, gad_tensor *b) {
    if (!a || !b || gad_numel(a) != gad_numel(b) || gad_rank(a) != gad_rank(b)) return 0;
    for (int i = 0; i < gad_rank(a); i++)
        if (gad_shape(a)[i] != gad_shape(b)[i]) return 0;
    gad_tensor *ca = gad_contiguous(a), *cb = gad_contiguous(b);
    return ca && cb &&
           memcmp(gad_data(ca), gad_data(cb), (size_t)gad_numel(a) * gad_dtype_size(gad_dtype(a))) == 0;
}

static void check_meta(gad_checkpoint *cp, const char *key, const char *want) {
    const char *v = gad_checkpoint_meta(cp, key);
    CHECK_MSG(v && strcmp(v, want) == 0, "metadata %s is '%s', want '%s'", key, v ? v : "(none)", want);
}

TEST(export_matches_the_checkpoint) {
    char path[1200], epath[1200];
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", dir);
    snprintf(epath, sizeof epath, "%s/export.safetensors", dir);
    gad_checkpoint *ck = gad_load(path), *ex = gad_load(epath);
    CHECK(ck && ex);
    if (!ck || !ex) {
        gad_checkpoint_free(ck), gad_checkpoint_free(ex);
        return;
    }
    const int64_t D = 16, L = 2;
    CHECK(gad_checkpoint_count(ex) == 4 + 10 * L);
    check_meta(ex, "format", "pt");
    check_meta(ex, "model", "helix_lm");
    check_meta(ex, "d_model", "16");
    check_meta(ex, "n_layers", "2");
    check_meta(ex, "vocab", "256");
    check_meta(ex, "seq", "16");
    check_meta(ex, "val_windows", "4");
    check_meta(ex, "step", "3");
    CHECK(gad_checkpoint_meta(ex, "norm_eps") && atof(gad_checkpoint_meta(ex, "norm_eps")) == 1e-5);
    gad_scope_begin();
    static const char *const order[10] = {"norm1.weight", "gate.weight", "gate.bias", "inp.weight",
                                          "scan_gain", "out.weight", "norm2.weight", "ff1.weight",
                                          "ff2.weight", "ff_gain"};
    CHECK(strcmp(gad_checkpoint_name(ex, 0), "emb.weight") == 0);
    CHECK(same(get(ex, "emb.weight"), get(ck, "emb")));
    for (int64_t l = 0; l < L; l++) {
        char n[64], c[64];
#define EX(k) (snprintf(n, sizeof n, "blocks.%lld.%s", (long long)l, k), get(ex, n))
#define CK(k) (snprintf(c, sizeof c, "b%lld.%s", (long long)l, k), get(ck, c))
        for (int j = 0; j < 10; j++) {
            snprintf(n, sizeof n, "blocks.%lld.%s", (long long)l, order[j]);
            const char *got = gad_checkpoint_name(ex, (int)(1 + 10 * l + j));
            CHECK_MSG(got && strcmp(got, n) == 0, "name %lld is '%s', want '%s'",
                      (long long)(1 + 10 * l + j), got ? got : "", n);
        }
        gad_tensor *wa = CK("wa");
        gad_tensor *gw = EX("gate.weight");
        CHECK_SHAPE(gw, D, D);
        CHECK(same(gw, gad_transpose(gad_slice(wa, (gad_range[]){GAD_RANGE(0, D)}, 1))));
        CHECK(same(EX("gate.bias"), gad_select(wa, 0, D)));
        CHECK(same(EX("inp.weight"), gad_transpose(CK("wb"))));
        CHECK(same(EX("out.weight"), gad_transpose(CK("wo"))));
        gad_tensor *f1 = EX("ff1.weight");
        CHECK_SHAPE(f1, 2 * D, D); /* [out, in] */
        CHECK(same(f1, gad_transpose(CK("wf1"))));
        CHECK(same(EX("ff2.weight"), gad_transpose(CK("wf2"))));
        CHECK(same(EX("norm1.weight"), CK("g1")));
        CHECK(same(EX("scan_gain"), CK("g2")));
        CHECK(same(EX("norm2.weight"), CK("g3")));
        CHECK(same(EX("ff_gain"), CK("g4")));
#undef EX
#undef CK
    }
    CHECK(same(get(ex, "norm.weight"), get(ck, "gain")));
    gad_tensor *hw = get(ex, "head.weight");
    CHECK_SHAPE(hw, 256, D);
    CHECK(same(hw, gad_transpose(get(ck, "wout"))));
    CHECK(same(get(ex, "head.bias"), get(ck, "bout")));
    gad_scope_end();
    CHECK_OK();
    gad_checkpoint_free(ck);
    gad_checkpoint_free(ex);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        printf("test_helix_export: no helix_lm given (ctest runs it as helix_lm_export)\n");
        return 0;
    }
    snprintf(dir, sizeof dir, "%s", argv[2]);
    static char cmd[16384];
    if (strlen(argv[1]) > 2000 || strlen(dir) > 1000) return 1;
    snprintf(cmd, sizeof cmd,
             "rm -rf '%s' && '%s' train --d 16 --layers 2 --batch 4 --seq 16 --steps 3 "
             "--warmup 1 --val-windows 4 --eval-every 3 --threads 1 --bytes 0 --out '%s' "
             "> '%s.log' 2>&1 && '%s' export --out '%s' >> '%s.log' 2>&1",
             dir, argv[1], dir, dir, argv[1], dir, dir);
    int rc = system(cmd);
    if (rc != 0) {
        printf("FAIL: train or export failed (%d); see %s.log\n", rc, dir);
        return 1;
    }
    RUN(export_matches_the_checkpoint);
    return test_summary();
}
