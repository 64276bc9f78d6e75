/* params.h: what the optimizers (src/optim/optim.c) take from the
 * parameter sets (params.c). */
#ifndef GAD_NN_PARAMS_H
#define GAD_NN_PARAMS_H

/* 1 if s matches pattern, in which '*' matches any run of bytes (none
 * included) and every other byte itself; else 0. */
int gad__params_match(const char *pattern, const char *s);

/* The parameter or buffer named name, or NULL (nothing recorded): the
 * layers' lookups of their own optional tensors (batch norm's). */
struct gad_params;
gad_tensor *gad__params_find(const struct gad_params *ps, const char *name);

#endif
