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
/* Point the partitions of @p l (or every assigned one) at a->tq (tiers)
 * and a->sq (source). */
void kretry_forward_parts(kretry_adapter_t *a,
                          const rd_kafka_topic_partition_list_t *l);
void kretry_forward_parts_all(kretry_adapter_t *a);

#endif
