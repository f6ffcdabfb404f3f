/*
 * What a cluster needs so that it holds the topics a topology file declares:
 * a pure function of the declared topologies and a metadata snapshot, so it
 * is tested with hand-built snapshots and no broker. It never shrinks or
 * deletes: a topic with more partitions than needed is left alone, and a
 * declaration that would need fewer partitions than the source is a conflict.
 */
#ifndef KRETRY_TOPO_PLAN_H
#define KRETRY_TOPO_PLAN_H

#include "meta.h"
#include "topology.h"

#include <stddef.h>
#include <stdint.h>

typedef enum {
        KRETRY_PLAN_CREATE,         /* create with partitions, config */
        KRETRY_PLAN_ADD_PARTITIONS, /* grow to `partitions` */
        KRETRY_PLAN_ALTER_CONFIG,   /* set retention.ms, min.insync.replicas,
                                       max.message.bytes, cleanup.policy */
        KRETRY_PLAN_UNKNOWN,        /* could not be decided: see `reason` */
        KRETRY_PLAN_CONFLICT /* refused: see `reason`; nothing is applied */
} kretry_plan_op_t;

typedef struct {
        kretry_plan_op_t op;
        char topic[256];
        char role[32];          /* "source", "tier 2", "dlq" */
        const char *topology;   /* borrowed from the topology file */
        int partitions;         /* CREATE, ADD_PARTITIONS: the new count */
        int current_partitions; /* ADD_PARTITIONS */
        int replication;        /* CREATE: 0 = the cluster's default */
        /* CREATE: 0 = the cluster's default; ALTER_CONFIG: 0 = unchanged */
        int64_t retention_ms;
        int min_insync;
        int64_t max_message_bytes;
        int compact; /* CREATE, ALTER_CONFIG: cleanup.policy=compact */
        /* ALTER_CONFIG: the values it changes */
        int64_t current_retention_ms;
        int current_min_insync;
        int64_t current_max_message_bytes;
        char reason[512]; /* CONFLICT, UNKNOWN */
        /* Filled by the admin layer when applied: */
        int done; /* 1 applied, -1 failed */
        char result[512];
} kretry_plan_action_t;

typedef struct {
        kretry_plan_action_t *actions;
        size_t cnt, size;
        int conflicts; /* CONFLICT actions */
        int changes;   /* CREATE, ADD_PARTITIONS, ALTER_CONFIG */
} kretry_plan_t;

/* Compute the plan for every topology of @p topos (@p cnt of them) against
 * @p meta into @p plan (zero it first). Returns 0, or -1 out of memory. */
int kretry_plan_compute(const kretry_topology_t *topos,
                        size_t cnt,
                        const kretry_meta_t *meta,
                        kretry_plan_t *plan);

void kretry_plan_clear(kretry_plan_t *plan);

/* "create", "add partitions", "alter config", "unknown", "conflict" */
const char *kretry_plan_op_name(kretry_plan_op_t op);

#endif
