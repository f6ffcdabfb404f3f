/*
 * Leaf: the ACL bindings a retry chain needs.
 *
 * Least privilege for a retry chain: the ACL bindings a principal needs to
 * run kretry on a chain (role run), to inspect, replay and export its DLQ
 * and read its stats (role operator), or to serve kretry ui (role ui), and
 * the comparison of those bindings with the operations a cluster with an
 * authorizer reports as allowed (DescribeTopics and DescribeConsumerGroups
 * with authorized operations). Plain data: no request is made here; the
 * startup check (startup_check.c) and `kretry topology acls` make them.
 *
 * What each role needs, from what kretry calls:
 * - run: Read on the source and every tier (consumed), Write on every tier
 *   and the DLQ (copies), Read and Write on the version changelog
 *   (restored, written), with park_key Read and Write on the parked keys
 *   (restored, written) and Read on the DLQ (the parks of a chain parked
 *   before the parked keys existed are read there once, the migration),
 *   DescribeConfigs on all of them (the startup check
 *   reads their configuration), Read on the group (join, commit, the
 *   committed offsets); under routing=transactional Write on the
 *   transactional id (an operator's transactional.id, or the prefix
 *   kretry.{group}. of the ids kretry makes). Describe is implied by Read
 *   and Write. The idempotent producer needs no IdempotentWrite on the
 *   cluster: Kafka 2.8 and later accept Write on any topic instead.
 * - operator: Read on the source, every tier and the DLQ (dlq inspect,
 *   replay and export read the DLQ; stats reads the oldest waiting message
 *   of each topic), Write on the source (replay), Describe on the group
 *   (stats reads its committed offsets), Read on {group}.kretry-replay
 *   (replay commits its progress there, stats reads it), Describe on
 *   kretry-dlq-reader (the group id of the readers of inspect, export and
 *   the page: librdkafka looks up its coordinator, and a refusal reaches
 *   the reader as an error when it comes before the reader is done).
 * - ui: what stats, inspect and export need (operator without replay:
 *   Describe on {group}.kretry-replay, whose progress the page shows, no
 *   Write); with replay, operator's bindings.
 * A Describe that a Read or Write on the same resource implies is never
 * listed.
 */
#ifndef KRETRY_ACLS_H
#define KRETRY_ACLS_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>

typedef enum {
        KRETRY_ACL_ROLE_RUN,
        KRETRY_ACL_ROLE_OPERATOR,
        KRETRY_ACL_ROLE_UI,
        KRETRY_ACL_ROLE_UI_REPLAY /* ui with the page's replay */
} kretry_acl_role_t;

/* One ALLOW binding for the principal, on any host. */
typedef struct kretry_acl_s {
        rd_kafka_ResourceType_t restype; /* TOPIC, GROUP, TRANSACTIONAL_ID */
        rd_kafka_ResourcePatternType_t pattern; /* LITERAL or PREFIXED */
        char name[256];
        rd_kafka_AclOperation_t op;
        const char *why; /* static text: what kretry does with it */
} kretry_acl_t;

typedef struct {
        kretry_acl_t *items;
        size_t cnt, size;
} kretry_acls_t;

/* The names of one chain, all borrowed. */
typedef struct {
        const char *source;
        char *const *tiers; /* tier_cnt names, tier 1 first */
        int tier_cnt;
        const char *dlq;
        const char *changelog; /* NULL: versioning off */
        const char *group;
        int transactional; /* routing=transactional */
        /* The operator's transactional.id; NULL or "": kretry makes
         * kretry.{group}.{instance}, granted by prefix. */
        const char *transactional_id;
        const char *parked; /* NULL: no ordering.on.dead.letter=park_key */
} kretry_acl_chain_t;

/* "run", "operator", "ui", "ui-replay" into *@p role: 0, or -1. */
int kretry_acl_role_parse(const char *s, kretry_acl_role_t *role);

/* Append what @p role needs on @p c to @p acls, each binding once (one
 * already there is not added again). 0, or -1 out of memory. */
int kretry_acls_add(kretry_acls_t *acls,
                    const kretry_acl_chain_t *c,
                    kretry_acl_role_t role);

void kretry_acls_clear(kretry_acls_t *acls);

/* "Read", "Write", "Describe", "DescribeConfigs", ...: the operation as
 * kafka-acls.sh spells it. */
const char *kretry_acl_op_name(rd_kafka_AclOperation_t op);

/* "topic", "group", "transactional-id" */
const char *kretry_acl_restype_name(rd_kafka_ResourceType_t restype);

/* "Read on topic orders"; "Write on transactional-id kretry.g.
 * (prefixed)" for a prefixed binding. */
void kretry_acl_describe(const kretry_acl_t *b, char *dest, size_t size);

/* The kafka-acls.sh command that grants @p b to @p principal, as the
 * admin whose client properties are in admin.properties. */
void kretry_acl_command(const kretry_acl_t *b,
                        const char *principal,
                        const char *bootstrap,
                        char *dest,
                        size_t size);

/* Whether @p ops (what the cluster allows on the resource; @p cnt
 * entries) allow @p op, with Kafka's implications: ALL allows everything,
 * Read, Write, Delete and Alter allow Describe, AlterConfigs allows
 * DescribeConfigs. */
int kretry_acl_allowed(const rd_kafka_AclOperation_t *ops,
                       size_t cnt,
                       rd_kafka_AclOperation_t op);

/* What a cluster said about one resource. */
typedef enum {
        KRETRY_AUTHZ_UNKNOWN, /* no authorizer, not found, not answered */
        KRETRY_AUTHZ_DENIED,  /* not even Describe: Read, Write missing */
        KRETRY_AUTHZ_OPS      /* ops lists what is allowed */
} kretry_authz_state_t;

typedef struct {
        rd_kafka_ResourceType_t restype;
        const char *name;
        kretry_authz_state_t state;
        const rd_kafka_AclOperation_t *ops;
        size_t ops_cnt;
} kretry_authz_t;

/* The bindings of @p need (literal topic and group bindings; others are
 * not reported by the cluster and are skipped) that @p said shows missing:
 * their indexes into @p need go to @p missing (room for need->cnt).
 * Returns how many. */
size_t kretry_acls_missing(const kretry_acls_t *need,
                           const kretry_authz_t *said,
                           size_t said_cnt,
                           size_t *missing);

#endif
