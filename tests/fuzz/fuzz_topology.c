/* Fuzz target: a topology file (YAML) as an operator may write it. */
#include "topology.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        kretry_diags_t d;
        kretry_diags_init(&d);
        kretry_topology_file_t *f = kretry_topology_file_parse(
                (const char *)data, size, "fuzz.yaml", &d);
        kretry_topology_file_destroy(f);
        kretry_diags_clear(&d);
        return 0;
}
