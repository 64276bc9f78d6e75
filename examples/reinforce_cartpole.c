/* reinforce_cartpole.c: balance a pole on a cart with REINFORCE.
 *
 * CartPole: a pole is hinged on a cart that moves on a track; each step the
 * agent pushes the cart left or right (force -10 or +10) and earns 1 while
 * the pole stays within 12 degrees of upright and the cart within 2.4 of
 * the centre. An episode ends when either is exceeded, or after 500 steps.
 *
 * The policy is a small network, 4 -> 16 tanh -> 2, whose two outputs are
 * the logits of pi(a | s). REINFORCE plays one whole episode with it, then
 * computes each step's discounted return G_t = r_t + 0.99 r_{t+1} + ... and
 * takes one gradient step on
 *
 *     loss = -mean_t( log pi(a_t | s_t) * A_t ),
 *
 * where A_t is G_t whitened over the episode (minus the episode mean, the
 * baseline, divided by the standard deviation): actions followed by more
 * reward than the episode's average become more likely. The log-probs come
 * from gad_categorical_log_prob, which stays on the tape.
 *
 * To act, the policy runs once per step with no tape (gad_no_grad_begin);
 * for the update it runs again on the whole episode as one [T,4] batch, on
 * the tape. Success: the mean length of the last 20 episodes reaches 195
 * (the run stops there) within 1000 episodes. One seeded gad_rng drives all
 * the randomness, so every run is the same; over seeds 1-300 (--seed N)
 * success comes after 132-466 episodes (median 227). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gad.h"

#define MAX_EPISODES 1000
#define MAX_STEPS 500
#define WINDOW 20     /* episodes averaged for the success test */
#define TARGET 195.0  /* mean length to reach */
#define GAMMA 0.99f
#define LR 0.005 /* AdamW; 0.01 is faster on average but less reliable */

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

/* One explicit Euler step of 0.02 s; returns 1 when the episode is over
 * (the reward is 1 on every step, the last one included). */
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

/* ---- the policy ---------------------------------------------------------- */

static gad_tensor *w1, *b1, *w2, *b2;

/* Logits [B,2] for observations [B,4]. */
static gad_tensor *policy(gad_tensor *obs) {
    return gad_linear(gad_tanh(gad_linear(obs, w1, b1)), w2, b2);
}

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

static int fail(const char *what) {
    const gad_error *e = gad_last_error();
    fprintf(stderr, "reinforce_cartpole: %s failed: %s\n", what, e ? e->text : "?");
    return 1;
}

int main(int argc, char **argv) {
    /* --seed N picks another random stream. --quick changes nothing: the
     * run stops as soon as it succeeds, well under a second here. */
    uint64_t seed = 1;
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--seed") == 0) seed = strtoull(argv[i + 1], NULL, 10);

    /* g's initial weights (randn with fixed seeds, scaled); zero biases. */
    w1 = weight(4, 16, 11, 0.3), b1 = bias(16);
    w2 = weight(16, 2, 12, 0.3), b2 = bias(2);
    gad_tensor *params[4] = {w1, b1, w2, b2};
    gad_optim *opt = gad_adamw_new(params, 4, &(gad_adamw_opts){.lr = LR, .no_weight_decay = 1});
    gad_rng *rng = gad_rng_new(seed);
    if (!opt || !rng) return fail("set-up");

    static float obs[MAX_STEPS][4]; /* one episode's observations */
    static int64_t actions[MAX_STEPS];
    static float returns[MAX_STEPS];
    int lengths[MAX_EPISODES];
    int solved_at = -1;
    double mean_len = 0;

    for (int ep = 0; ep < MAX_EPISODES && solved_at < 0; ep++) {
        /* Play one episode with the current policy. */
        cartpole cart;
        cart_reset(&cart, rng);
        int T = 0, done = 0;
        gad_no_grad_begin(); /* acting needs no tape */
        while (!done && T < MAX_STEPS) {
            observe(&cart, obs[T]);
            gad_scope_begin();
            float p[2];
            gad_tensor *o = gad_from_f32(obs[T], (int64_t[]){1, 4}, 2);
            gad_read_f32(gad_softmax(policy(o), -1), p, 2);
            gad_scope_end();
            actions[T] = gad_rng_uniform(rng) < p[0] ? 0 : 1; /* sample a ~ pi */
            done = cart_step(&cart, (int)actions[T]);
            T++;
        }
        gad_no_grad_end();
        lengths[ep] = T;

        /* Discounted returns, backwards from the last step. */
        float G = 0;
        for (int t = T - 1; t >= 0; t--) returns[t] = G = 1.0f + GAMMA * G;

        /* One update on the whole episode. */
        gad_scope_begin();
        gad_tensor *o = gad_from_f32(&obs[0][0], (int64_t[]){T, 4}, 2);
        gad_tensor *a = gad_from_i64(actions, (int64_t[]){T}, 1);
        gad_tensor *adv = gad_whiten(gad_from_f32(returns, (int64_t[]){T}, 1));
        gad_tensor *logp = gad_categorical_log_prob(policy(o), a); /* [T] */
        gad_tensor *loss = gad_neg(gad_mean_all(gad_mul(logp, adv)));
        gad_tensor *grads[4];
        if (gad_grad(loss, params, 4, grads) != GAD_OK) return fail("grad");
        if (gad_optim_step(opt, grads) != GAD_OK) return fail("optimizer step");

        /* Success test: the mean length of the last 20 episodes. */
        if (ep + 1 >= WINDOW) {
            mean_len = 0;
            for (int i = ep + 1 - WINDOW; i <= ep; i++) mean_len += lengths[i];
            mean_len /= WINDOW;
            if (mean_len >= TARGET) solved_at = ep;
        }
        if (ep % 10 == 0 || solved_at >= 0)
            printf("ep %3d steps %3d loss %.4f\n", ep, T, gad_item(loss));
        gad_scope_end();
    }

    gad_optim_free(opt);
    for (int i = 0; i < 4; i++) gad_release(params[i]);
    gad_rng_free(rng);
    if (solved_at < 0) {
        fprintf(stderr, "reinforce_cartpole: FAILED: mean length of the last %d episodes "
                "%.1f < %.0f after %d episodes\n", WINDOW, mean_len, TARGET, MAX_EPISODES);
        return 1;
    }
    printf("solved at episode %d: mean length of the last %d episodes %.1f >= %.0f\n",
           solved_at, WINDOW, mean_len, TARGET);
    return 0;
}
