/* ppo_cartpole.c: balance a pole on a cart with PPO (proximal policy
 * optimization), a separate actor and critic.
 *
 * The environment is the CartPole of reinforce_cartpole.c: push the cart
 * left or right, earn 1 per step while the pole stays up, at most 500 steps
 * per episode. Two small networks:
 *
 *     actor   4 -> 24 tanh -> 2   the logits of the policy pi(a | s)
 *     critic  4 -> 24 tanh -> 1   V(s), the return expected from s
 *
 * Each update plays 256 steps with the current policy (starting a new
 * episode whenever one ends), then estimates how much better than expected
 * each action was, by generalized advantage estimation (GAE):
 *
 *     delta_t = r_t + 0.99 V(s_t+1) - V(s_t)     (V(s_t+1) = 0 after the end)
 *     A_t     = delta_t + 0.99 * 0.95 * A_t+1    (A_t = delta_t at an end)
 *     ret_t   = A_t + V(s_t)                     (the critic's target)
 *
 * and takes 3 gradient steps on the whole batch of 256 with PPO's loss
 *
 *     -mean(min(rho A, clamp(rho, 0.8, 1.2) A)) + 0.5 mse(V, ret)
 *         - 0.01 mean(entropy),      rho = pi_new(a|s) / pi_old(a|s),
 *
 * where A is whitened. The clamp stops an update from moving the policy
 * far from the one that collected the data; the entropy term keeps it
 * exploring. Success: the episodes that ended in the last 5 updates last
 * 195 steps or more on average (the run stops there), within 200 updates.
 * One seeded gad_rng drives all the randomness; over seeds 1-300 (--seed N)
 * success comes after 27-57 updates (median 39). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gad.h"

#define MAX_UPDATES 200
#define ROLLOUT 256   /* steps per update */
#define EPOCHS 3      /* gradient steps per update */
#define MAX_STEPS 500 /* episode cap */
#define WINDOW 5      /* updates averaged for the success test */
#define TARGET 195.0
#define GAMMA 0.99f
#define LAMBDA 0.95f
#define HIDDEN 24
#define LR 3e-3 /* AdamW */

/* ---- CartPole (SPEC 6.10), all in f32 ----------------------------------- */

typedef struct {
    float x, x_dot, theta, theta_dot;
} cartpole;

/* A small random start: each variable uniform in [-0.05, 0.05). */
static float small(gad_rng *rng) { return (float)(gad_rng_uniform(rng) * 0.1 - 0.05); }

static void cart_reset(cartpole *c, gad_rng *rng) {
    c->x = small(rng), c->x_dot = small(rng);
    c->theta = small(rng), c->theta_dot = small(rng);
}

/* What the agent sees: the four state variables. */
static void observe(const cartpole *c, float o[4]) {
    o[0] = c->x, o[1] = c->x_dot, o[2] = c->theta, o[3] = c->theta_dot;
}

/* One explicit Euler step of 0.02 s; returns 1 when the pole has fallen or
 * the cart has left the track (the reward is 1 on every step). */
static int cart_step(cartpole *c, int action) {
    const float g = 9.8f, mp = 0.1f, total = 1.1f, l = 0.5f, tau = 0.02f;
    float force = action == 0 ? -10.0f : 10.0f;
    float s = sinf(c->theta), co = cosf(c->theta);
    float temp = (force + mp * l * c->theta_dot * c->theta_dot * s) / total;
    float theta_acc = (g * s - co * temp) / (l * (4.0f / 3.0f - mp * co * co / total));
    float x_acc = temp - mp * l * theta_acc * co / total;
    c->x += tau * c->x_dot; /* positions move with the old velocities */
    c->x_dot += tau * x_acc;
    c->theta += tau * c->theta_dot;
    c->theta_dot += tau * theta_acc;
    return fabsf(c->x) > 2.4f || fabsf(c->theta) > 0.21f;
}

/* ---- the actor and the critic --------------------------------------------- */

/* Parameters are leaves we own: made in a scope and kept, so that the
 * intermediate randn tensor is freed. A weight is randn(shape, seed) * scale
 * (g's initial values), a bias starts at zero. */
static gad_tensor *weight(int64_t rows, int64_t cols, uint64_t seed, double scale) {
    gad_scope_begin();
    gad_tensor *w = gad_keep(gad_mul_scalar(gad_randn((int64_t[]){rows, cols}, 2, seed), scale));
    gad_scope_end();
    return gad_requires_grad(w);
}

static gad_tensor *bias(int64_t n) {
    return gad_requires_grad(gad_zeros(&n, 1, GAD_F32));
}

enum { AW1, AB1, AW2, AB2, CW1, CB1, CW2, CB2, NPARAMS };
static gad_tensor *P[NPARAMS];

/* Logits [B,2] for observations [B,4]. */
static gad_tensor *actor(gad_tensor *obs) {
    return gad_linear(gad_tanh(gad_linear(obs, P[AW1], P[AB1])), P[AW2], P[AB2]);
}

/* Values [B] for observations [B,4]. */
static gad_tensor *critic(gad_tensor *obs) {
    gad_tensor *v = gad_linear(gad_tanh(gad_linear(obs, P[CW1], P[CB1])), P[CW2], P[CB2]);
    return gad_squeeze(v, 1); /* [B,1] -> [B] */
}

static int fail(const char *what) {
    const gad_error *e = gad_last_error();
    fprintf(stderr, "ppo_cartpole: %s failed: %s\n", what, e ? e->text : "?");
    return 1;
}

int main(int argc, char **argv) {
    /* --seed N picks another random stream. --quick changes nothing: the
     * run stops as soon as it succeeds, well under a second here. */
    uint64_t seed = 1;
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--seed") == 0) seed = strtoull(argv[i + 1], NULL, 10);

    P[AW1] = weight(4, HIDDEN, 1, 0.25), P[AB1] = bias(HIDDEN);
    P[AW2] = weight(HIDDEN, 2, 2, 0.25), P[AB2] = bias(2);
    P[CW1] = weight(4, HIDDEN, 3, 0.25), P[CB1] = bias(HIDDEN);
    P[CW2] = weight(HIDDEN, 1, 4, 0.25), P[CB2] = bias(1);
    /* One AdamW for both networks (no weight decay). The critic's loss is
     * much larger than the actor's, but Adam scales each parameter's step
     * by its own gradient size, so neither swamps the other. */
    gad_optim *opt = gad_adamw_new(P, NPARAMS, &(gad_adamw_opts){.lr = LR, .no_weight_decay = 1});
    gad_rng *rng = gad_rng_new(seed);
    if (!opt || !rng) return fail("set-up");

    static float obs[ROLLOUT][4], adv[ROLLOUT], ret[ROLLOUT], value[ROLLOUT];
    static int64_t actions[ROLLOUT];
    static int done[ROLLOUT];
    /* Per update: episodes that ended in it and the sum of their lengths. */
    int ended[MAX_UPDATES + 1] = {0}, ended_steps[MAX_UPDATES + 1] = {0};
    cartpole cart;
    cart_reset(&cart, rng);
    int ep_len = 0, solved_at = -1;
    double mean_len = 0;

    for (int u = 1; u <= MAX_UPDATES && solved_at < 0; u++) {
        /* 1. Roll out 256 steps with the current policy (no tape). */
        gad_no_grad_begin();
        for (int t = 0; t < ROLLOUT; t++) {
            observe(&cart, obs[t]);
            gad_scope_begin();
            float p[2];
            gad_tensor *o = gad_from_f32(obs[t], (int64_t[]){1, 4}, 2);
            gad_read_f32(gad_softmax(actor(o), -1), p, 2);
            gad_scope_end();
            actions[t] = gad_rng_uniform(rng) < p[0] ? 0 : 1;
            int fell = cart_step(&cart, (int)actions[t]);
            ep_len++;
            done[t] = fell || ep_len == MAX_STEPS;
            if (done[t]) { /* count the episode, start a new one */
                ended[u]++, ended_steps[u] += ep_len;
                ep_len = 0;
                cart_reset(&cart, rng);
            }
        }

        gad_scope_begin();
        gad_tensor *o = gad_from_f32(&obs[0][0], (int64_t[]){ROLLOUT, 4}, 2);
        gad_tensor *a = gad_from_i64(actions, (int64_t[]){ROLLOUT}, 1);
        /* The values and the log-probs of the policy that acted: constants. */
        gad_tensor *old_logp = gad_categorical_log_prob(actor(o), a);
        gad_read_f32(critic(o), value, ROLLOUT);
        gad_no_grad_end();

        /* 2. GAE, backwards over the rollout (reward 1 on every step). */
        float next_adv = 0;
        for (int t = ROLLOUT - 1; t >= 0; t--) {
            float next_v = done[t] || t == ROLLOUT - 1 ? 0 : value[t + 1];
            float delta = 1.0f + GAMMA * next_v - value[t];
            adv[t] = next_adv = done[t] ? delta : delta + GAMMA * LAMBDA * next_adv;
            ret[t] = adv[t] + value[t];
        }
        gad_tensor *A = gad_whiten(gad_from_f32(adv, (int64_t[]){ROLLOUT}, 1));
        gad_tensor *R = gad_from_f32(ret, (int64_t[]){ROLLOUT}, 1);

        /* 3. Three full-batch epochs of the clipped PPO loss. */
        for (int epoch = 0; epoch < EPOCHS; epoch++) {
            gad_scope_begin();
            gad_tensor *logits = actor(o);
            gad_tensor *rho = gad_exp(gad_sub(gad_categorical_log_prob(logits, a), old_logp));
            gad_tensor *surrogate = gad_minimum(gad_mul(rho, A),
                                                gad_mul(gad_clamp(rho, 0.8, 1.2), A));
            gad_tensor *policy_loss = gad_neg(gad_mean_all(surrogate));
            gad_tensor *value_loss = gad_mse_loss(critic(o), R, GAD_REDUCE_MEAN);
            gad_tensor *entropy = gad_mean_all(gad_categorical_entropy(logits));
            gad_tensor *loss = gad_sub(gad_add(policy_loss, gad_mul_scalar(value_loss, 0.5)),
                                       gad_mul_scalar(entropy, 0.01));
            gad_tensor *grads[NPARAMS];
            if (gad_grad(loss, P, NPARAMS, grads) != GAD_OK) return fail("grad");
            if (gad_optim_step(opt, grads) != GAD_OK) return fail("optimizer step");
            gad_scope_end();
        }
        gad_scope_end();

        /* 4. Progress: the episodes that ended in the last 5 updates. */
        if (u >= WINDOW) {
            int n = 0, steps = 0;
            for (int i = u - WINDOW + 1; i <= u; i++) n += ended[i], steps += ended_steps[i];
            mean_len = n ? (double)steps / n : 0;
            if (mean_len >= TARGET) solved_at = u;
            if (u % 5 == 0 || solved_at > 0)
                printf("update %3d episodes %3d mean_len %.1f\n", u, n, mean_len);
        }
    }

    gad_optim_free(opt);
    for (int i = 0; i < NPARAMS; i++) gad_release(P[i]);
    gad_rng_free(rng);
    if (solved_at < 0) {
        fprintf(stderr, "ppo_cartpole: FAILED: mean episode length %.1f < %.0f after %d "
                "updates\n", mean_len, TARGET, MAX_UPDATES);
        return 1;
    }
    printf("solved at update %d: episodes of the last %d updates last %.1f steps on "
           "average\n", solved_at, WINDOW, mean_len);
    return 0;
}
