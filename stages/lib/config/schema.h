/* schema.h — the key tables of the config kinds that more than one program
 * reads: each reader rejects keys outside its table (config_check_keys), and
 * `plan --schema` prints them as part of the model config's schema, which
 * the pipeline's injection tests are generated from. */
#ifndef PARITY_CONFIG_SCHEMA_H
#define PARITY_CONFIG_SCHEMA_H

/* NULL-terminated dotted key patterns ("extra.*": any key below extra). */
extern const char *const prep_config_keys[];       /* configs/preprocess/NAME.yaml */
extern const char *const precision_config_keys[];  /* configs/precisions/NAME.yaml */
extern const char *const decode_config_keys[];     /* detection: (map-eval --decode) */

#endif
