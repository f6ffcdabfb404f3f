/*
 * Service: messages the engine keeps in its own memory (owned.c), and
 * queues of them. Polling thread.
 */
#ifndef KRETRY_OWNED_H
#define KRETRY_OWNED_H

#include <librdkafka/rdkafka.h>
#include <stdint.h>

/* Owned copies of consumed messages (kretry_rkm_own) in arrival order,
 * linked through the copies themselves: queueing one allocates nothing
 * more. */
typedef struct {
        rd_kafka_message_t *head, *tail;
        int cnt;
        int64_t bytes; /* the copies' memory (kretry_rkm_size) */
} kretry_rkm_fifo_t;

/*
 * Messages the engine keeps: librdkafka's, or a held tier message copied into
 * kretry's own memory (owned.c), so that it does not keep its Fetch response
 * allocated while it waits. These serve both kinds; a copy must never reach
 * librdkafka's own message functions.
 */
rd_kafka_message_t *kretry_rkm_own(rd_kafka_message_t *rkm); /* or rkm: OOM */
int kretry_rkm_owned(const rd_kafka_message_t *rkm);
rd_kafka_resp_err_t kretry_rkm_headers(const rd_kafka_message_t *rkm,
                                       rd_kafka_headers_t **hdrsp);
int64_t kretry_rkm_timestamp(const rd_kafka_message_t *rkm,
                             rd_kafka_timestamp_type_t *tstype);
void kretry_rkm_destroy(rd_kafka_message_t *rkm);
/* The memory an owned copy of @p rkm takes (its own, if it is one): key,
 * value, headers and the record around them. */
size_t kretry_rkm_size(const rd_kafka_message_t *rkm);

/* Queue *@p rkmp as an owned copy (librdkafka's is destroyed) and set it to
 * NULL; -1 when it could not be copied (out of memory): *@p rkmp is then
 * the caller's still. */
int kretry_rkm_fifo_push(kretry_rkm_fifo_t *f, rd_kafka_message_t **rkmp);
rd_kafka_message_t *kretry_rkm_fifo_pop(kretry_rkm_fifo_t *f); /* or NULL */

#endif
