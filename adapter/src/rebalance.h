/*
 * Phase: assignment and revocation (rebalance.c). Polling thread.
 */
#ifndef KRETRY_REBALANCE_H
#define KRETRY_REBALANCE_H

#include "kretry/kretry.h"

#include <librdkafka/rdkafka.h>

/* rebalance.c */
void kretry_rebalance_cb(rd_kafka_t *rk,
                         rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts,
                         void *opaque);
/* A close's revocation of every partition assigned (handler calls and
 * copies awaited, offsets committed, as on a revocation), made before the
 * close asks librdkafka to leave the group (adapter.c close_consumer). */
void kretry_revoke_for_close(kretry_adapter_t *a);
/* The close's assign or unassign call (made on a thread of its own once
 * the close asked the group to leave): joined once it returned. @p final
 * (the consumer destroyed, or being destroyed on a thread of its own): a
 * call still waiting never returns, or returns to nobody; its thread is
 * detached and frees what it holds if it ever does. */
void kretry_close_call_reap(kretry_adapter_t *a, int final);
/* Point the partitions of @p l at a->tq (tiers) and a->sq (source). */
void kretry_forward_parts(kretry_adapter_t *a,
                          const rd_kafka_topic_partition_list_t *l);
/* Every assigned partition's forward set again, once a second while a
 * stop of an earlier revocation may still drop one (rebalance.c): from
 * each rebalance event until kretry_forward_renew_ms after it; then
 * a->forward_at is 0, no timer. */
void kretry_forward_renew(kretry_adapter_t *a, int64_t mono);
/* Tests shorten it. */
extern int kretry_forward_renew_ms;

#endif
