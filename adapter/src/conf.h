/*
 * Leaf: the configuration and its property table.
 *
 * The configuration object behind kretry_conf_t: kretry's own properties,
 * driven by one declarative table in conf.c, plus the librdkafka properties
 * passed through to the consumer and the producer.
 */
#ifndef KRETRY_CONF_H
#define KRETRY_CONF_H

#include "kretry/kretry.h"

#include <librdkafka/rdkafka.h>

#define KRETRY_MAX_TIERS 32

/* The values of `ordering`, in the order of its choices. */
enum { KRETRY_ORDER_NONE, KRETRY_ORDER_KEY, KRETRY_ORDER_PARTITION };
enum {
        KRETRY_TOPOLOGY_CHECK_FAIL,
        KRETRY_TOPOLOGY_CHECK_WARN,
        KRETRY_TOPOLOGY_CHECK_OFF
};

/* The oldest librdkafka kretry runs on, in rd_kafka_version()'s form:
 * below 2.6.1 librdkafka cannot log in with SCRAM to Kafka 4 (its client
 * nonce is refused: librdkafka issue 4895). The build refuses an older one
 * (CMakeLists.txt KRETRY_RDKAFKA_MIN); kretry_rdkafka_check() refuses one
 * of the same soname met at run time (LD_LIBRARY_PATH, a replaced
 * package). */
#define KRETRY_RDKAFKA_MIN 0x020601ff

struct kretry_conf_s {
        char *source_topic;
        int64_t tiers_ms[KRETRY_MAX_TIERS];
        int tier_cnt;
        int max_attempts;   /* 0: tier_cnt + 1 */
        double jitter;      /* fraction, 0..1 */
        int64_t max_age_ms; /* 0: never */
        char *retry_pattern;
        char *dlq_topic;
        int error_max_length;
        int revoke_timeout_ms;
        int produce_backoff_ms;
        int restore_timeout_ms;
        int topology_check; /* KRETRY_TOPOLOGY_CHECK_FAIL, _WARN, _OFF */
        int topology_check_timeout_ms;
        /* The topology file the conf was loaded from ("": none), so the
         * topology check can name the command that fixes the cluster. */
        char topology_file[512];
        int stats_interval_ms;
        char *permanent_errors; /* "A,B": codes that always mean FAIL */
        int breaker_failures;   /* 0: no breaker */
        int breaker_keys;
        int64_t breaker_cooldown_ms;
        kretry_stats_cb_t *stats_cb;
        int ordering;    /* KRETRY_ORDER_NONE, _KEY, _PARTITION */
        int concurrency; /* handler.concurrency: messages in the handler */
        int handler_poll_thread;   /* handler.thread: 0 worker, 1 poll */
        int handler_sched_inherit; /* handler.sched: 0 batch, 1 inherit */
        int max_inflight;          /* max.inflight.messages */
        int max_inflight_bytes;    /* max.inflight.bytes */
        int max_inflight_copies;   /* max.inflight.copies */
        int tier_buffer_msgs;      /* tier.buffer.messages */
        int tier_buffer_bytes;     /* tier.buffer.bytes */
        int tier_buffer_total;     /* tier.buffer.total.bytes */
        int park_key; /* ordering.on.dead.letter: 0 continue, 1 park_key */
        char *version_header; /* "" = versioning off */
        char *version_field;  /* "" = not from an Avro field */
        int discard_equal; /* versioning.discard: 0 older, 1 older_or_equal */
        char *versions_topic;
        char *parked_topic;     /* ordering.parked.topic */
        int value_avro;         /* value.format: 0 bytes, 1 avro */
        char *value_schema;     /* "" unless value.format avro */
        int value_confluent;    /* value.wire: 0 raw, 1 confluent */
        char *value_schema_ids; /* "ID=PATH,..."; "" = any id */
        int headers_spring;     /* headers.profile: 0 kretry, 1 spring */
        int routing_txn;        /* routing: 0 at_least_once, 1 transactional */
        int txn_interval_ms;    /* transaction.interval.ms */
        int txn_max_msgs;       /* transaction.max.messages */

        /* Bit i: the i-th consumer default for the classic group protocol
         * only (conf.c changed[]) was set by the user, so kretry's is not
         * applied. */
        unsigned classic_set;
        rd_kafka_conf_t *consumer; /* pass-through properties */
        rd_kafka_conf_t *producer;

        kretry_handler_t *handler;
        void *opaque;
        kretry_route_cb_t *route_cb;
        kretry_log_cb_t *log_cb;
        void *log_opaque;
};

/* docs/properties.md: every property of the table (kretry's own, the
 * librdkafka ones it fixes, the librdkafka defaults it changes) as
 * Markdown, written like snprintf (returns the full length; truncated to
 * @p dest_size). */
size_t kretry_conf_properties_md(char *dest, size_t dest_size);

/* 1 when @p rc asks for the consumer group protocol of KIP-848
 * (group.protocol=consumer), 0 for the classic one. */
int kretry_conf_consumer_protocol(const rd_kafka_conf_t *rc);

/* Applies to @p rc, a copy of @p conf's consumer configuration about to make
 * the group's consumer, kretry's defaults that hold under the classic group
 * protocol only (partition.assignment.strategy), unless the user set them or
 * @p rc asks for group.protocol=consumer. */
void kretry_conf_consumer_defaults(const kretry_conf_t *conf,
                                   rd_kafka_conf_t *rc);

/* max_attempts with its default applied. */
int kretry_conf_max_attempts(const kretry_conf_t *conf);

/* Expand a topic name pattern: {source} and {n} (tier, 1-based; 0 = none). */
int kretry_conf_topic_name(const char *pattern,
                           const char *source,
                           int n,
                           char *dest,
                           size_t dest_size);

/* The same, also replacing {group} when @p group is not NULL. */
int kretry_conf_topic_name_group(const char *pattern,
                                 const char *source,
                                 const char *group,
                                 int n,
                                 char *dest,
                                 size_t dest_size);

/* KRETRY_ERR_OK when the librdkafka loaded is KRETRY_RDKAFKA_MIN or newer;
 * otherwise KRETRY_ERR_KAFKA with @p errstr naming the one loaded, the one
 * kretry was built against and why it is refused. Any thread. */
kretry_err_t kretry_rdkafka_check(char *errstr, size_t errstr_size);

/* Check that everything an adapter needs is set; fills errstr. */
kretry_err_t
kretry_conf_check(const kretry_conf_t *conf, char *errstr, size_t errstr_size);

#endif
