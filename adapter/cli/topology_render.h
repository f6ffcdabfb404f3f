/*
 * How `kretry topology` shows a topology and a plan to a person (text) or a
 * program (--output json). The library computes; this file only renders.
 */
#ifndef KRETRY_CLI_TOPOLOGY_RENDER_H
#define KRETRY_CLI_TOPOLOGY_RENDER_H

#include "plan.h"
#include "topology.h"

#include <stdio.h>

/* Topology @p t of file @p f; the file's kafka: properties with secret
 * values masked (secret.h), handler.http's header names without values. */
void topology_describe_text(FILE *out,
                            const kretry_topology_file_t *f,
                            const kretry_topology_t *t);
/* Returns 0, or -1 when out of memory. */
int topology_describe_json(FILE *out,
                           const kretry_topology_file_t *f,
                           const kretry_topology_t *const *topos,
                           size_t cnt);

void topology_plan_text(FILE *out, const kretry_plan_t *plan);
int topology_plan_json(FILE *out, const kretry_plan_t *plan);

#endif
