/*
 * gen_properties: docs/properties.md, rendered from the property table
 * (kretry_conf_properties_md), on stdout. scripts/gen-properties.sh runs it;
 * test_conf's test_properties_doc fails when the file and the table differ.
 */
#include "conf.h"

#include <stdio.h>
#include <stdlib.h>

int main(void) {
        size_t n = kretry_conf_properties_md(NULL, 0);
        char *md = malloc(n + 1);
        if (!md)
                return 1;
        kretry_conf_properties_md(md, n + 1);
        int rc = fwrite(md, 1, n, stdout) != n;
        free(md);
        return rc;
}
