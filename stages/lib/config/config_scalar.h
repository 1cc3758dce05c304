/* config_scalar.h — how a plain YAML scalar's text is read as a null, a
 * boolean, an integer or a float (YAML 1.2 core schema). Shared by the typed
 * getters and the JSON serialiser so both agree on what "0.5" or "true" is. */
#ifndef PARITY_CONFIG_SCALAR_H
#define PARITY_CONFIG_SCALAR_H

#include <stdint.h>
#include "config/config.h"

/* A plain scalar that is empty, "~" or null/Null/NULL. */
int cfg_scalar_is_null(const cfg_node_t *nd);
/* Each returns 0 and sets *out when text has that form, -1 otherwise. */
int cfg_scalar_bool(const char *text, int *out);
int cfg_scalar_int(const char *text, int64_t *out);      /* decimal or 0x hex, in range */
int cfg_scalar_double(const char *text, double *out);    /* also .inf, -.inf, .nan */

#endif
