/**
 * @file kretry.h
 * @brief kretry: non-blocking retries and dead-lettering for Kafka consumers.
 *
 * A service gives kretry a handler function and a configuration (source topic,
 * consumer group, retry tiers, dead-letter topic, librdkafka properties). The
 * adapter consumes the source topic and every retry tier; each message ends
 * handled OK, waiting in a retry tier, or in the dead-letter topic (DLQ) with
 * its failure context in `kretry-*` headers. A source or tier offset is stored
 * for commit only once its outcome is durable (handler OK, or the copy in the
 * tier/DLQ acknowledged by the broker), so killing the process at any instant
 * loses nothing; it may repeat work.
 *
 * Threads: one thread drives an adapter (kretry_adapter_run() or
 * kretry_adapter_poll()); every callback runs on that thread. The handler
 * runs on kretry's worker threads (handler.concurrency of them), or with
 * handler.thread poll on the driving thread too (see kretry_handler_t).
 * kretry_adapter_stop() and kretry_adapter_counter() may be called from any
 * thread; kretry_adapter_stop() also from a signal handler; a held message
 * is completed from any thread (kretry_msg_complete()).
 *
 * Ownership is stated on every call in fixed words: "takes ownership on
 * success", "borrowed until the handler returns", "free with ...".
 */
#ifndef KRETRY_KRETRY_H
#define KRETRY_KRETRY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(KRETRY_BUILDING) && defined(__GNUC__)
#define KRETRY_EXPORT __attribute__((visibility("default")))
#else
#define KRETRY_EXPORT
#endif

/** @name Version */
/**@{*/
#define KRETRY_VERSION_MAJOR 0
#define KRETRY_VERSION_MINOR 1
#define KRETRY_VERSION_PATCH 0
/** Version as one integer: 0xMMmmpp00. */
#define KRETRY_VERSION                                                         \
        ((KRETRY_VERSION_MAJOR << 24) | (KRETRY_VERSION_MINOR << 16) |         \
         (KRETRY_VERSION_PATCH << 8))

/** @returns the library's version as "MAJOR.MINOR.PATCH"; static storage. */
KRETRY_EXPORT const char *kretry_version_str(void);
/** @returns the library's version as KRETRY_VERSION encodes it. */
KRETRY_EXPORT int kretry_version(void);
/**@}*/

/** @name Errors */
/**@{*/
#define KRETRY_ERR_MAP(XX)                                                     \
        XX(OK, 0, "success")                                                   \
        XX(INVALID_ARG, -1, "invalid argument")                                \
        XX(UNKNOWN_PROPERTY, -2, "unknown configuration property")             \
        XX(INVALID_VALUE, -3, "invalid configuration value")                   \
        XX(NO_MEM, -4, "out of memory")                                        \
        XX(KAFKA, -5, "Kafka client error")                                    \
        XX(STATE, -6, "operation not allowed in the current state")            \
        XX(STOPPED, -7, "adapter stopped")                                     \
        XX(FATAL, -8, "fatal error: the adapter cannot continue")              \
        XX(TIMED_OUT, -9, "timed out")                                         \
        XX(IO, -10, "input/output error")                                      \
        XX(PARSE, -11, "parse error")                                          \
        XX(TOPOLOGY, -12, "the cluster's topics do not fit the topology")

/** Every kretry error code; 0 is success, failures are negative. */
typedef enum {
#define KRETRY_ERR_ENUM(name, value, text) KRETRY_ERR_##name = value,
        KRETRY_ERR_MAP(KRETRY_ERR_ENUM)
#undef KRETRY_ERR_ENUM
} kretry_err_t;

/** @returns a static, human-readable description of @p err. */
KRETRY_EXPORT const char *kretry_err2str(kretry_err_t err);
/** @returns the symbolic name of @p err ("KRETRY_ERR_INVALID_VALUE"). */
KRETRY_EXPORT const char *kretry_err2name(kretry_err_t err);
/**@}*/

/** @name Configuration */
/**@{*/

/**
 * A configuration object: kretry properties plus librdkafka properties.
 * Not locked: one thread at a time uses it. The caller owns it until
 * kretry_adapter_new() succeeds with it; the kretry_conf_*() calls never
 * block and, unless they say otherwise, cannot fail.
 */
typedef struct kretry_conf_s kretry_conf_t;

/**
 * @brief Create a configuration with every kretry property at its default.
 * @returns the new object, or NULL when out of memory.
 *          Free with kretry_conf_destroy(), unless kretry_adapter_new() took
 *          ownership of it.
 */
KRETRY_EXPORT kretry_conf_t *kretry_conf_new(void);

/** @brief Destroy @p conf. Accepts NULL. */
KRETRY_EXPORT void kretry_conf_destroy(kretry_conf_t *conf);

/** @returns a deep copy of @p conf, or NULL; free with kretry_conf_destroy().
 */
KRETRY_EXPORT kretry_conf_t *kretry_conf_dup(const kretry_conf_t *conf);

// clang-format off
/**
 * @brief Set one property.
 *
 * kretry's own properties (listed by kretry_conf_properties_dump()),
 * as "name: meaning [default]":
 *
 *   source.topic: topic consumed and retried (required)
 *   retry.tiers: comma-separated delays, e.g. "1s,10s,1m" (1..32 tiers; units
 *       ms, s, m, h, d; 0 retries at once) [1s,10s,1m]
 *   retry.max.attempts: handler attempts in all, the first delivery included
 *       [tiers + 1]
 *   retry.jitter: each delay varies by up to +/- this share, "0%".."100%"
 *       [10%]
 *   retry.max.age: a message older than this (since it first entered) is
 *       dead-lettered at its next failure; 0 = never [0]
 *   retry.topic.pattern: tier topic names; {source} and {n} (1-based tier) are
 *       replaced; must contain {n} [{source}.retry.{n}]
 *   dlq.topic: dead-letter topic; {source} is replaced [{source}.dlq]
 *   error.max.length: bytes of the handler's error message kept in
 *       kretry-error [512]
 *   revoke.timeout.ms: bounded wait, when partitions are revoked or the
 *       adapter closes, for their handler calls, held messages and
 *       in-flight copies (not for a copy refused as too large, nor for a
 *       lost assignment, whose results are discarded) [30000]
 *   produce.retry.backoff.ms: first wait before a copy whose delivery failed
 *       is produced again (doubles up to 10 s; 1..10000) [100]
 *   ordering: none; key: a key's messages reach the handler one at a time,
 *       in their original order, across retries; partition: one message of a
 *       partition in the handler at a time [none]
 *   ordering.on.dead.letter: continue, or park_key: a dead-lettered key's
 *       following messages go to the DLQ until it is replayed [continue]
 *   ordering.parked.topic: with park_key, the compacted topic of the
 *       parked keys, co-partitioned with the source, restored on
 *       assignment; {group}, {source} [{group}.{source}.parked]
 *   handler.concurrency: messages in the handler at once, held ones
 *       included, each on one of this many worker threads (see
 *       kretry_handler_t) [1]
 *   handler.thread: worker: the handler runs on kretry's worker threads;
 *       poll: on the thread that calls kretry_adapter_poll(), which it must
 *       not block (hold the message and complete it later; a revocation
 *       does not wait for held messages, whose answers are then
 *       discarded) [worker]
 *   handler.sched: batch: the worker threads run under Linux's SCHED_BATCH
 *       policy, so that a worker woken for a message never preempts the
 *       polling thread or librdkafka's threads (the group stays served while
 *       handlers use every core; a fast handler costs fewer context
 *       switches); inherit: they keep the policy of the thread that created
 *       the adapter. Where the system refuses the change the inherited
 *       policy stays [batch]
 *   max.inflight.messages: messages consumed and not yet decided (in the
 *       handler, held, or waiting for a slot or their key) before no more
 *       are taken; fetching goes on up to librdkafka's queued.* bounds and
 *       the group is served [1000]
 *   max.inflight.bytes: bytes of key and value of those messages (all a
 *       message waiting behind its key takes: it is copied into kretry's
 *       memory, not keeping its Fetch response allocated) before no more
 *       are taken; a larger message is still taken when nothing else is in
 *       flight (1..2147483647) [67108864]
 *   max.inflight.copies: copies (tier, DLQ, version changelog) produced
 *       and not yet acknowledged before no more messages are taken: each
 *       keeps its source message, and the Fetch response holding it, in
 *       memory until the broker acknowledges it (1..10000000) [10000]
 *   tier.buffer.messages: tier messages kept in kretry's memory per tier
 *       partition behind one that is not due yet, so that the partition
 *       keeps fetching and each is handled at its due time whatever
 *       fetch.wait.max.ms is; at this bound (or tier.buffer.bytes, or
 *       tier.buffer.total.bytes) the partition is paused until half of it
 *       is free; 0: pause at once (0..1000000) [1000]
 *   tier.buffer.bytes: memory those messages may take per tier partition:
 *       key, value, headers and kretry's record of each (0..2147483647)
 *       [1048576]
 *   tier.buffer.total.bytes: memory they may take in all tier partitions
 *       together; a full buffer waits (its partition paused) until this
 *       total is at most three quarters of it (0..2147483647) [67108864]
 *   versioning.header: header carrying a decimal version; versions not above
 *       the highest handled OK for the key are skipped (empty: off)
 *   versioning.field: with value.format avro: an int or long field of the
 *       record carrying the version, instead of a header
 *   versioning.discard: older, or older_or_equal [older]
 *   versioning.topic: compacted changelog of the version store; {group},
 *       {source} [{group}.{source}.versions]
 *   restore.timeout.ms: bounded wait for rebuilding key chains, parked keys
 *       and versions on assignment [60000]
 *   topology.check: before subscribing, kretry_adapter_new() reads the
 *       cluster's metadata (never creating a topic) and checks that every
 *       tier, the DLQ, the version changelog and the parked keys' topic
 *       exist with at least the source's partitions, and that the last two
 *       are compacted, and,
 *       on a cluster with an authorizer, that the client's principal has
 *       every ACL binding of `kretry topology acls --role run`; fail:
 *       refuse to start (kretry_adapter_new() returns NULL with one line
 *       per problem in errstr); warn: log the problems and start; off:
 *       skip it [fail]. Credentials the cluster refuses stop the check
 *       (fail or warn) at once with an error.
 *   topology.check.timeout.ms: bounded wait for that metadata (and the
 *       changelog's cleanup.policy) [10000]
 *   stats.interval.ms: how often the stats callback runs (0: never) [0]
 *   retry.permanent.errors: comma-separated handler error codes that always
 *       mean FAIL, even with a RETRY answer
 *   breaker.failures: circuit breaker: transient failures in a row (no success
 *       between) that open it; 0: no breaker [0]
 *   breaker.distinct.keys: circuit breaker: how many distinct keys that run
 *       must span (1..64) [1]
 *   breaker.cooldown: circuit breaker: first pause of consumption, doubled
 *       while the dependency stays down (up to 16 times) [30s]
 *   value.format: bytes (opaque) or avro: values are decoded before the
 *       handler; one that does not decode is dead-lettered with class `schema`
 *       without calling the handler [bytes]
 *   value.schema: value.format avro: the value's schema, an .avsc file (the
 *       record kretry_msg_value_avro() returns)
 *   value.wire: raw (Avro binary) or confluent (magic byte 0, 4-byte
 *       big-endian schema id, Avro binary) [raw]
 *   value.schema.ids: value.wire confluent: "ID=PATH,ID=PATH", the writer
 *       schema of each id, resolved to value.schema; other ids are refused.
 *       Empty: every id is read with value.schema
 *
 * Any other name is a librdkafka property and is passed through unchanged:
 * to both the consumer and the producer when unprefixed, to one of them only
 * when prefixed "consumer." or "producer.". librdkafka's error text reaches
 * @p errstr. `group.id` is required. kretry fixes what its guarantees rest on
 * (consumer: enable.auto.offset.store=false; producer:
 * enable.idempotence=true, acks=all) and refuses attempts to change those.
 *
 * @param errstr receives a human-readable message on failure (may be NULL).
 * @returns KRETRY_ERR_OK, KRETRY_ERR_UNKNOWN_PROPERTY or
 *          KRETRY_ERR_INVALID_VALUE.
 */
// clang-format on
KRETRY_EXPORT kretry_err_t kretry_conf_set(kretry_conf_t *conf,
                                           const char *name,
                                           const char *value,
                                           char *errstr,
                                           size_t errstr_size);

/**
 * @brief Read a property back as text.
 *
 * @param dest receives the value, NUL-terminated (truncated to @p dest_size).
 * @returns KRETRY_ERR_OK, or KRETRY_ERR_UNKNOWN_PROPERTY when the property is
 *          neither kretry's nor set.
 */
KRETRY_EXPORT kretry_err_t kretry_conf_get(const kretry_conf_t *conf,
                                           const char *name,
                                           char *dest,
                                           size_t dest_size);

/**
 * @brief Write the table of kretry's own properties (name, default,
 *        description), one per line, to @p dest (NUL-terminated, truncated).
 * @returns the length the full table needs, without the NUL.
 */
KRETRY_EXPORT size_t kretry_conf_properties_dump(char *dest, size_t dest_size);
/**@}*/

/** @name Messages seen by the handler */
/**@{*/

/**
 * A read-only view of one message, borrowed until the handler returns (a
 * held one: until kretry_msg_complete()). The kretry_msg_*() calls may be
 * made from the thread running the handler, or for a held message from any
 * one thread at a time; what they return is borrowed for as long as the
 * message. They never block; on a handle that is no longer valid they
 * read NULL, -1 or 0.
 */
typedef struct kretry_msg_s kretry_msg_t;

/** The handler's answer. */
typedef enum {
        KRETRY_OK    = 0, /**< handled; the offset may be committed */
        KRETRY_RETRY = 1, /**< transient failure: retry through the tiers */
        KRETRY_FAIL  = 2, /**< permanent failure: dead-letter now */
        KRETRY_ASYNC = 3  /**< the handler called kretry_msg_hold(): the
                               answer comes with kretry_msg_complete() */
} kretry_action_t;

/** @returns the key, or NULL for a null key; @p lenp (may be NULL) gets its
 *  length. Borrowed until the handler returns. */
KRETRY_EXPORT const void *kretry_msg_key(const kretry_msg_t *msg, size_t *lenp);
/** @returns the value, or NULL for a null value; @p lenp (may be NULL) gets
 *  its length. Borrowed until the handler returns. Like the key, it is
 *  bytes, not a NUL-terminated string: read @p lenp bytes. */
KRETRY_EXPORT const void *kretry_msg_value(const kretry_msg_t *msg,
                                           size_t *lenp);
/** @returns the topic the message was consumed from (source or tier). */
KRETRY_EXPORT const char *kretry_msg_topic(const kretry_msg_t *msg);
/** @returns the partition the message was consumed from. */
KRETRY_EXPORT int32_t kretry_msg_partition(const kretry_msg_t *msg);
/** @returns the offset the message was consumed from. */
KRETRY_EXPORT int64_t kretry_msg_offset(const kretry_msg_t *msg);
/** @returns the message's own timestamp (epoch ms), or -1. */
KRETRY_EXPORT int64_t kretry_msg_timestamp(const kretry_msg_t *msg);
/** @returns this handler attempt: 1 on the first delivery, 2 on the first
 *  retry, and so on. */
KRETRY_EXPORT int kretry_msg_attempt(const kretry_msg_t *msg);
/** @returns the tier the message was consumed from, 0 for the source. */
KRETRY_EXPORT int kretry_msg_tier(const kretry_msg_t *msg);
/** @returns the topic where the message first entered. */
KRETRY_EXPORT const char *kretry_msg_original_topic(const kretry_msg_t *msg);
/** @returns the partition where the message first entered. */
KRETRY_EXPORT int32_t kretry_msg_original_partition(const kretry_msg_t *msg);
/** @returns the offset where the message first entered. */
KRETRY_EXPORT int64_t kretry_msg_original_offset(const kretry_msg_t *msg);
/** @returns the timestamp (epoch ms) of the message where it first entered,
 *  or -1. */
KRETRY_EXPORT int64_t kretry_msg_original_timestamp(const kretry_msg_t *msg);
/** @returns epoch ms of the first failure, or -1 on the first delivery. */
KRETRY_EXPORT int64_t kretry_msg_first_failure_ts(const kretry_msg_t *msg);

/**
 * @brief The decoded value, with `value.format` avro.
 *
 * Declared without avro-c's types so that this header does not need them:
 * the pointer is an `avro_value_t *` (avro-c, `#include <avro.h>`), an
 * instance of `value.schema` (the writer's record resolved to it). Read it
 * with avro-c's avro_value_get_*() calls; do not modify it or keep it.
 *
 * @returns the record, borrowed until the handler returns (kretry reuses
 *          it for the next message), or NULL with `value.format` bytes.
 */
KRETRY_EXPORT const void *kretry_msg_value_avro(const kretry_msg_t *msg);

/**
 * @brief Find the last header named @p name.
 * @param valuep receives the value (borrowed until the handler returns; may be
 *        NULL for a header without value); @p sizep its size.
 * @returns 0 when found, -1 when absent.
 */
KRETRY_EXPORT int kretry_msg_header(const kretry_msg_t *msg,
                                    const char *name,
                                    const void **valuep,
                                    size_t *sizep);

/** @returns the number of headers the message carries (kretry-* included). */
KRETRY_EXPORT size_t kretry_msg_header_count(const kretry_msg_t *msg);

/**
 * @brief Read header @p idx (0-based, in wire order).
 * @returns 0, or -1 when @p idx is out of range. Everything returned is
 *          borrowed until the handler returns.
 */
KRETRY_EXPORT int kretry_msg_header_at(const kretry_msg_t *msg,
                                       size_t idx,
                                       const char **namep,
                                       const void **valuep,
                                       size_t *sizep);

/**
 * @brief Attach an error code and message to a RETRY or FAIL answer.
 *
 * Both are copied (the message truncated to `error.max.length` bytes) and end
 * up in the `kretry-error-code` and `kretry-error` headers. Either may be
 * NULL. Only valid inside the handler.
 */
KRETRY_EXPORT void
kretry_msg_set_error(kretry_msg_t *msg, const char *code, const char *message);

/**
 * @brief Hint, with a RETRY answer, that the message should not be handled
 *        again for @p after_ms milliseconds (e.g. an HTTP Retry-After).
 *
 * The first tier whose delay is at least the hint is used (the last tier when
 * none is), and the message is not due before the hint has passed. A hint
 * longer than the last tier's delay counts as that delay: a retry is never
 * due later than its tier's delay plus jitter. Zero or negative: no hint.
 */
KRETRY_EXPORT void kretry_msg_set_retry_after(kretry_msg_t *msg,
                                              int64_t after_ms);

/**
 * @brief Keep @p msg past the handler's return, to answer later.
 *
 * For a service whose work is asynchronous (an HTTP client on libcurl's
 * multi interface, a libuv loop): call it inside the handler, start the
 * work, and return KRETRY_ASYNC; when the work ends, call
 * kretry_msg_complete() on the returned handle, from any thread. Until
 * then the handle, everything read through it, kretry_msg_set_error() and
 * kretry_msg_set_retry_after() on it stay valid (every kretry_msg_*()
 * accessor takes the handle), and the message counts against
 * handler.concurrency (and, under its ordering, keeps its key or partition
 * busy). After the handler returned only the handle is valid, not @p msg.
 * A hold whose handler returns anything but KRETRY_ASYNC is void: that
 * answer counts, and the handle is no longer valid.
 *
 * A handle is not the message's address: one that is no longer valid (its
 * message completed, its hold void, its adapter destroyed and the message
 * completed) is refused by kretry_msg_complete() and reads as NULL in every
 * accessor; it never names another message.
 *
 * @returns the handle (the same one when called again in the call), or
 *          NULL when memory is short: the message is then not held, and the
 *          handler must answer it by its return value.
 */
KRETRY_EXPORT kretry_msg_t *kretry_msg_hold(kretry_msg_t *msg);

/**
 * @brief Answer for a held message: KRETRY_OK, KRETRY_RETRY or KRETRY_FAIL,
 *        as the handler would have. Any thread, once per hold; it may also
 *        come before the handler returned KRETRY_ASYNC.
 *
 * @p msg is the handle kretry_msg_hold() returned; after this call it is no
 * longer valid. The outcome is decided on the thread driving the adapter
 * (woken through kretry_adapter_fd()). An answer for a message whose
 * partition was revoked or lost meanwhile is discarded (the new owner
 * handles the message again). Once kretry_adapter_destroy() has begun, a
 * held message not completed is abandoned: every accessor reads it as NULL
 * (-1, 0), and kretry_msg_complete() only frees it (it must still be
 * called).
 *
 * @returns 0, or -1 when @p msg is not a valid handle (never held, already
 *          completed, or its hold was void).
 */
KRETRY_EXPORT int kretry_msg_complete(kretry_msg_t *msg,
                                      kretry_action_t action);

/**
 * @brief The application's handler.
 *
 * Runs on one of the handler.concurrency worker threads the adapter owns
 * (named "kretry:worker", as top -H, perf and gdb show them), up to
 * handler.concurrency calls (and held messages) at once, as `ordering` allows:
 * one message per key, one per partition, or any. With more than one worker the
 * handler and @p opaque must be thread-safe. The thread that drives the adapter
 * never runs it: it keeps serving the group (heartbeats, rebalances,
 * max.poll.interval.ms) whatever the handler does, so a call may take as long
 * as it needs. Each call has its own @p msg; no lock of the adapter is held
 * during a call.
 *
 * With handler.thread poll the handler runs on the thread that calls
 * kretry_adapter_poll(), inside that call, so that an application's event
 * loop needs no locks; it must return quickly (a long call delays the
 * group's heartbeats): hold the message and return KRETRY_ASYNC for work
 * that waits, and complete it from the loop.
 *
 * Either way, @p msg and everything read through it are borrowed until the
 * handler returns (or, held, until kretry_msg_complete()), and the handler
 * must not call kretry_adapter_poll(), kretry_adapter_run(),
 * kretry_adapter_close() or kretry_adapter_destroy().
 */
typedef kretry_action_t(kretry_handler_t)(kretry_msg_t *msg, void *opaque);
/**@}*/

/** @name Routing events and logs */
/**@{*/

/** Where a message went once its outcome became durable. */
typedef enum {
        KRETRY_ROUTE_OK      = 0,   /**< handled OK */
        KRETRY_ROUTE_RETRY   = 1,   /**< copied to a retry tier */
        KRETRY_ROUTE_DLQ     = 2,   /**< copied to the dead-letter topic */
        KRETRY_ROUTE_INVALID = 3,   /**< a malformed message on a tier, dead-
                                          lettered without calling the handler */
        KRETRY_ROUTE_STALE = 4,     /**< skipped: an older version of its key
                                          (versioning); not handled */
        KRETRY_ROUTE_PARKED = 5,    /**< forwarded behind its key's head
                                          (ordering key); not handled yet */
        KRETRY_ROUTE_DUPLICATE = 6, /**< a source message consumed again after
                                         a restart whose copy already waits
                                         in a tier, or a tier copy superseded
                                         by a newer copy of the same message
                                         (ordering key): the newer copy
                                         carries it; or a message the
                                         partition's previous owner decided
                                         above its committed offset (the
                                         commit's metadata); not handled */
        KRETRY_ROUTE_FOREIGN = 7    /**< a tier copy another consumer group
                                          wrote to a tier topic both share
                                          (kretry-group): that group handles
                                          it; not handled */
} kretry_route_t;

/**
 * @brief Called once per message after its outcome is durable.
 *
 * @param topic, partition, offset where the message was consumed from.
 * @param route what happened; @p tier the destination tier (RETRY) or 0;
 *        @p error_class the `kretry-error-class` written (DLQ/RETRY) or NULL;
 *        @p attempt the handler attempt that produced this outcome.
 * Runs on the thread driving the adapter; everything is borrowed for the call.
 */
typedef void(kretry_route_cb_t)(const char *topic,
                                int32_t partition,
                                int64_t offset,
                                kretry_route_t route,
                                int tier,
                                const char *error_class,
                                int attempt,
                                void *opaque);

/** Log levels, syslog numbering. */
typedef enum {
        KRETRY_LOG_ERR     = 3,
        KRETRY_LOG_WARNING = 4,
        KRETRY_LOG_NOTICE  = 5,
        KRETRY_LOG_INFO    = 6,
        KRETRY_LOG_DEBUG   = 7
} kretry_log_level_t;

/**
 * @brief Log callback: kretry never prints. librdkafka's logs arrive here too,
 *        with @p facility prefixed "rdkafka.". Called from the thread driving
 *        the adapter or from librdkafka's threads: it must be thread-safe and
 *        must not call back into kretry. Logs carry ids, never payloads,
 *        and never a secret of the configuration: the values of
 *        sasl.password, ssl.key.password, ssl.keystore.password,
 *        sasl.oauthbearer.client.secret, sasl.oauthbearer.config and the
 *        other secret properties are replaced by "[redacted]" wherever a
 *        line (librdkafka's included) quotes them.
 */
typedef void(kretry_log_cb_t)(kretry_log_level_t level,
                              const char *facility,
                              const char *message,
                              void *opaque);

/** @brief Set the handler (required) and its opaque, before
 *         kretry_adapter_new(); @p opaque stays the caller's and must
 *         outlive the adapter. */
KRETRY_EXPORT void kretry_conf_set_handler(kretry_conf_t *conf,
                                           kretry_handler_t *handler,
                                           void *opaque);
/** @brief Set the routing callback (optional); it receives the handler's
 *         opaque. */
KRETRY_EXPORT void kretry_conf_set_route_cb(kretry_conf_t *conf,
                                            kretry_route_cb_t *route_cb);
/**
 * @brief Stats callback: every `stats.interval.ms`, one JSON document:
 *        the counters of kretry_adapter_stats_json(), plus "ts",
 *        "interval_ms", "handler_latency_ms" {"count","p50","p99","max"} over
 *        the interval, and "topics": per consumed topic {"topic","role",
 *        "tier","waiting","consume_per_s","arrival_per_s","drain_ms" (a
 *        number, or "never" when arrival keeps up with consumption),
 *        "oldest_held_age_ms" (-1: none held), "partitions": [{"partition",
 *        "waiting"}] (each assigned partition whose watermarks are known)}.
 *        "waiting" is the high watermark minus what is done, over the
 *        assigned partitions (-1: not known yet). Called on the thread
 *        driving the adapter; @p json is borrowed for the call; the opaque
 *        is the handler's.
 */
typedef void(kretry_stats_cb_t)(const char *json,
                                size_t json_len,
                                void *opaque);

/** @brief Set the stats callback (optional; see `stats.interval.ms`). */
KRETRY_EXPORT void kretry_conf_set_stats_cb(kretry_conf_t *conf,
                                            kretry_stats_cb_t *stats_cb);

/**
 * @brief Render a stats callback document as Prometheus text exposition
 *        (counters kretry_*_total, kretry_handler_latency_seconds,
 *        kretry_inflight_messages, kretry_inflight_bytes,
 *        kretry_buffered_messages, kretry_buffered_bytes,
 *        kretry_held_messages, kretry_breaker_open,
 *        kretry_assigned_partitions, kretry_topic_waiting_messages,
 *        kretry_partition_waiting_messages,
 *        kretry_topic_oldest_held_age_seconds).
 *        A figure the document does not carry is left out. Any thread:
 *        it reads only @p json.
 * @returns the length the full text needs (without NUL); @p dest gets it
 *          NUL-terminated, truncated to @p dest_size; 0 for invalid JSON.
 */
KRETRY_EXPORT size_t kretry_stats_prometheus(const char *json,
                                             char *dest,
                                             size_t dest_size);

/** @brief Set the log callback (optional) and its opaque. Without one, logs
 *         are dropped. */
KRETRY_EXPORT void kretry_conf_set_log_cb(kretry_conf_t *conf,
                                          kretry_log_cb_t *log_cb,
                                          void *opaque);
/**@}*/

/** @name Topology files */
/**@{*/

/**
 * @brief Load the topology named @p name from the YAML file @p path into
 *        @p conf (the file format: topology/README.md).
 *
 * Sets source.topic, group.id, retry.tiers, retry.max.attempts,
 * retry.jitter, retry.max.age, retry.topic.pattern, dlq.topic, the value.*
 * properties (schema paths resolved against the file's directory) and every
 * `kafka:` property through kretry_conf_set(); ${VAR} and ${VAR:-default}
 * are read from the environment now. The file is validated as
 * `kretry topology validate` does, with the same messages
 * ("FILE:LINE:COL: text"), all of them, one per line, in @p errstr.
 * Declarations this version of the engine cannot honour yet (versioning
 * field, permanent_errors, breaker) are refused
 * with their position rather than silently ignored. `handler.http` is
 * `kretry run`'s and is ignored here (the application brings its handler).
 * On failure @p conf is left unchanged.
 *
 * @param name the topology's name; NULL when the file holds exactly one.
 * @param errstr receives the messages on failure (may be NULL).
 * @returns KRETRY_ERR_OK; KRETRY_ERR_INVALID_ARG (NULL @p conf or
 *          @p path); KRETRY_ERR_IO (the file cannot be read);
 *          KRETRY_ERR_PARSE (the file is invalid); KRETRY_ERR_INVALID_VALUE
 *          (no such topology, or it declares what the engine refuses);
 *          KRETRY_ERR_NO_MEM.
 */
KRETRY_EXPORT kretry_err_t kretry_conf_load_topology(kretry_conf_t *conf,
                                                     const char *path,
                                                     const char *name,
                                                     char *errstr,
                                                     size_t errstr_size);
/**@}*/

/** @name Adapter */
/**@{*/

/**
 * A running retry adapter: one consumer and one producer. Unless a call
 * says otherwise (kretry_adapter_stop(), kretry_adapter_counter(),
 * kretry_adapter_stats_json()), call it from the one thread that drives
 * the adapter, never from a callback or the handler.
 */
typedef struct kretry_adapter_s kretry_adapter_t;

/**
 * @brief Create an adapter and subscribe to the source topic.
 *
 * First checks the cluster's topics (topology.check): with `fail`, a tier,
 * DLQ or changelog that is missing, has fewer partitions than the source or
 * (the changelog) is not compacted, an ACL binding the chain needs that the
 * cluster's authorizer reports missing (each named), and metadata that
 * cannot be read within topology.check.timeout.ms, make it return NULL;
 * with `fail` or `warn`, so do credentials the cluster refuses. A misfit is
 * looked at again with fresh metadata for up to 2 s (within that timeout)
 * before it counts: a broker lists a topic a moment after it was created.
 * Called on the thread that will drive the adapter; blocks at most that timeout
 * for the check (plus half a second at most for the ACL question when the
 * metadata took it all).
 *
 * Before that, it refuses a librdkafka older than 2.6.1 loaded at run time
 * (the build requires 2.6.1, but another of the same soname can be found
 * through LD_LIBRARY_PATH): older releases cannot log in with SCRAM to
 * Kafka 4 (librdkafka issue 4895). @p errstr then names the version loaded.
 *
 * @param conf takes ownership on success; on failure it stays the caller's.
 * @returns the adapter, or NULL with @p errstr filled (every problem of the
 *          topology check, one per line, as far as @p errstr_size allows;
 *          each is also logged).
 *          Free with kretry_adapter_destroy().
 */
KRETRY_EXPORT kretry_adapter_t *
kretry_adapter_new(kretry_conf_t *conf, char *errstr, size_t errstr_size);

/**
 * @brief Serve the adapter for at most @p timeout_ms (-1: until there is
 *        something to do): handle due messages, route outcomes, store offsets.
 *
 * Never sleeps past the next due time; returns early when work was done.
 * For an application with its own event loop: call it when
 * kretry_adapter_fd() is readable or kretry_adapter_next_timeout_ms() has
 * passed, with @p timeout_ms 0.
 *
 * @returns KRETRY_ERR_OK, KRETRY_ERR_STOPPED once kretry_adapter_stop() was
 *          called, or KRETRY_ERR_FATAL when the consumer or the producer
 *          raised a fatal error or the group coordinator refused
 *          consumer.session.timeout.ms (outside the broker's
 *          group.min/max.session.timeout.ms; the reason goes to the log
 *          callback; offsets stay at the last durable outcome); every later
 *          call returns it too. Close or destroy the adapter then.
 */
KRETRY_EXPORT kretry_err_t kretry_adapter_poll(kretry_adapter_t *adapter,
                                               int timeout_ms);

/**
 * @brief Serve the adapter until kretry_adapter_stop() is called, then close
 *        it (finish in-flight copies, commit synchronously, leave the group).
 * @returns KRETRY_ERR_OK after a stop, KRETRY_ERR_TIMED_OUT when the close
 *          after it was cut short or left copies unacknowledged (see
 *          kretry_adapter_close()), or KRETRY_ERR_FATAL.
 */
KRETRY_EXPORT kretry_err_t kretry_adapter_run(kretry_adapter_t *adapter);

/**
 * @brief Ask the adapter to stop. Thread-safe and async-signal-safe: sets a
 *        flag and wakes the thread that drives the adapter.
 */
KRETRY_EXPORT void kretry_adapter_stop(kretry_adapter_t *adapter);

/**
 * @returns a file descriptor that becomes readable when the adapter has work
 *          (messages, delivery reports, a stop); kretry_adapter_poll()
 *          clears it. Owned by the adapter: do not close it or read from it.
 *          An application's own loop waits for it to be readable, for at
 *          most kretry_adapter_next_timeout_ms(), then calls
 *          kretry_adapter_poll(adapter, 0).
 */
KRETRY_EXPORT int kretry_adapter_fd(const kretry_adapter_t *adapter);

/** @returns milliseconds until the adapter has timed work (the next held
 *           message due, a failed copy to produce again, the stats
 *           callback, the breaker's cool-down), 0 when work waits now (the
 *           last poll stopped at its batch limit), or -1 when nothing is
 *           timed. Call from the thread driving the adapter. */
KRETRY_EXPORT int kretry_adapter_next_timeout_ms(kretry_adapter_t *adapter);

/**
 * @brief Close the adapter: in-flight copies finish (bounded by
 *        revoke.timeout.ms), done offsets are committed synchronously, the
 *        consumer leaves the group. Idempotent; kretry_adapter_destroy() calls
 *        it when it has not run.
 *
 * Bounded whatever the cluster does: it returns within revoke.timeout.ms
 * plus 5 seconds, and once nothing is in flight (handlers returned, copies
 * acknowledged) within 8 seconds more (3 for the commit, 5 for leaving the
 * group). When the cluster does not answer in that time the close is cut
 * short: what could not be committed is logged, and the group reassigns
 * the partitions once session.timeout.ms has passed. kretry_adapter_destroy()
 * then returns at once too; librdkafka finishes releasing the consumer on a
 * thread of its own. librdkafka may drop the close's assign or unassign
 * call unanswered (a rebalance left unserved, its group ended first): the
 * close and kretry_adapter_destroy() end all the same, and the one thread
 * waiting for that answer is left blocked (a warning says so).
 *
 * @returns KRETRY_ERR_OK, or KRETRY_ERR_TIMED_OUT when the close was cut
 *          short, handler calls were still running at revoke.timeout.ms
 *          or copies were still unacknowledged (their offsets stay
 *          uncommitted: they will be consumed again).
 */
KRETRY_EXPORT kretry_err_t kretry_adapter_close(kretry_adapter_t *adapter);

/** @brief Close (if needed) and free the adapter. Accepts NULL. Held
 *         messages not completed are abandoned (see kretry_msg_complete());
 *         the handler's and callbacks' opaque stay the caller's. */
KRETRY_EXPORT void kretry_adapter_destroy(kretry_adapter_t *adapter);

/** Counters kept by an adapter. */
typedef enum {
        KRETRY_COUNTER_CONSUMED = 0, /**< messages consumed (source+tiers) */
        KRETRY_COUNTER_OK       = 1, /**< handled OK */
        KRETRY_COUNTER_RETRIED  = 2, /**< copied to tier @p tier (0: all) */
        KRETRY_COUNTER_DLQ      = 3, /**< dead-lettered, all classes */
        KRETRY_COUNTER_DLQ_PERMANENT  = 4,
        KRETRY_COUNTER_DLQ_EXHAUSTED  = 5,
        KRETRY_COUNTER_DLQ_EXPIRED    = 6,
        KRETRY_COUNTER_DLQ_SCHEMA     = 7,
        KRETRY_COUNTER_HANDLER_CALLS  = 8, /**< handler invocations */
        KRETRY_COUNTER_PRODUCE_ERRORS = 9, /**< failed deliveries re-produced */
        KRETRY_COUNTER_HELD  = 10, /**< messages held now, waiting to be due */
        KRETRY_COUNTER_STALE = 11, /**< skipped: older version (versioning) */
        KRETRY_COUNTER_FORWARDED = 12,     /**< parked behind their key's head
                                                 (ordering key) */
        KRETRY_COUNTER_DLQ_PARKED = 13,    /**< dead-lettered after their key
                                                 (park_key) */
        KRETRY_COUNTER_CHAIN_KEYS = 14,    /**< keys with messages in the retry
                                                 chain now (ordering key) */
        KRETRY_COUNTER_VERSION_KEYS  = 15, /**< keys in the version store now */
        KRETRY_COUNTER_VERSION_BYTES = 16, /**< memory the version store
                                                holds, bytes */
        KRETRY_COUNTER_DUPLICATES = 17,    /**< source messages skipped because
                                                their copy waits in a tier,
                                                superseded tier copies, and
                                                messages the previous owner
                                                decided above its commit */
        KRETRY_COUNTER_BREAKER_TRIPS = 18, /**< times the circuit breaker
                                                opened */
        KRETRY_COUNTER_BREAKER_OPEN = 19,  /**< 1 while the breaker holds
                                               consumption paused */
        KRETRY_COUNTER_KEEPALIVES = 20,    /**< always 0: the handler runs
                                                on worker threads, and the
                                                driving thread keeps the group
                                                membership itself (kept so
                                                that numbering stays) */
        KRETRY_COUNTER_INFLIGHT = 21,      /**< messages consumed and not yet
                                                decided now (in the handler, held,
                                                or waiting for a slot or their
                                                key) */
        KRETRY_COUNTER_INFLIGHT_BYTES = 22, /**< the bytes of key and value
                                                 of those messages now
                                                 (bounded by max.inflight.bytes)
                                                 */
        KRETRY_COUNTER_TOO_LARGE = 23,      /**< copies the broker (or the
                                                producer's message.max.bytes)
                                                refused as too large, each
                                                counted once: its partition waits
                                                until the limit is raised */
        KRETRY_COUNTER_FOREIGN = 24,  /**< tier copies another consumer group
                                           wrote (kretry-group), acknowledged
                                           without handling */
        KRETRY_COUNTER_BUFFERED = 25, /**< tier messages kept in memory now
                                           behind one not due yet, so that
                                           their partition keeps fetching
                                           (bounded per partition by
                                           tier.buffer.messages) */
        KRETRY_COUNTER_BUFFERED_BYTES = 26, /**< the memory those messages
                                                take now: key, value, headers
                                                and kretry's record (bounded
                                                per partition by
                                                tier.buffer.bytes, in all by
                                                tier.buffer.total.bytes) */
        KRETRY_COUNTER_ASSIGNED = 27,       /**< source partitions assigned to
                                                 this member now */
        KRETRY_COUNTER_ASSIGNMENTS = 28,    /**< assignments received, an empty
                                                 one included: 0 until the
                                                 member first joined the group
                                                 (group.protocol=consumer:
                                                 its first member epoch counts
                                                 as one, since a member given
                                                 no partition receives none) */
        KRETRY_COUNTER_TXN_COMMITS = 29,    /**< routing transactional:
                                                 transactions committed */
        KRETRY_COUNTER_TXN_ABORTS = 30,     /**< routing transactional:
                                                 transactions aborted, their
                                                 messages decided again */
        KRETRY_COUNTER_DENIED_COPIES = 31,  /**< copies the cluster refused
                                                 for want of an ACL (Write on
                                                 a tier, the DLQ or the
                                                 changelog), each counted
                                                 once: its partition waits,
                                                 its offset uncommitted,
                                                 until the ACL is granted */
        KRETRY_COUNTER_DENIED_COMMITS = 32, /**< offset commits refused for
                                                 want of an ACL (Read on the
                                                 group or a topic) */
        KRETRY_COUNTER_DENIED_READS = 33,   /**< refusals to read a consumed
                                                 topic (Read or Describe
                                                 missing) */
        KRETRY_COUNTER_DENIED_NOW = 34      /**< gauge: copies refused for
                                                 want of an ACL now, plus 1
                                                 while the last commit was
                                                 refused, plus 1 while a
                                                 consumed topic is refused,
                                                 plus 1 while a copy of the
                                                 open transaction was;
                                                 above 0, kretry run's
                                                 /readyz answers 503 */
} kretry_counter_t;

/**
 * @returns the value of @p counter; for KRETRY_COUNTER_RETRIED, @p tier
 *          selects one tier (1-based) or all (0). Thread-safe.
 */
KRETRY_EXPORT int64_t kretry_adapter_counter(const kretry_adapter_t *adapter,
                                             kretry_counter_t counter,
                                             int tier);

/**
 * @brief Render every counter as one JSON object:
 *        {"consumed":N,"ok":N,"handler_calls":N,"retried":[t1,t2,...],
 *         "dead_lettered":{"permanent":N,"exhausted":N,"expired":N,
 *         "schema":N},"produce_errors":N,"held":N,...,
 *         "inflight":N,"inflight_bytes":N,"too_large":N,"foreign":N,
 *         "buffered":N,"buffered_bytes":N,"assigned":N,"assignments":N,
 *         "txn_commits":N,"txn_aborts":N,
 *         "denied":{"copy":N,"commit":N,"read":N},"denied_now":N}
 *        ("inflight" and "inflight_bytes": KRETRY_COUNTER_INFLIGHT and
 *        KRETRY_COUNTER_INFLIGHT_BYTES, gauges of the moment)
 * @returns the length the full text needs (without NUL); @p dest gets it
 *          NUL-terminated, truncated to @p dest_size. Thread-safe.
 */
KRETRY_EXPORT size_t kretry_adapter_stats_json(const kretry_adapter_t *adapter,
                                               char *dest,
                                               size_t dest_size);
/**@}*/

#ifdef __cplusplus
}
#endif

#endif /* KRETRY_KRETRY_H */
