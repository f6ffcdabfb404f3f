/*
 * The structural pass over a topology file, driven by its libcyaml schema.
 *
 * libcyaml 1.3.1 stops at the first problem and reports only the enclosing
 * mapping's position ("in mapping (line: 1, column: 1)"). This pass walks
 * libyaml's events alongside the same schema before libcyaml loads the file:
 * it reports every syntax error, unknown key, duplicate key, missing
 * required key, wrong node type and invalid enumeration value with the line
 * and column of the offending node, and records the position of every value
 * by its path ("topologies[0].retry.jitter") so that semantic validation can
 * point at the value it rejects. It also collects the free-form mappings,
 * which a libcyaml schema cannot describe: `kafka:` and each topology's
 * `value.schemas:`.
 */
#ifndef KRETRY_TOPO_CHECK_H
#define KRETRY_TOPO_CHECK_H

#include "diag.h"

#include <cyaml/cyaml.h>
#include <stddef.h>

typedef struct {
        char *path;
        int line, col;
} kretry_yaml_loc_t;

typedef struct {
        char *map; /* "kafka" or "topologies[i].value.schemas" */
        char *key;
        char *value;
        int line, col; /* position of the value */
} kretry_yaml_kv_t;

typedef struct {
        kretry_yaml_loc_t *locs;
        size_t loc_cnt, loc_size;
        kretry_yaml_kv_t *kvs; /* the free-form mappings' entries */
        size_t kv_cnt, kv_size;
} kretry_yaml_map_t;

/* Walk @p data (@p len bytes) against @p schema, filling @p map and
 * recording problems in @p d. Returns 0 when libcyaml can load the file,
 * -1 when an error was recorded. */
int kretry_yaml_check(const char *data,
                      size_t len,
                      const cyaml_schema_value_t *schema,
                      kretry_yaml_map_t *map,
                      kretry_diags_t *d);

void kretry_yaml_map_clear(kretry_yaml_map_t *map);

/* Position of the node at @p path, or of its nearest recorded ancestor
 * ("a.b[2].c" falls back to "a.b[2]", then "a.b", ...); 0/0 if none. */
void kretry_yaml_map_pos(const kretry_yaml_map_t *map,
                         const char *path,
                         int *linep,
                         int *colp);

#endif
