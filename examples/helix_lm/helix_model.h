/* helix_model.h: the HELIX byte language model of helix_lm (helix_model.c
 * builds it; model.h is its interface). */
#ifndef HELIX_MODEL_H
#define HELIX_MODEL_H

#include "model.h"

#endif
