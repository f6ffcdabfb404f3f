/*
 * Dead letters other tools wrote, read as kretry reads its own, so that a
 * shop moving to kretry operates the dead-letter topics it already has with
 * kretry dlq, stats and ui:
 *
 *   Spring Kafka's DLT (DeadLetterPublishingRecoverer): kafka_dlt-<field>
 *   as its recoverer names them by default, or kafka_<field> as its
 *   non-blocking retries (retry topics) do (Spring Kafka 4.1.2, seen on a
 *   real broker: tests/fixtures/spring-4.1.2-dlt.json), for the fields
 *   exception-fqcn, exception-cause-fqcn, exception-message,
 *   exception-stacktrace, original-topic, original-partition (4-byte
 *   big-endian int), original-offset and original-timestamp (8-byte
 *   big-endian long), original-consumer-group (kafka_dlt- in both);
 *   retry_topic-attempts (a big-endian int of 1 to 4 bytes) numbers the
 *   next delivery, so the failed attempts are one less. Class: exhausted
 *   when more than one attempt failed (it went through a retry topic),
 *   else permanent; code: the cause's class name, else the exception's;
 *   error: the exception's message.
 *
 *   Kafka Connect's DLQ (errors.deadletterqueue.context.headers.enable):
 *   __connect.errors.topic, .partition, .offset (decimal text),
 *   .exception.class.name, .exception.message, .exception.stacktrace,
 *   .connector.name. Class: permanent; code: the exception's class name.
 *
 * kretry's own kretry-* headers win where a message carries both.
 */
#ifndef KRETRY_DLQ_FOREIGN_H
#define KRETRY_DLQ_FOREIGN_H

#include "dlq_filter.h"

#include <librdkafka/rdkafka.h>

/* Fill what @p hdrs (may be NULL) say in Spring's or Connect's words into
 * the fields of @p info that kretry's own headers left empty; sets
 * info->origin. Pointers borrow from @p hdrs, or are static strings. */
void kretry_dlq_foreign_decode(const rd_kafka_headers_t *hdrs,
                               kretry_dlq_info_t *info);

/* 1 for a header another tool's dead letter carries about its failure or
 * its retries (kafka_dlt-*, kafka_exception-*, kafka_original-*,
 * kafka_key-exception-*, retry_topic-*, __connect.errors.*): a replay
 * drops it, as it drops kretry's chain headers. */
int kretry_dlq_foreign_header(const char *name);

#endif
