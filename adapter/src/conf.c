/* Leaf: the configuration and its property table. */
#include "conf.h"

#include "parse.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
        PROP_STR,
        PROP_INT,
        PROP_DURATION,
        PROP_PERCENT,
        PROP_TIERS,
        PROP_CHOICE, /* one of `choices` ("a|b"), stored as its index */
} prop_type_t;

/* The declarative property table: it drives kretry_conf_set(), defaults,
 * kretry_conf_get() and kretry_conf_properties_dump(). */
static const struct prop {
        const char *name;
        prop_type_t type;
        size_t offset;
        int64_t min, max; /* PROP_INT and PROP_DURATION */
        const char *defval;
        const char *desc;
        const char *choices; /* PROP_CHOICE */
} props[] = {
        {"source.topic", PROP_STR, offsetof(kretry_conf_t, source_topic), 0, 0,
         NULL, "topic consumed and retried (required)"},
        {"retry.tiers", PROP_TIERS, 0, 0, 0, "1s,10s,1m",
         "comma-separated tier delays, 1..32 of them (units ms, s, m, h, d; "
         "0 retries as soon as the copy is read, the partition still moving "
         "on)"},
        {"retry.max.attempts", PROP_INT, offsetof(kretry_conf_t, max_attempts),
         1, 1000000, NULL,
         "handler attempts in all, the first delivery included (default: tiers "
         "+ "
         "1)"},
        {"retry.jitter", PROP_PERCENT, 0, 0, 0, "10%",
         "each delay varies by up to +/- this share (0%..100%)"},
        {"retry.max.age", PROP_DURATION, offsetof(kretry_conf_t, max_age_ms), 0,
         0, "0",
         "a message older than this since it first entered is dead-lettered "
         "(expired) at its next failure; 0 = never"},
        {"retry.topic.pattern", PROP_STR,
         offsetof(kretry_conf_t, retry_pattern), 0, 0, "{source}.retry.{n}",
         "tier topic names; {source} and {n} (1-based tier) are replaced"},
        {"dlq.topic", PROP_STR, offsetof(kretry_conf_t, dlq_topic), 0, 0,
         "{source}.dlq", "dead-letter topic; {source} is replaced"},
        {"error.max.length", PROP_INT,
         offsetof(kretry_conf_t, error_max_length), 16, 65536, "512",
         "bytes of the handler's error message kept"},
        {"revoke.timeout.ms", PROP_INT,
         offsetof(kretry_conf_t, revoke_timeout_ms), 0, 3600000, "30000",
         "bounded wait, on revoke and close, for the revoked partitions' "
         "handler calls, held messages and in-flight copies"},
        {"ordering", PROP_CHOICE, offsetof(kretry_conf_t, ordering), 0, 0,
         "none",
         "none: tiers are independent; key: messages of one key reach the "
         "handler in their original order, across retries, one at a time; "
         "partition: one message of a partition in the handler at a time",
         "none|key|partition"},
        {"handler.concurrency", PROP_INT, offsetof(kretry_conf_t, concurrency),
         1, 1024, "1",
         "messages in the handler at once (held ones included), each on one "
         "of this many worker threads (1..1024)"},
        {"handler.thread", PROP_CHOICE,
         offsetof(kretry_conf_t, handler_poll_thread), 0, 0, "worker",
         "worker: the handler runs on kretry's worker threads; poll: on the "
         "thread that calls kretry_adapter_poll(), which it must not block "
         "(hold the message and complete it later; a revocation does not "
         "wait for held messages, whose answers are then discarded)",
         "worker|poll"},
        {"handler.sched", PROP_CHOICE,
         offsetof(kretry_conf_t, handler_sched_inherit), 0, 0, "batch",
         "batch: the worker threads run under Linux's SCHED_BATCH policy, so "
         "that a worker woken for a message never preempts the polling "
         "thread or librdkafka's threads (the group stays served while "
         "handlers use every core, and a fast handler costs fewer context "
         "switches); inherit: they keep the policy of the thread that "
         "created the adapter",
         "batch|inherit"},
        {"max.inflight.messages", PROP_INT,
         offsetof(kretry_conf_t, max_inflight), 1, 10000000, "1000",
         "messages consumed and not yet decided (in the handler, held, or "
         "waiting for a worker or for their key) before no more are taken "
         "(fetching goes on up to librdkafka's queued.* bounds)"},
        {"max.inflight.bytes", PROP_INT,
         offsetof(kretry_conf_t, max_inflight_bytes), 1, 2147483647, "67108864",
         "bytes of key and value of the messages consumed and not yet "
         "decided (all a message waiting behind its key takes: it is "
         "copied) before no more are taken (1..2147483647; a message larger "
         "than this is still taken when nothing else is in flight)"},
        {"max.inflight.copies", PROP_INT,
         offsetof(kretry_conf_t, max_inflight_copies), 1, 10000000, "10000",
         "copies (tier, DLQ, version changelog) produced and not yet "
         "acknowledged before no more messages are taken: each keeps its "
         "source message, and the Fetch response holding it, in memory "
         "until the broker acknowledges it (without this bound a handler "
         "deciding faster than the broker acknowledges fills librdkafka's "
         "producer queue, queue.buffering.max.messages)"},
        {"tier.buffer.messages", PROP_INT,
         offsetof(kretry_conf_t, tier_buffer_msgs), 0, 1000000, "1000",
         "tier messages kept in memory per tier partition behind one that is "
         "not due yet, so that the partition keeps fetching; at this bound "
         "(or tier.buffer.bytes, or tier.buffer.total.bytes) the partition is "
         "paused until half of it is free (0: pause at once)"},
        {"tier.buffer.bytes", PROP_INT,
         offsetof(kretry_conf_t, tier_buffer_bytes), 0, 2147483647, "1048576",
         "memory those messages may take per tier partition (key, value, "
         "headers and kretry's record of each)"},
        {"tier.buffer.total.bytes", PROP_INT,
         offsetof(kretry_conf_t, tier_buffer_total), 0, 2147483647, "67108864",
         "memory those messages may take in all tier partitions of the "
         "adapter together; a full buffer waits (its partition paused) until "
         "the total is at most three quarters of this"},
        {"ordering.on.dead.letter", PROP_CHOICE,
         offsetof(kretry_conf_t, park_key), 0, 0, "continue",
         "ordering key: when a key's head is dead-lettered, continue with its "
         "next message, or park_key: send the key's following messages to the "
         "DLQ until it is replayed",
         "continue|park_key"},
        {"ordering.parked.topic", PROP_STR,
         offsetof(kretry_conf_t, parked_topic), 0, 0, "{group}.{source}.parked",
         "park_key: compacted topic of the parked keys, co-partitioned with "
         "the "
         "source, read on assignment instead of the DLQ"},
        {"versioning.header", PROP_STR, offsetof(kretry_conf_t, version_header),
         0, 0, "",
         "header carrying a decimal version; messages older than the highest "
         "version handled OK for their key are skipped (empty: off)"},
        {"versioning.field", PROP_STR, offsetof(kretry_conf_t, version_field),
         0, 0, "",
         "with value.format avro: an int or long field of the record carrying "
         "the version, instead of versioning.header (empty: off)"},
        {"versioning.discard", PROP_CHOICE,
         offsetof(kretry_conf_t, discard_equal), 0, 0, "older",
         "older: skip lower versions; older_or_equal: also equal ones "
         "(duplicate suppression)",
         "older|older_or_equal"},
        {"versioning.topic", PROP_STR, offsetof(kretry_conf_t, versions_topic),
         0, 0, "{group}.{source}.versions",
         "compacted changelog of the version store, co-partitioned with the "
         "source"},
        {"stats.interval.ms", PROP_INT,
         offsetof(kretry_conf_t, stats_interval_ms), 0, 86400000, "0",
         "how often the stats callback is called (0: never)"},
        {"retry.permanent.errors", PROP_STR,
         offsetof(kretry_conf_t, permanent_errors), 0, 0, "",
         "comma-separated handler error codes that always mean FAIL, even when "
         "the handler answered RETRY"},
        {"breaker.failures", PROP_INT,
         offsetof(kretry_conf_t, breaker_failures), 0, 1000000, "0",
         "circuit breaker: transient failures in a row (no success between) "
         "that open it (0: no breaker)"},
        {"breaker.distinct.keys", PROP_INT,
         offsetof(kretry_conf_t, breaker_keys), 1, 64, "1",
         "circuit breaker: how many distinct keys that run must span "
         "(1..64)"},
        {"breaker.cooldown", PROP_DURATION,
         offsetof(kretry_conf_t, breaker_cooldown_ms), 0, 0, "30s",
         "circuit breaker: first pause of consumption; doubles while the "
         "dependency stays down (up to 16 times)"},
        {"restore.timeout.ms", PROP_INT,
         offsetof(kretry_conf_t, restore_timeout_ms), 100, 3600000, "60000",
         "bounded wait, on assignment, for rebuilding key chains and versions "
         "from the tier partitions and the changelog"},
        {"topology.check", PROP_CHOICE, offsetof(kretry_conf_t, topology_check),
         0, 0, "fail",
         "before subscribing, check on the cluster that every tier, the DLQ "
         "and the version changelog exist with at least the source's "
         "partitions and the changelog is compacted, never creating a topic, "
         "and, on a cluster with an authorizer, that the client may do what "
         "the chain needs (each missing ACL named); fail: refuse to start; "
         "warn: log the problems and start; off: skip the check",
         "fail|warn|off"},
        {"topology.check.timeout.ms", PROP_INT,
         offsetof(kretry_conf_t, topology_check_timeout_ms), 100, 600000,
         "10000",
         "bounded wait for the topology check's metadata and the changelog's "
         "cleanup.policy"},
        {"produce.retry.backoff.ms", PROP_INT,
         offsetof(kretry_conf_t, produce_backoff_ms), 1, 10000, "100",
         "first wait before a failed copy is produced again (doubles up to 10 "
         "s; 1..10000)"},
        {"routing", PROP_CHOICE, offsetof(kretry_conf_t, routing_txn), 0, 0,
         "at_least_once",
         "at_least_once: a copy is acknowledged, then its source offset "
         "committed (a crash between writes a second copy); transactional: "
         "the copies to tiers, DLQ and changelog and the offsets of what "
         "they decide are committed in one Kafka transaction (real Kafka; "
         "the handler's own side effects stay at least once)",
         "at_least_once|transactional"},
        {"transaction.interval.ms", PROP_INT,
         offsetof(kretry_conf_t, txn_interval_ms), 1, 60000, "100",
         "routing transactional: a transaction is committed this long after "
         "it began (or at transaction.max.messages), so that each carries "
         "many copies and offsets"},
        {"transaction.max.messages", PROP_INT,
         offsetof(kretry_conf_t, txn_max_msgs), 1, 1000000, "10000",
         "routing transactional: outcomes (copies and OKs) decided in one "
         "transaction before it is committed early"},
        {"headers.profile", PROP_CHOICE,
         offsetof(kretry_conf_t, headers_spring), 0, 0, "kretry",
         "kretry: DLQ copies carry the kretry-* headers; spring: also Spring "
         "Kafka's DLT headers (kafka_dlt-exception-fqcn with the error code, "
         "-exception-message, -original-topic, -partition, -offset and "
         "-timestamp in Spring's binary forms, -original-consumer-group, "
         "retry_topic-attempts), so that Spring's DLT tooling reads kretry's "
         "dead letters",
         "kretry|spring"},
        {"value.format", PROP_CHOICE, offsetof(kretry_conf_t, value_avro), 0, 0,
         "bytes",
         "bytes: values are opaque; avro: decoded with value.schema before the "
         "handler, undecodable ones dead-lettered (class schema)",
         "bytes|avro"},
        {"value.schema", PROP_STR, offsetof(kretry_conf_t, value_schema), 0, 0,
         "",
         "value.format avro: the value's schema (.avsc file), the record the "
         "handler reads"},
        {"value.wire", PROP_CHOICE, offsetof(kretry_conf_t, value_confluent), 0,
         0, "raw",
         "raw: Avro binary of value.schema; confluent: magic byte 0, 4-byte "
         "big-endian schema id, Avro binary",
         "raw|confluent"},
        {"value.schema.ids", PROP_STR,
         offsetof(kretry_conf_t, value_schema_ids), 0, 0, "",
         "value.wire confluent: writer schema of each id, \"ID=PATH,...\", "
         "resolved to value.schema (empty: any id, read with value.schema)"},
};

#define PROP_CNT (sizeof(props) / sizeof(props[0]))

/* librdkafka properties the guarantees rest on, and the values kretry uses. */
static const struct {
        const char *name;
        const char *value;
        int consumer; /* 1: consumer, 0: producer */
} fixed[] = {
        {"enable.auto.offset.store", "false", 1},
        {"enable.auto.commit", "false", 1},
        {"enable.partition.eof", "false", 1},
        {"enable.idempotence", "true", 0},
        {"acks", "all", 0},
        {"request.required.acks", "all", 0},
};

/* librdkafka defaults kretry changes; an operator may set them back. */
static const struct {
        const char *name;
        const char *value;
        int consumer; /* 1: consumer, 0: producer */
        const char *why;
        /* 1: for the classic group protocol only, applied when the consumer
         * is made (kretry_conf_consumer_defaults): under
         * group.protocol=consumer (KIP-848) the broker assigns, always
         * incrementally, and librdkafka refuses any client-side assignor
         * that was ever set. */
        int classic;
} changed[] = {
        {"auto.offset.reset", "earliest", 1,
         "a new group starts at the source's beginning (tier partitions always "
         "start at their earliest offset when the group has none there)"},
        /* Kafka Streams commits as often under exactly-once. */
        {"auto.commit.interval.ms", "100", 1,
         "stored offsets are committed every 100 ms, not librdkafka's 5 s: a "
         "crash repeats about that much of the outcomes, for at most ten "
         "OffsetCommit requests a second per instance while messages are "
         "decided, none while nothing new is stored"},
        {"partition.assignment.strategy", "cooperative-sticky", 1,
         "incremental rebalancing: a member joining or leaving moves only the "
         "partitions that change owner (with their tier partitions); the "
         "others keep their held messages, buffers and handlers running. The "
         "members of a group must agree: librdkafka cannot list an eager and "
         "a cooperative assignor together. Classic group protocol only: "
         "under group.protocol=consumer the broker assigns, always "
         "incrementally, and kretry sets no assignor",
         1},
        {"transaction.timeout.ms", "10000", 0,
         "routing transactional: an instance killed with a transaction open "
         "holds back read_committed readers of its tiers and DLQ until the "
         "broker aborts that transaction, this long after its last "
         "request (plus the broker's "
         "transaction.abort.timed.out.transaction.cleanup.interval.ms), not "
         "librdkafka's 60 s"},
        {"message.max.bytes", "16777216", 0,
         "a copy is its source message plus a few hundred bytes of kretry "
         "headers: the topic's limit on the broker decides what fits, not "
         "librdkafka's lower client-side default"},
};

/* Unprefixed librdkafka properties go to both clients, except these, which
 * only one of them understands (librdkafka warns about the others). */
static const struct {
        const char *prefix;
        int consumer;
} scoped[] = {
        {"group.", 1},
        {"session.timeout.ms", 1},
        {"heartbeat.", 1},
        {"auto.offset.reset", 1},
        {"auto.commit.", 1},
        {"enable.auto.commit", 1},
        {"fetch.", 1},
        {"max.poll.interval.ms", 1},
        {"partition.assignment.strategy", 1},
        {"isolation.level", 1},
        {"queued.", 1},
        {"max.partition.fetch.bytes", 1},
        {"check.crcs", 1},
        {"enable.partition.eof", 1},
        {"linger.ms", 0},
        {"queue.buffering.", 0},
        {"batch.", 0},
        {"compression.", 0},
        {"message.timeout.ms", 0},
        {"delivery.timeout.ms", 0},
        {"retries", 0},
        {"message.send.max.retries", 0},
        {"transactional.id", 0},
        {"transaction.timeout.ms", 0},
        {"sticky.partitioning.linger.ms", 0},
};

/* 1: consumer only, 0: producer only, -1: both. */
static int rdkafka_scope(const char *name) {
        for (size_t i = 0; i < sizeof(scoped) / sizeof(scoped[0]); i++)
                if (!strncmp(name, scoped[i].prefix, strlen(scoped[i].prefix)))
                        return scoped[i].consumer;
        return -1;
}

/* The index of @p name among the consumer defaults for the classic
 * protocol only, -1 if it is not one. */
static int classic_default(const char *name) {
        int c = 0;
        for (size_t i = 0; i < sizeof(changed) / sizeof(changed[0]); i++) {
                if (!changed[i].classic)
                        continue;
                if (!strcmp(changed[i].name, name))
                        return c;
                c++;
        }
        return -1;
}

int kretry_conf_consumer_protocol(const rd_kafka_conf_t *rc) {
        char v[32];
        size_t n = sizeof(v);
        return rd_kafka_conf_get(rc, "group.protocol", v, &n) ==
                       RD_KAFKA_CONF_OK &&
               !strcmp(v, "consumer");
}

void kretry_conf_consumer_defaults(const kretry_conf_t *conf,
                                   rd_kafka_conf_t *rc) {
        if (kretry_conf_consumer_protocol(rc))
                return;
        int c = 0; /* the index classic_default() gives */
        for (size_t i = 0; i < sizeof(changed) / sizeof(changed[0]); i++) {
                if (!changed[i].classic)
                        continue;
                if (!(conf->classic_set & (1u << c)))
                        rd_kafka_conf_set(rc, changed[i].name, changed[i].value,
                                          NULL, 0);
                c++;
        }
}

static const struct prop *prop_find(const char *name) {
        for (size_t i = 0; i < PROP_CNT; i++)
                if (!strcmp(props[i].name, name))
                        return &props[i];
        return NULL;
}

static kretry_err_t prop_set(kretry_conf_t *conf,
                             const struct prop *p,
                             const char *value,
                             char *errstr,
                             size_t errstr_size) {
        char reason[256];
        int64_t v;
        void *field = (char *)conf + p->offset;
        reason[0]   = '\0';
        switch (p->type) {
        case PROP_STR: {
                char *dup = strdup(value);
                if (!dup)
                        return KRETRY_ERR_NO_MEM;
                free(*(char **)field);
                *(char **)field = dup;
                return KRETRY_ERR_OK;
        }
        case PROP_INT:
                if (kretry_parse_int64(value, p->min, p->max, &v, reason,
                                       sizeof(reason)))
                        break;
                *(int *)field = (int)v;
                return KRETRY_ERR_OK;
        case PROP_DURATION:
                if (kretry_parse_duration_ms(value, &v, reason, sizeof(reason)))
                        break;
                *(int64_t *)field = v;
                return KRETRY_ERR_OK;
        case PROP_PERCENT:
                if (kretry_parse_percent(value, &conf->jitter, reason,
                                         sizeof(reason)))
                        break;
                return KRETRY_ERR_OK;
        case PROP_CHOICE: {
                int idx = 0;
                for (const char *c = p->choices; c; idx++) {
                        size_t n = strcspn(c, "|");
                        if (strlen(value) == n && !strncmp(c, value, n)) {
                                *(int *)field = idx;
                                return KRETRY_ERR_OK;
                        }
                        c = c[n] ? c + n + 1 : NULL;
                }
                snprintf(reason, sizeof(reason), "\"%s\" is not one of %s",
                         value, p->choices);
                break;
        }
        case PROP_TIERS: {
                int64_t tiers[KRETRY_MAX_TIERS];
                int n = kretry_parse_duration_list(
                        value, tiers, KRETRY_MAX_TIERS, reason, sizeof(reason));
                if (n < 0)
                        break;
                /* A delay of 0 is an immediate retry that still leaves the
                 * partition: the copy is handled as soon as it is read. */
                memcpy(conf->tiers_ms, tiers, sizeof(tiers[0]) * (size_t)n);
                conf->tier_cnt = n;
                return KRETRY_ERR_OK;
        }
        }
        if (errstr && errstr_size)
                snprintf(errstr, errstr_size, "%s: %s", p->name, reason);
        return KRETRY_ERR_INVALID_VALUE;
}

kretry_conf_t *kretry_conf_new(void) {
        kretry_conf_t *conf = calloc(1, sizeof(*conf));
        if (!conf)
                return NULL;
        conf->consumer = rd_kafka_conf_new();
        conf->producer = rd_kafka_conf_new();
        if (!conf->consumer || !conf->producer)
                goto err;
        for (size_t i = 0; i < PROP_CNT; i++)
                if (props[i].defval &&
                    prop_set(conf, &props[i], props[i].defval, NULL, 0))
                        goto err;
        for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
                rd_kafka_conf_set(fixed[i].consumer ? conf->consumer
                                                    : conf->producer,
                                  fixed[i].name, fixed[i].value, NULL, 0);
        for (size_t i = 0; i < sizeof(changed) / sizeof(changed[0]); i++)
                if (!changed[i].classic)
                        rd_kafka_conf_set(changed[i].consumer ? conf->consumer
                                                              : conf->producer,
                                          changed[i].name, changed[i].value,
                                          NULL, 0);
        return conf;
err:
        kretry_conf_destroy(conf);
        return NULL;
}

void kretry_conf_destroy(kretry_conf_t *conf) {
        if (!conf)
                return;
        for (size_t i = 0; i < PROP_CNT; i++)
                if (props[i].type == PROP_STR)
                        free(*(char **)((char *)conf + props[i].offset));
        if (conf->consumer)
                rd_kafka_conf_destroy(conf->consumer);
        if (conf->producer)
                rd_kafka_conf_destroy(conf->producer);
        free(conf);
}

kretry_conf_t *kretry_conf_dup(const kretry_conf_t *src) {
        if (!src)
                return NULL;
        kretry_conf_t *conf = calloc(1, sizeof(*conf));
        if (!conf)
                return NULL;
        *conf          = *src;
        conf->consumer = rd_kafka_conf_dup(src->consumer);
        conf->producer = rd_kafka_conf_dup(src->producer);
        for (size_t i = 0; i < PROP_CNT; i++) {
                if (props[i].type != PROP_STR)
                        continue;
                char **field = (char **)((char *)conf + props[i].offset);
                if (*field && !(*field = strdup(*field)))
                        goto err;
        }
        return conf;
err:
        /* Strings not yet duplicated still point into src: clear them. */
        for (size_t i = 0; i < PROP_CNT; i++) {
                if (props[i].type != PROP_STR)
                        continue;
                char **field = (char **)((char *)conf + props[i].offset);
                char *const *orig =
                        (char *const *)((const char *)src + props[i].offset);
                if (*field == *orig)
                        *field = NULL;
        }
        kretry_conf_destroy(conf);
        return NULL;
}

static kretry_err_t rdkafka_set(rd_kafka_conf_t *rconf,
                                const char *name,
                                const char *value,
                                char *errstr,
                                size_t errstr_size) {
        char buf[512];
        rd_kafka_conf_res_t r =
                rd_kafka_conf_set(rconf, name, value, buf, sizeof(buf));
        if (r == RD_KAFKA_CONF_OK)
                return KRETRY_ERR_OK;
        if (errstr && errstr_size)
                snprintf(errstr, errstr_size, "%s", buf);
        return r == RD_KAFKA_CONF_UNKNOWN ? KRETRY_ERR_UNKNOWN_PROPERTY
                                          : KRETRY_ERR_INVALID_VALUE;
}

static int fixed_refuses(const char *name,
                         const char *value,
                         char *errstr,
                         size_t errstr_size) {
        for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
                if (strcmp(fixed[i].name, name) ||
                    !strcmp(fixed[i].value, value))
                        continue;
                if (!strcmp(fixed[i].value, "all") && !strcmp(value, "-1"))
                        continue;
                if (errstr && errstr_size)
                        snprintf(errstr, errstr_size,
                                 "%s is fixed to %s by kretry: its delivery "
                                 "guarantees depend on it",
                                 name, fixed[i].value);
                return 1;
        }
        return 0;
}

kretry_err_t kretry_conf_set(kretry_conf_t *conf,
                             const char *name,
                             const char *value,
                             char *errstr,
                             size_t errstr_size) {
        if (errstr && errstr_size)
                errstr[0] = '\0';
        if (!conf || !name || !value) {
                if (errstr && errstr_size)
                        snprintf(errstr, errstr_size,
                                 "conf, name and value are required");
                return KRETRY_ERR_INVALID_ARG;
        }
        const struct prop *p = prop_find(name);
        if (p)
                return prop_set(conf, p, value, errstr, errstr_size);

        rd_kafka_conf_t *targets[2] = {conf->consumer, conf->producer};
        const char *rname           = name;
        if (!strncmp(name, "consumer.", 9)) {
                targets[1] = NULL;
                rname      = name + 9;
        } else if (!strncmp(name, "producer.", 9)) {
                targets[0] = NULL;
                rname      = name + 9;
        } else if (rdkafka_scope(name) >= 0) {
                targets[rdkafka_scope(name) ? 1 : 0] = NULL;
        }
        if (fixed_refuses(rname, value, errstr, errstr_size))
                return KRETRY_ERR_INVALID_VALUE;
        for (int i = 0; i < 2; i++) {
                if (!targets[i])
                        continue;
                kretry_err_t err = rdkafka_set(targets[i], rname, value, errstr,
                                               errstr_size);
                if (err)
                        return err;
        }
        int c = classic_default(rname);
        if (c >= 0 && targets[0])
                conf->classic_set |= 1u << c;
        return KRETRY_ERR_OK;
}

static void prop_render(const kretry_conf_t *conf,
                        const struct prop *p,
                        char *dest,
                        size_t dest_size) {
        const void *field = (const char *)conf + p->offset;
        size_t len        = 0;
        switch (p->type) {
        case PROP_STR: {
                const char *s = *(char *const *)field;
                snprintf(dest, dest_size, "%s", s ? s : "");
                break;
        }
        case PROP_INT:
                if (field == &conf->max_attempts)
                        snprintf(dest, dest_size, "%d",
                                 kretry_conf_max_attempts(conf));
                else
                        snprintf(dest, dest_size, "%d", *(const int *)field);
                break;
        case PROP_DURATION:
                kretry_format_duration(*(const int64_t *)field, dest,
                                       dest_size);
                break;
        case PROP_PERCENT:
                snprintf(dest, dest_size, "%g%%", conf->jitter * 100.0);
                break;
        case PROP_CHOICE: {
                const char *c = p->choices;
                for (int i = *(const int *)field; i > 0 && c; i--)
                        c = strchr(c, '|') ? strchr(c, '|') + 1 : NULL;
                snprintf(dest, dest_size, "%.*s", c ? (int)strcspn(c, "|") : 0,
                         c ? c : "");
                break;
        }
        case PROP_TIERS:
                dest[0] = '\0';
                for (int i = 0; i < conf->tier_cnt && len < dest_size; i++) {
                        char d[32];
                        kretry_format_duration(conf->tiers_ms[i], d, sizeof(d));
                        len += (size_t)snprintf(dest + len, dest_size - len,
                                                "%s%s", i ? "," : "", d);
                }
                break;
        }
}

kretry_err_t kretry_conf_get(const kretry_conf_t *conf,
                             const char *name,
                             char *dest,
                             size_t dest_size) {
        if (!conf || !name || !dest || !dest_size)
                return KRETRY_ERR_INVALID_ARG;
        const struct prop *p = prop_find(name);
        if (p) {
                prop_render(conf, p, dest, dest_size);
                return KRETRY_ERR_OK;
        }
        const rd_kafka_conf_t *rconf =
                rdkafka_scope(name) == 0 ? conf->producer : conf->consumer;
        if (!strncmp(name, "consumer.", 9)) {
                name += 9;
        } else if (!strncmp(name, "producer.", 9)) {
                rconf = conf->producer;
                name += 9;
        }
        /* A classic-protocol default is the consumer's once it is made. */
        int c = rconf == conf->consumer ? classic_default(name) : -1;
        if (c >= 0 && !(conf->classic_set & (1u << c)) &&
            !kretry_conf_consumer_protocol(rconf)) {
                for (size_t i = 0; i < sizeof(changed) / sizeof(changed[0]);
                     i++)
                        if (!strcmp(changed[i].name, name))
                                snprintf(dest, dest_size, "%s",
                                         changed[i].value);
                return KRETRY_ERR_OK;
        }
        size_t size = dest_size;
        if (rd_kafka_conf_get(rconf, name, dest, &size) != RD_KAFKA_CONF_OK)
                return KRETRY_ERR_UNKNOWN_PROPERTY;
        return KRETRY_ERR_OK;
}

/* Appends printf-style text to a growing buffer (the properties dump and its
 * Markdown). */
typedef struct {
        char *dest;
        size_t size, len;
} text_out_t;

static void text_put(text_out_t *o, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(o->dest && o->len < o->size ? o->dest + o->len : NULL,
                          o->dest && o->len < o->size ? o->size - o->len : 0,
                          fmt, ap);
        va_end(ap);
        if (n > 0)
                o->len += (size_t)n;
}

size_t kretry_conf_properties_dump(char *dest, size_t dest_size) {
        text_out_t o = {dest, dest_size, 0};
        for (size_t i = 0; i < PROP_CNT; i++)
                text_put(&o, "%-26s %-20s %s\n", props[i].name,
                         props[i].defval ? props[i].defval : "-",
                         props[i].desc);
        return o.len;
}

/* @p s in a Markdown table cell: '|' escaped. */
static void md_cell(text_out_t *o, const char *s) {
        for (const char *p = s; *p; p++)
                text_put(o, *p == '|' ? "\\|" : "%c", *p);
}

size_t kretry_conf_properties_md(char *dest, size_t dest_size) {
        text_out_t o = {dest, dest_size, 0};
        if (dest && dest_size)
                dest[0] = '\0';
        text_put(&o,
                 "# kretry's properties\n\n"
                 "<!-- Generated from the property table in adapter/src/conf.c "
                 "by scripts/gen-properties.sh; test_conf fails when the two "
                 "differ. Edit the table, not this file. -->\n\n"
                 "`kretry_conf_set()` and `kretry run -X` take kretry's own "
                 "properties below and pass every other name to librdkafka "
                 "unchanged, to both the consumer and the producer; prefix "
                 "`consumer.` or `producer.` to target one. `group.id` is "
                 "required. A topology file sets them through its own fields, "
                 "and librdkafka's under `kafka:` (topology/README.md).\n\n"
                 "## kretry's own\n\n"
                 "| property | meaning | default |\n|---|---|---|\n");
        for (size_t i = 0; i < PROP_CNT; i++) {
                text_put(&o, "| `%s` | ", props[i].name);
                md_cell(&o, props[i].desc);
                if (props[i].choices) {
                        text_put(&o, " (one of: ");
                        for (const char *c = props[i].choices; *c;) {
                                size_t n = strcspn(c, "|");
                                text_put(&o, "%s`%.*s`",
                                         c == props[i].choices ? "" : ", ",
                                         (int)n, c);
                                c += n + (c[n] == '|');
                        }
                        text_put(&o, ")");
                }
                if (props[i].defval && *props[i].defval)
                        text_put(&o, " | `%s` |\n", props[i].defval);
                else
                        text_put(&o, " | |\n");
        }
        text_put(&o,
                 "\n## librdkafka properties kretry fixes\n\n"
                 "The guarantees rest on these; `kretry_conf_set()` refuses "
                 "another value.\n\n"
                 "| property | client | value |\n|---|---|---|\n");
        for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
                text_put(&o, "| `%s` | %s | `%s` |\n", fixed[i].name,
                         fixed[i].consumer ? "consumer" : "producer",
                         fixed[i].value);
        text_put(&o, "\n## librdkafka defaults kretry changes\n\n"
                     "Set one to have librdkafka's own.\n\n"
                     "| property | client | kretry's default | why |\n"
                     "|---|---|---|---|\n");
        for (size_t i = 0; i < sizeof(changed) / sizeof(changed[0]); i++) {
                text_put(&o, "| `%s` | %s | `%s` | ", changed[i].name,
                         changed[i].consumer ? "consumer" : "producer",
                         changed[i].value);
                md_cell(&o, changed[i].why);
                text_put(&o, " |\n");
        }
        return o.len;
}

void kretry_conf_set_handler(kretry_conf_t *conf,
                             kretry_handler_t *handler,
                             void *opaque) {
        if (!conf)
                return;
        conf->handler = handler;
        conf->opaque  = opaque;
}

void kretry_conf_set_route_cb(kretry_conf_t *conf,
                              kretry_route_cb_t *route_cb) {
        if (conf)
                conf->route_cb = route_cb;
}

void kretry_conf_set_stats_cb(kretry_conf_t *conf,
                              kretry_stats_cb_t *stats_cb) {
        if (conf)
                conf->stats_cb = stats_cb;
}

void kretry_conf_set_log_cb(kretry_conf_t *conf,
                            kretry_log_cb_t *log_cb,
                            void *opaque) {
        if (!conf)
                return;
        conf->log_cb     = log_cb;
        conf->log_opaque = opaque;
}

int kretry_conf_max_attempts(const kretry_conf_t *conf) {
        return conf->max_attempts > 0 ? conf->max_attempts : conf->tier_cnt + 1;
}

int kretry_conf_topic_name(const char *pattern,
                           const char *source,
                           int n,
                           char *dest,
                           size_t dest_size) {
        return kretry_conf_topic_name_group(pattern, source, NULL, n, dest,
                                            dest_size);
}

int kretry_conf_topic_name_group(const char *pattern,
                                 const char *source,
                                 const char *group,
                                 int n,
                                 char *dest,
                                 size_t dest_size) {
        size_t len = 0;
        for (const char *s = pattern; *s; s++) {
                int w;
                if (!strncmp(s, "{source}", 8)) {
                        w = snprintf(dest + len, dest_size - len, "%s", source);
                        s += 7;
                } else if (group && !strncmp(s, "{group}", 7)) {
                        w = snprintf(dest + len, dest_size - len, "%s", group);
                        s += 6;
                } else if (!strncmp(s, "{n}", 3) && n > 0) {
                        w = snprintf(dest + len, dest_size - len, "%d", n);
                        s += 2;
                } else {
                        w = snprintf(dest + len, dest_size - len, "%c", *s);
                }
                len += (size_t)w;
                if (len >= dest_size)
                        return -1;
        }
        /* Kafka's rule for topic names: a group id with ':', '/' or a
         * space makes an illegal changelog name. */
        return len > 0 && len < 250 &&
                               strspn(dest, "abcdefghijklmnopqrstuvwxyz"
                                            "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789._-") == len
                       ? 0
                       : -1;
}

/* "2.6.1" of rd_kafka_version()'s form @p v (0xMMmmrrpp). */
static void rdkafka_version_fmt(int v, char *dest, size_t dest_size) {
        snprintf(dest, dest_size, "%d.%d.%d", (v >> 24) & 0xff,
                 (v >> 16) & 0xff, (v >> 8) & 0xff);
}

kretry_err_t kretry_rdkafka_check(char *errstr, size_t errstr_size) {
        char min[16], built[16];
        if (rd_kafka_version() >= KRETRY_RDKAFKA_MIN)
                return KRETRY_ERR_OK;
        rdkafka_version_fmt(KRETRY_RDKAFKA_MIN, min, sizeof(min));
        rdkafka_version_fmt(RD_KAFKA_VERSION, built, sizeof(built));
        snprintf(errstr, errstr_size,
                 "librdkafka %s is loaded (kretry was built against %s); "
                 "kretry needs %s or newer: older releases cannot log in "
                 "with SCRAM to Kafka 4 (librdkafka issue 4895). Check "
                 "LD_LIBRARY_PATH and which librdkafka.so.1 the system "
                 "finds",
                 rd_kafka_version_str(), built, min);
        return KRETRY_ERR_KAFKA;
}

kretry_err_t
kretry_conf_check(const kretry_conf_t *conf, char *errstr, size_t errstr_size) {
        char buf[256];
        size_t size = sizeof(buf);
        if (!conf->source_topic || !*conf->source_topic) {
                snprintf(errstr, errstr_size, "source.topic is required");
                return KRETRY_ERR_INVALID_ARG;
        }
        if (rd_kafka_conf_get(conf->consumer, "group.id", buf, &size) ||
            !buf[0]) {
                snprintf(errstr, errstr_size, "group.id is required");
                return KRETRY_ERR_INVALID_ARG;
        }
        if (!conf->handler) {
                snprintf(errstr, errstr_size,
                         "a handler is required (kretry_conf_set_handler)");
                return KRETRY_ERR_INVALID_ARG;
        }
        if (!strstr(conf->retry_pattern, "{n}")) {
                snprintf(errstr, errstr_size,
                         "retry.topic.pattern \"%s\" must contain {n}",
                         conf->retry_pattern);
                return KRETRY_ERR_INVALID_VALUE;
        }
        if (conf->max_attempts > 0 && conf->max_attempts < 1) {
                snprintf(errstr, errstr_size,
                         "retry.max.attempts must be >= 1");
                return KRETRY_ERR_INVALID_VALUE;
        }
        if (*conf->version_field && !conf->value_avro) {
                snprintf(errstr, errstr_size,
                         "versioning.field needs value.format avro");
                return KRETRY_ERR_INVALID_VALUE;
        }
        if (*conf->version_field && *conf->version_header) {
                snprintf(errstr, errstr_size,
                         "versioning.field and versioning.header are "
                         "exclusive: a version comes from one place");
                return KRETRY_ERR_INVALID_VALUE;
        }
        if (conf->value_avro && (!conf->value_schema || !*conf->value_schema)) {
                snprintf(errstr, errstr_size,
                         "value.format avro needs value.schema");
                return KRETRY_ERR_INVALID_VALUE;
        }
        return KRETRY_ERR_OK;
}
