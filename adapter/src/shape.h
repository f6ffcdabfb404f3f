/*
 * Leaf: a chain's expected shape on the cluster.
 *
 * Does the cluster hold the topics an adapter is about to use, in the shape
 * its guarantees need? Every tier, the DLQ, the version changelog and the
 * parked keys must exist with at least the source's partition count (a
 * copy goes to the partition number it came from), and the changelog and
 * the parked keys must be compacted.
 * A pure function of the names and a metadata snapshot (plan.h), so it is
 * tested without a broker; the adapter's startup check (startup_check.c)
 * reads the snapshot and acts on the result.
 */
#ifndef KRETRY_TOPO_SHAPE_H
#define KRETRY_TOPO_SHAPE_H

#include "diag.h"
#include "meta.h"

/* The topics of one adapter, all borrowed. */
typedef struct {
        const char *source;
        char *const *tiers; /* tier_cnt names, tier 1 first */
        int tier_cnt;
        const char *dlq;
        const char *changelog; /* NULL: versioning off */
        const char *file;   /* the topology file, for the fix; NULL: unknown */
        const char *parked; /* the parked keys; NULL: no park_key */
} kretry_shape_t;

/* Check @p meta against @p s: one error per problem (a topic missing or
 * with fewer partitions than the source, a changelog or parked keys not
 * compacted), each
 * naming the topic and the fix, and warnings when the changelog's
 * cleanup.policy is unknown (meta's compact < 0) or a tier or the DLQ takes
 * smaller messages than the source plus KRETRY_COPY_HEADROOM. Diagnostics have
 * no position. Returns the number of errors. */
int kretry_shape_check(const kretry_shape_t *s,
                       const kretry_meta_t *meta,
                       kretry_diags_t *d);

#endif
