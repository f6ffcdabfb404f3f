/*
 * Phase: an assignment's life in the partition table: made (again), retired
 * with what it held in kretry's memory and its handler calls, and the
 * batched source messages dropped when their assignment ends. Called by
 * rebalance.c, txn.c (a rewind), intake.c and the loop. Polling thread only
 * (adapter_int.h).
 */
#include "assign.h"
#include "adapter_int.h"
#include "owned.h"
#include "part.h"
#include "workers.h"

#include <string.h>

kretry_part_t *kretry_part_assign(kretry_adapter_t *a, int tier, int32_t p) {
        kretry_part_t *part = kretry_part_find(a, tier, p);
        if (part) { /* assigned again without a revocation between */
                part->awaited = 1; /* its calls: none waits for them */
                kretry_part_retire(a, part);
        }
        return kretry_part_new(a, tier, p);
}

void kretry_part_retire(kretry_adapter_t *a, kretry_part_t *part) {
        if (!part->assigned)
                return;
        /* A held message was not committed: the next owner fetches it
         * again from the committed offset. */
        kretry_part_drop_held(a, part);
        kretry_workers_retire(a, part);
        part->produce_failures = 0;
        part->assigned         = 0;
        kretry_part_update_pause(a, part); /* leave no pause behind */
        a->parts[part->tier][part->partition] = NULL;
        kretry_part_unref(part);
}

void kretry_part_drop_held(kretry_adapter_t *a, kretry_part_t *part) {
        rd_kafka_message_t *rkm;
        kretry_rkm_fifo_t *f = &part->behind;
        kretry_count_buffered(a, -f->cnt, -f->bytes);
        while ((rkm = kretry_rkm_fifo_pop(f)))
                kretry_rkm_destroy(rkm);
        part->behind_full = 0;
        atomic_fetch_sub_explicit(&a->stats.held, part->src_wait.cnt,
                                  memory_order_relaxed);
        while ((rkm = kretry_rkm_fifo_pop(&part->src_wait)))
                kretry_rkm_destroy(rkm);
        if (!part->held)
                return;
        for (kretry_part_t **pp = &a->held_list; *pp; pp = &(*pp)->next_held)
                if (*pp == part) {
                        *pp = part->next_held;
                        break;
                }
        kretry_rkm_destroy(part->held);
        part->held      = NULL;
        part->next_held = NULL;
        atomic_fetch_sub_explicit(&a->stats.held, 1, memory_order_relaxed);
}

static int sbuf_in(const rd_kafka_message_t *m,
                   const rd_kafka_topic_partition_list_t *l) {
        for (int i = 0; i < l->cnt; i++)
                if (l->elems[i].partition == m->partition &&
                    (l->elems[i].offset < 0 ||
                     m->offset >= l->elems[i].offset) &&
                    !strcmp(l->elems[i].topic, rd_kafka_topic_name(m->rkt)))
                        return 1;
        return 0;
}

void kretry_sbuf_drop(kretry_adapter_t *a,
                      const rd_kafka_topic_partition_list_t *l) {
        int keep = a->sbuf_pos;
        for (int i = a->sbuf_pos; i < a->sbuf_cnt; i++) {
                rd_kafka_message_t *m = a->sbuf[i];
                if (!l || sbuf_in(m, l))
                        rd_kafka_message_destroy(m);
                else
                        a->sbuf[keep++] = m;
        }
        a->sbuf_cnt = keep;
}
