/* The inside of a loaded topology file, shared by topology.c (loading,
 * lookup) and validate.c (the semantic rules). */
#ifndef KRETRY_TOPOLOGY_INT_H
#define KRETRY_TOPOLOGY_INT_H

#include "check.h"
#include "schema.h"
#include "topology.h"

struct kretry_topology_file_s {
        kretry_raw_file_t *raw; /* libcyaml's, freed with cyaml_free() */
        kretry_yaml_map_t map;  /* positions and the kafka: mapping */
        kretry_topology_t *topos;
        size_t cnt;
        kretry_topo_prop_t *props;
        size_t prop_cnt;
        char **pool; /* every string the typed model points to */
        size_t pool_cnt, pool_size;
        char *dir; /* the file's directory, for relative schema paths */
};

/* Keep @p s (malloc'ed) until the file is destroyed; NULL on OOM (then
 * @p s is freed). */
char *kretry_topology_pool(kretry_topology_file_t *f, char *s);

/* Apply the semantic rules to f->raw, filling f->topos and f->props. */
void kretry_topology_validate(kretry_topology_file_t *f, kretry_diags_t *d);

#endif
