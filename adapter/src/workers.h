/*
 * Phase: the handler's threads (workers.c). Called from the polling thread
 * (kretry_msg_resolve: any thread).
 */
#ifndef KRETRY_WORKERS_H
#define KRETRY_WORKERS_H

#include "kretry/kretry.h"
#include "part.h"

#include <librdkafka/rdkafka.h>

/* workers.c: the handler's threads. */
int kretry_workers_start(kretry_adapter_t *a);
/* Join the workers and release every message not decided (destroy). */
void kretry_workers_stop(kretry_adapter_t *a);
/* Queue @p rkm (tracked) for a worker; dispatched when its ordering allows. */
void kretry_workers_submit(kretry_adapter_t *a,
                           kretry_part_t *part,
                           rd_kafka_message_t *rkm);
/* Decide the results the workers returned, then dispatch what may run;
 * returns the results decided. */
int kretry_workers_reap(kretry_adapter_t *a);
/* The breaker opened (1) or closed (0): workers take no queued job while
 * it is open; the calls running finish. */
void kretry_workers_pause(kretry_adapter_t *a, int paused);
/* Dispatch what was submitted and may run now. */
void kretry_workers_flush(kretry_adapter_t *a);

/* When dispatching resumes after memory ran out (kretry_mono_ms), or 0. */
int64_t kretry_workers_later_at(const kretry_adapter_t *a);
/* 1 when no result waits: the next one then writes the eventfd (call
 * before the polling thread sleeps or returns to the application). */
int kretry_workers_idle(kretry_adapter_t *a);
/* The assignment @p part ends: the messages waiting in its gates are
 * dropped (not done). */
void kretry_workers_retire(kretry_adapter_t *a, kretry_part_t *part);
/* The view a held message's handle (kretry_msg_hold) names, @p msg itself
 * when it is not a handle, or NULL for a handle no longer valid. */
const kretry_msg_t *kretry_msg_resolve(const kretry_msg_t *msg);
/* Revocation of @p l: drop its waiting messages and wait, until
 * @p deadline, for its messages in the handler, deciding their results.
 * @p deadline 0 (a lost assignment, already retired), or with
 * handler.thread poll: no wait. */
void kretry_workers_revoke(kretry_adapter_t *a,
                           const rd_kafka_topic_partition_list_t *l,
                           int64_t deadline);

/* Pause (1) or resume (0) every assigned partition for the breaker. */
void kretry_breaker_apply(kretry_adapter_t *a, int paused);

#endif
