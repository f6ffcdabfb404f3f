/*
 * Phase: routing, from a consumed message to a durable outcome.
 *
 * From a consumed message to a durable outcome: hold it until due, call the
 * handler, decide OK / tier / DLQ, produce the copy (borrowing key and value
 * from the consumed message), and on the broker's acknowledgement mark the
 * offset done so it can be committed. A copy whose delivery failed is
 * produced again after a backoff; its partition is paused meanwhile and its
 * offset is never stored, so nothing is dropped. Memory running out before
 * an outcome is decided holds the message the same way (retry_later).
 */
#include "route.h"
#include "adapter_int.h"
#include "breaker.h"
#include "clock.h"
#include "codec.h"
#include "commit.h"
#include "conf.h"
#include "delay.h"
#include "denied.h"
#include "headers.h"
#include "keyed.h"
#include "latency.h"
#include "log.h"
#include "msg.h"
#include "offsets.h"
#include "owned.h"
#include "part.h"
#include "stats.h"
#include "txn_open.h"
#include "versions.h"
#include "workers.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KRETRY_BACKOFF_MAX_MS 10000

void kretry_route_cb(kretry_adapter_t *a,
                     kretry_part_t *part,
                     const rd_kafka_message_t *rkm,
                     kretry_route_t route,
                     int tier,
                     const char *cls,
                     int attempt) {
        if (a->conf->route_cb)
                a->conf->route_cb(a->topics[part->tier], rkm->partition,
                                  rkm->offset, route, tier, cls, attempt,
                                  a->conf->opaque);
}

void kretry_complete(kretry_adapter_t *a, kretry_part_t *part, int64_t offset) {
        if (!part->assigned)
                return; /* revoked since: the new owner handles it again */
        int rc = kretry_offsets_done(&part->offsets, offset);
        if (a->txn.on) { /* committed with the transaction (txn.c) */
                if (rc >= 0)
                        kretry_txn_note(a, part);
                return;
        }
        if (rc == 0) /* decided above a message still undecided: the
                      * next periodic commit carries it (commit.c) */
                a->decided_dirty = 1;
        if (rc != 1)
                return;
        if (!a->store_defer)
                kretry_part_store(a, part);
        else if (!part->store_due) { /* stored at kretry_store_end */
                part->store_due  = 1;
                part->next_store = a->store_list;
                a->store_list    = kretry_part_ref(part);
        }
}

void kretry_inflight_free(kretry_adapter_t *a, kretry_inflight_t *r) {
        if (!r)
                return;
        if (r->rkm)
                kretry_rkm_destroy(r->rkm);
        if (r->denied) {
                r->denied = 0;
                atomic_fetch_sub_explicit(&a->stats.denied_copies_now, 1,
                                          memory_order_relaxed);
        }
        if (r->part) {
                r->part->copies--;
                r->part->copies_stuck -= r->stuck;
                kretry_part_unref(r->part);
                r->part = NULL;
        }
        if (r->reserve_cap) {
                kretry_reserve_put(a, r); /* back in reserve (record_new) */
                return;
        }
        free(r); /* its strings live in the same allocation */
}

void kretry_reserve_put(kretry_adapter_t *a, kretry_inflight_t *r) {
        if (r && !a->msg0.reserve)
                a->msg0.reserve = r;
        else
                free(r);
}

/* Too large for its topic (or for the producer's own message.max.bytes,
 * which librdkafka reports with the same code). */
int kretry_too_large(rd_kafka_resp_err_t err) {
        return err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ||
               err == RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE;
}

/* The topic a copy record is produced to: a tier, the DLQ (0) or the version
 * changelog (KRETRY_DEST_VERSIONS). */
const char *kretry_dest_topic(const kretry_adapter_t *a,
                              const kretry_inflight_t *r) {
        if (r->park_first)
                return a->parked_topic;
        if (r->dest == KRETRY_DEST_VERSIONS)
                return a->versions_topic;
        return r->dest ? a->topics[r->dest] : a->dlq;
}

int kretry_producer_fatal(kretry_adapter_t *a) {
        char reason[512];
        if (a->producer_fatal)
                return 1;
        if (!a->producer ||
            !rd_kafka_fatal_error(a->producer, reason, sizeof(reason)))
                return 0;
        a->producer_fatal = 1;
        a->fatal          = 1;
        kretry_log(a, KRETRY_LOG_ERR, "FATAL",
                   "producer: %s; stopping: no copy to a tier, the DLQ or the "
                   "changelog can be acknowledged any more, so offsets stay "
                   "at the last durable outcome (%d copies not durable)",
                   reason, a->inflight);
        return 1;
}

/* A copy refused as too large (or for want of an ACL) stops its partition
 * until an operator raises the destination's max.message.bytes (grants
 * Write on it). kretry stats reads only the cluster, so the partition's
 * commit carries the news: committed again at the offset it stands at,
 * with metadata naming the destination after @p mark
 * (KRETRY_TOO_LARGE_METADATA, KRETRY_DENIED_METADATA). The next commit
 * that moves the partition, once the copy is delivered, has none and
 * clears it. */
static void mark_stuck(kretry_adapter_t *a,
                       kretry_part_t *part,
                       const char *mark,
                       const char *dest) {
        int64_t at = kretry_offsets_resume_at(&part->offsets);
        /* Under routing=transactional every commit is the transaction's. */
        if (at < 0 || !part->assigned || a->txn.on ||
            rd_kafka_assignment_lost(a->consumer))
                return;
        size_t len = strlen(mark) + strlen(dest) + 1;
        char *md   = malloc(len);
        rd_kafka_topic_partition_list_t *l =
                md ? rd_kafka_topic_partition_list_new(1) : NULL;
        if (!l) {
                free(md);
                return;
        }
        snprintf(md, len, "%s%s", mark, dest);
        rd_kafka_topic_partition_t *tp = rd_kafka_topic_partition_list_add(
                l, a->topics[part->tier], part->partition);
        tp->offset        = at;
        tp->metadata      = md; /* freed with the list */
        tp->metadata_size = len - 1;
        rd_kafka_resp_err_t err =
                kretry_commit_send(a, l, kretry_mono_ms() + 1000);
        if (err)
                kretry_log(a, KRETRY_LOG_WARNING, "PRODUCE",
                           "%s [%d]: the mark for kretry stats was not "
                           "committed: %s",
                           a->topics[part->tier], (int)part->partition,
                           rd_kafka_err2str(err));
        rd_kafka_topic_partition_list_destroy(l);
}

/* The first refusal of copy @p r for want of an ACL: counted once, in the
 * gauge until it is delivered, said (denied.h) and marked on its
 * partition's commit for kretry stats. */
static void copy_denied(kretry_adapter_t *a,
                        kretry_inflight_t *r,
                        rd_kafka_resp_err_t err,
                        const char *dest) {
        char what[400];
        r->denied = 1;
        atomic_fetch_add_explicit(&a->stats.denied_copies_now, 1,
                                  memory_order_relaxed);
        snprintf(what, sizeof(what), "copy of %s [%d] offset %lld to %s",
                 a->topics[r->part->tier], (int)r->part->partition,
                 (long long)r->rkm->offset, dest);
        kretry_denied_note(a, KRETRY_DENIED_COPY, err, what);
        if (r->part->assigned)
                mark_stuck(a, r->part, KRETRY_DENIED_METADATA, dest);
}

static void fail_record(kretry_adapter_t *a,
                        kretry_inflight_t *r,
                        rd_kafka_resp_err_t err) {
        atomic_fetch_add_explicit(&a->stats.produce_errors, 1,
                                  memory_order_relaxed);
        if (err == RD_KAFKA_RESP_ERR__FATAL && kretry_producer_fatal(a)) {
                /* Never produced again: kept until close releases it, its
                 * offset uncommitted. */
                r->next_failed = a->failed;
                a->failed      = r;
                return;
        }
        r->backoff_ms =
                r->backoff_ms ? r->backoff_ms * 2 : a->conf->produce_backoff_ms;
        if (r->backoff_ms > KRETRY_BACKOFF_MAX_MS)
                r->backoff_ms = KRETRY_BACKOFF_MAX_MS;
        r->retry_at      = kretry_mono_ms() + r->backoff_ms;
        const char *dest = kretry_dest_topic(a, r);
        /* Too large never heals by itself: an operator must act. Said once
         * per stuck partition (the copy is produced again every 10 s at
         * most), counted once per copy. */
        int big    = kretry_too_large(err);
        int denied = kretry_denied_err(err);
        int level  = big      ? r->part->too_large_logged ? KRETRY_LOG_DEBUG
                                                          : KRETRY_LOG_ERR
                     : denied ? KRETRY_LOG_DEBUG
                              : KRETRY_LOG_WARNING;
        if (big && !r->failed)
                atomic_fetch_add_explicit(&a->stats.too_large, 1,
                                          memory_order_relaxed);
        if (big && !r->part->too_large_logged && r->part->assigned)
                mark_stuck(a, r->part, KRETRY_TOO_LARGE_METADATA, dest);
        if ((big || denied) && !r->stuck) {
                /* Waiting cannot make it fit, nor grant the ACL: a
                 * revocation or close does not wait for it. */
                r->stuck = 1;
                r->part->copies_stuck++;
        }
        if (denied && !r->denied)
                copy_denied(a, r, err, dest);
        r->part->too_large_logged |= big;
        kretry_log(a, (kretry_log_level_t)level, "PRODUCE",
                   "copy of %s [%d] offset %lld to %s failed: %s; producing "
                   "again in %d ms (offset not committed meanwhile)%s%s%s",
                   a->topics[r->part->tier], (int)r->part->partition,
                   (long long)r->rkm->offset, dest, rd_kafka_err2str(err),
                   r->backoff_ms, big ? "; raise max.message.bytes of " : "",
                   big ? dest : "",
                   big ? " (and producer.message.max.bytes, if set lower)"
                       : "");
        if (!r->failed && r->part->assigned) {
                /* First failure of this copy: hold the partition back until
                 * it is delivered. */
                r->failed = 1;
                r->part->produce_failures++;
                kretry_part_update_pause(a, r->part);
        }
        r->next_failed = a->failed;
        a->failed      = r;
}

/* routing=transactional: no transaction can take a copy now (one is being
 * committed or aborted): produced again shortly, not counted as a failure
 * (an abort rewinds its partition, which frees it). */
static void produce_later(kretry_adapter_t *a, kretry_inflight_t *r) {
        r->backoff_ms  = a->conf->produce_backoff_ms;
        r->retry_at    = kretry_mono_ms() + r->backoff_ms;
        r->next_failed = a->failed;
        a->failed      = r;
}

/* The version changelog record that raised a key's version. */
static void send_version(kretry_adapter_t *a, kretry_inflight_t *r) {
        rd_kafka_resp_err_t err = rd_kafka_producev(
                a->producer, RD_KAFKA_V_TOPIC(a->versions_topic),
                RD_KAFKA_V_PARTITION(r->part->partition),
                RD_KAFKA_V_KEY(r->rkm->key, r->rkm->key_len),
                RD_KAFKA_V_VALUE(r->vbuf, r->vlen), RD_KAFKA_V_MSGFLAGS(0),
                RD_KAFKA_V_OPAQUE(r), RD_KAFKA_V_END);
        if (err)
                fail_record(a, r, err);
        else
                a->inflight++;
}

/* park_key: the park record of the key whose head's DLQ copy parks it:
 * the head's original offset, in decimal, keyed by the message key, in the
 * partition of its source partition's number. The restore reads these
 * instead of the DLQ (restore.c). Its parked followers write none: the
 * key's record stands until a replay lifts the park. */
static void send_park(kretry_adapter_t *a, kretry_inflight_t *r) {
        char v[24];
        int n = snprintf(v, sizeof(v), "%lld", (long long)r->info.orig_offset);
        rd_kafka_resp_err_t err = rd_kafka_producev(
                a->producer, RD_KAFKA_V_TOPIC(a->parked_topic),
                RD_KAFKA_V_PARTITION(r->part->partition),
                RD_KAFKA_V_KEY(r->rkm->key, r->rkm->key_len),
                RD_KAFKA_V_VALUE(v, (size_t)n),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_OPAQUE(r),
                RD_KAFKA_V_END);
        if (err)
                fail_record(a, r, err);
        else
                a->inflight++;
}

/* The opaque of a park tombstone's produce: no copy record. */
static char unpark_tag;

static rd_kafka_resp_err_t send_unpark(kretry_adapter_t *a,
                                       int32_t partition,
                                       const void *key,
                                       size_t len) {
        return rd_kafka_producev(
                a->producer, RD_KAFKA_V_TOPIC(a->parked_topic),
                RD_KAFKA_V_PARTITION(partition), RD_KAFKA_V_KEY(key, len),
                RD_KAFKA_V_VALUE(NULL, 0),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                RD_KAFKA_V_OPAQUE(&unpark_tag), RD_KAFKA_V_END);
}

static void
unpark_lost(kretry_adapter_t *a, int32_t partition, rd_kafka_resp_err_t err) {
        kretry_log(a, KRETRY_LOG_ERR, "PRODUCE",
                   "the tombstone of a key a replay released could not be "
                   "written to %s [%d]: %s; the key is parked again at the "
                   "next assignment (replay it again then)",
                   a->parked_topic, (int)partition, rd_kafka_err2str(err));
}

void kretry_route_unpark(kretry_adapter_t *a,
                         int32_t partition,
                         const void *key,
                         size_t len) {
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__STATE;
        if (!a->parked_topic)
                return;
        /* Under routing=transactional it commits with the replay's offset
         * (an abort restores the park, and the replay comes again). */
        if (!(a->txn.on && kretry_txn_begin(a)))
                err = send_unpark(a, partition, key, len);
        if (err) {
                unpark_lost(a, partition, err);
                return;
        }
        a->inflight++;
        a->unparks++;
}

static void send_copy(kretry_adapter_t *a, kretry_inflight_t *r) {
        if (a->txn.on && kretry_txn_begin(a)) {
                produce_later(a, r);
                return;
        }
        if (r->dest == KRETRY_DEST_VERSIONS) {
                send_version(a, r);
                return;
        }
        if (r->park_first) {
                send_park(a, r);
                return;
        }
        rd_kafka_headers_t *src = NULL, *hdrs = NULL;
        if (kretry_rkm_headers(r->rkm, &src))
                src = NULL;
        if (src && !kretry_headers_have_chain(src) &&
            !kretry_rkm_owned(r->rkm) &&
            !rd_kafka_message_detach_headers(r->rkm, &hdrs)) {
                /* The usual source message: its parsed list becomes the
                 * copy's, chain headers appended, instead of being copied.
                 * The message keeps its wire headers: a later read (a
                 * produce retried after a failed delivery) parses them again.
                 * Nothing in the list is borrowed by r->info: without chain
                 * headers there is no correlation id to borrow. */
                if (a->msg->rkm == r->rkm) {
                        a->msg->hdrs        = NULL;
                        a->msg->hdrs_loaded = 0;
                }
                kretry_headers_append(hdrs, &r->info);
        } else {
                hdrs = kretry_headers_build(src, &r->info);
        }
        const char *topic       = kretry_dest_topic(a, r);
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__CRIT_SYS_RESOURCE;
        if (hdrs)
                err = rd_kafka_producev(
                        a->producer, RD_KAFKA_V_TOPIC(topic),
                        RD_KAFKA_V_PARTITION(r->part->partition),
                        RD_KAFKA_V_KEY(r->rkm->key, r->rkm->key_len),
                        RD_KAFKA_V_VALUE(r->rkm->payload, r->rkm->len),
                        RD_KAFKA_V_MSGFLAGS(0), RD_KAFKA_V_HEADERS(hdrs),
                        RD_KAFKA_V_OPAQUE(r), RD_KAFKA_V_END);
        if (err) {
                if (hdrs)
                        rd_kafka_headers_destroy(hdrs);
                fail_record(a, r, err);
                return;
        }
        a->inflight++;
}

static void *alloc_record(const char *site, size_t size) {
        if (kretry_test_alloc_fails && kretry_test_alloc_fails(site))
                return NULL;
        return calloc(1, size);
}

/* The reserve record: room for any message's strings (its original topic
 * is one of ours or at most KRETRY_TOPIC_MAX long; its code and error are
 * bounded by the view's buffers). */
static kretry_inflight_t *reserve_new(kretry_adapter_t *a) {
        size_t tl = KRETRY_TOPIC_MAX;
        for (int t = 0; t < a->topic_cnt; t++)
                if (strlen(a->topics[t]) > tl)
                        tl = strlen(a->topics[t]);
        size_t cap = tl + 1 + sizeof(a->msg->code) + a->msg->error_cap + 1;
        kretry_inflight_t *r = alloc_record("reserve", sizeof(*r) + cap);
        if (r)
                r->reserve_cap = cap;
        return r;
}

kretry_inflight_t *kretry_reserve_take(kretry_adapter_t *a) {
        kretry_inflight_t *r = a->msg0.reserve;
        if (!r)
                return reserve_new(a);
        a->msg0.reserve = NULL;
        return r;
}

/* Build the copy record of the message bound to a->msg: its own
 * allocation, or, when memory is short, the reserve the job took
 * (kretry_workers_submit) before the outcome was decided. */
static kretry_inflight_t *record_new(kretry_adapter_t *a,
                                     kretry_part_t *part,
                                     const kretry_copy_t *cp,
                                     int64_t now) {
        int dest        = cp->dest;
        kretry_msg_t *m = a->msg;
        /* One allocation: the record and the strings it must own (the view's
         * buffers are reused by the next message). */
        size_t tl = strlen(m->orig_topic) + 1;
        size_t cl = m->has_code ? strlen(m->code) + 1 : 0;
        size_t el = m->has_error ? strlen(m->error) + 1 : 0;
        kretry_inflight_t *r =
                alloc_record("record", sizeof(*r) + tl + cl + el);
        if (!r && m->reserve && m->reserve->reserve_cap >= tl + cl + el) {
                r          = m->reserve;
                m->reserve = NULL;
                size_t cap = r->reserve_cap;
                memset(r, 0, sizeof(*r));
                r->reserve_cap = cap;
        }
        if (!r)
                return NULL;
        char *strs = (char *)(r + 1);
        r->part    = kretry_part_ref(part);
        part->copies++;
        r->rkm             = m->rkm;
        r->dest            = dest;
        r->route           = cp->route;
        r->handler_attempt = m->attempt;
        r->orig_topic      = memcpy(strs, m->orig_topic, tl);
        r->error_code      = cl ? memcpy(strs + tl, m->code, cl) : NULL;
        r->error           = el ? memcpy(strs + tl + cl, m->error, el) : NULL;
        if (m->tier == 0) {
                /* Looked up only now that a copy is made (see bind). */
                const void *v;
                size_t n;
                rd_kafka_headers_t *h = kretry_msg_hdrs(m);
                if (h &&
                    !rd_kafka_header_get_last(h, KRETRY_H_CORRELATION_ID, &v,
                                              &n) &&
                    v && n) {
                        m->chain.correlation_id     = v;
                        m->chain.correlation_id_len = n;
                }
        }
        kretry_copy_info_t *i = &r->info;
        i->attempt = cp->parked || cp->no_attempt ? m->attempt - 1 : m->attempt;
        i->tier    = dest;
        i->due_ts  = cp->due_ts;
        i->followers      = cp->followers;
        i->orig_topic     = r->orig_topic;
        i->orig_partition = m->orig_partition;
        i->orig_offset    = m->orig_offset;
        i->orig_ts        = m->orig_ts;
        /* A parked message did not fail: its failure times stay as they
         * were (absent before its first failure). */
        i->first_failure_ts = m->first_failure_ts >= 0 ? m->first_failure_ts
                              : cp->parked             ? -1
                                                       : now;
        i->last_failure_ts  = cp->parked ? m->chain.last_failure_ts : now;
        i->error_class      = cp->cls;
        i->error_code       = r->error_code;
        i->error            = r->error;
        i->group            = a->group;
        /* Borrowed from the consumed message, which the record keeps. */
        i->correlation_id     = m->chain.correlation_id;
        i->correlation_id_len = m->chain.correlation_id_len;
        i->spring             = a->conf->headers_spring;
        return r;
}

void kretry_route_copy(kretry_adapter_t *a,
                       kretry_part_t *part,
                       const kretry_copy_t *cp) {
        kretry_inflight_t *r = record_new(a, part, cp, kretry_now_ms());
        if (!r) {
                /* Cannot happen: a dispatch makes at most one copy, and
                 * its job reserved its record. Should it, the offset
                 * stays in flight (nothing is committed past it) until the
                 * partition is assigned again. */
                kretry_log(a, KRETRY_LOG_ERR, "ROUTE",
                           "no record for the copy of %s [%d] offset %lld; "
                           "its partition commits nothing further until it "
                           "is reassigned",
                           a->topics[part->tier], (int)part->partition,
                           (long long)a->msg->rkm->offset);
                return;
        }
        if (cp->dest == KRETRY_DEST_VERSIONS)
                r->vlen = kretry_version_encode(cp->version, r->vbuf);
        /* The head's DLQ copy that parks its key (its followers known). */
        r->park_first = a->parked_topic && cp->dest == 0 && cp->followers >= 0;
        send_copy(a, r);
}

static void route_copy(kretry_adapter_t *a,
                       kretry_part_t *part,
                       int dest,
                       const char *cls,
                       int64_t due_ts) {
        kretry_copy_t cp = {.dest      = dest,
                            .cls       = cls,
                            .due_ts    = due_ts,
                            .route     = dest ? KRETRY_ROUTE_RETRY
                                              : KRETRY_ROUTE_DLQ,
                            .followers = -1};
        kretry_route_copy(a, part, &cp);
}

static void route_failure(kretry_adapter_t *a,
                          kretry_part_t *part,
                          kretry_action_t action) {
        const kretry_conf_t *c = a->conf;
        kretry_msg_t *m        = a->msg;
        int64_t now            = kretry_now_ms();
        const char *cls        = NULL;
        if (action == KRETRY_FAIL)
                cls = "permanent";
        else if (m->attempt >= kretry_conf_max_attempts(c))
                cls = "exhausted";
        else if (c->max_age_ms > 0 && m->orig_ts >= 0 &&
                 now - m->orig_ts > c->max_age_ms)
                cls = "expired";
        if (cls) {
                kretry_copy_t cp = {.cls   = cls,
                                    .route = KRETRY_ROUTE_DLQ,
                                    .followers =
                                            kretry_keyed_failed(a, part, 0, 0)};
                kretry_route_copy(a, part, &cp);
                return;
        }
        int tier    = kretry_tier_for(c->tiers_ms, c->tier_cnt, m->attempt,
                                      m->retry_after_ms);
        int64_t due = kretry_due_ts(c->tiers_ms, c->tier_cnt, tier, c->jitter,
                                    m->retry_after_ms, now, &a->rng);
        kretry_keyed_failed(a, part, tier, due);
        route_copy(a, part, tier, "transient", due);
}

/* value.format avro: decode into the message view, or dead-letter the
 * message with class schema and the codec's reason, without a handler call
 * and without spending an attempt. Returns 1 when decoded. */
int kretry_decode_value(kretry_adapter_t *a, kretry_part_t *part) {
        kretry_msg_t *m = a->msg;
        char reason[256];
        if (!kretry_codec_decode(a->codec, m->rkm->payload, m->rkm->len,
                                 &m->value_avro, reason, sizeof(reason)))
                return 1;
        m->value_avro = NULL;
        kretry_msg_error_put(m, "UNDECODABLE", reason);
        kretry_copy_t cp = {.cls        = "schema",
                            .route      = KRETRY_ROUTE_DLQ,
                            .no_attempt = 1,
                            .followers  = kretry_keyed_failed(a, part, 0, 0)};
        kretry_route_copy(a, part, &cp);
        return 0;
}

/* retry.permanent.errors: codes that mean FAIL whatever the handler said. */
static int code_is_permanent(const kretry_adapter_t *a, const kretry_msg_t *m) {
        const char *list = a->conf->permanent_errors;
        size_t n         = m->has_code ? strlen(m->code) : 0;
        if (!n || !list || !*list)
                return 0;
        for (const char *p = list; *p;) {
                size_t len = strcspn(p, ",");
                if (len == n && !strncmp(p, m->code, n))
                        return 1;
                p += len;
                p += *p == ',';
        }
        return 0;
}

static void breaker_feed(kretry_adapter_t *a, kretry_action_t action) {
        if (action == KRETRY_FAIL || a->conf->breaker_failures <= 0)
                return; /* a permanent failure says nothing of the dependency */
        const rd_kafka_message_t *rkm = a->msg->rkm;
        if (kretry_breaker_record(&a->breaker, action == KRETRY_RETRY, rkm->key,
                                  rkm->key_len, kretry_mono_ms())) {
                atomic_fetch_add_explicit(&a->stats.breaker_trips, 1,
                                          memory_order_relaxed);
                kretry_breaker_apply(a, 1);
        }
}

/* A tier copy another consumer group wrote (its kretry-group names that
 * group: the groups share the tier topics): that group handles it, this one
 * acknowledges it unhandled, counted, whatever its other headers say. */
static int foreign_copy(kretry_adapter_t *a, kretry_part_t *part) {
        kretry_msg_t *m = a->msg;
        if (part->tier == 0 ||
            !kretry_headers_foreign(kretry_msg_hdrs(m), a->group))
                return 0;
        atomic_fetch_add_explicit(&a->stats.foreign, 1, memory_order_relaxed);
        kretry_route_cb(a, part, m->rkm, KRETRY_ROUTE_FOREIGN, part->tier, NULL,
                        m->attempt);
        kretry_complete(a, part, m->rkm->offset);
        kretry_rkm_destroy(m->rkm);
        return 1;
}

int kretry_prepare(kretry_adapter_t *a,
                   kretry_part_t *part,
                   rd_kafka_message_t *rkm) {
        kretry_msg_t *m = a->msg;
        kretry_msg_bind(m, rkm, a->topics[part->tier], part->tier);
        if (foreign_copy(a, part))
                return 1;
        if (part->tier > 0 && !m->chain.attempt_ok) {
                /* A tier message whose attempt count is missing or absurd
                 * cannot be placed in its chain: dead-letter it rather than
                 * risk retrying it forever. */
                kretry_msg_error_put(m, "MALFORMED_HEADER",
                                     "kretry-attempt header missing or not "
                                     "a number in 0..1000000");
                kretry_copy_t cp = {.cls   = "schema",
                                    .route = KRETRY_ROUTE_DLQ,
                                    .followers =
                                            kretry_keyed_failed(a, part, 0, 0)};
                kretry_route_copy(a, part, &cp);
                return 1;
        }
        int rc = kretry_keyed_before(a, part);
        if (rc)
                return rc; /* parked behind its key, a stale version, or
                              no memory for its chain (-1) */
        if (a->codec && !a->msg->value_avro && !kretry_decode_value(a, part))
                return 1; /* undecodable: dead-lettered as schema */
        return 0;
}

kretry_action_t
kretry_call_handler(kretry_adapter_t *a, kretry_msg_t *m, int64_t *usp) {
        struct timespec t0, t1;
        atomic_fetch_add_explicit(&a->stats.handler_calls, 1,
                                  memory_order_relaxed);
        if (!a->conf->stats_cb)
                return a->conf->handler(m, a->conf->opaque);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        kretry_action_t action = a->conf->handler(m, a->conf->opaque);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        *usp = (t1.tv_sec - t0.tv_sec) * 1000000 +
               (t1.tv_nsec - t0.tv_nsec) / 1000;
        return action;
}

void kretry_finish(kretry_adapter_t *a,
                   kretry_part_t *part,
                   kretry_action_t action,
                   int64_t us) {
        kretry_msg_t *m         = a->msg;
        rd_kafka_message_t *rkm = m->rkm;
        if (us >= 0)
                kretry_latency_record(&a->latency, us);
        if (action != KRETRY_OK && action != KRETRY_RETRY &&
            action != KRETRY_FAIL) {
                /* Treated as FAIL everywhere, the breaker included. */
                char why[64];
                snprintf(why, sizeof(why), "handler returned invalid action %d",
                         (int)action);
                kretry_msg_error_put(m, "INVALID_ACTION", why);
                action = KRETRY_FAIL;
        }
        if (action == KRETRY_RETRY && code_is_permanent(a, m))
                action = KRETRY_FAIL;
        breaker_feed(a, action);
        if (action == KRETRY_OK) {
                atomic_fetch_add_explicit(&a->stats.ok, 1,
                                          memory_order_relaxed);
                if (kretry_keyed_ok(a, part))
                        return; /* done once its new version is durable */
                kretry_route_cb(a, part, rkm, KRETRY_ROUTE_OK, 0, NULL,
                                m->attempt);
                kretry_complete(a, part, rkm->offset);
                kretry_rkm_destroy(rkm);
                return;
        }
        route_failure(a, part, action);
}

/* Held messages wait their due time in kretry's memory; the messages
 * consumed behind one wait behind it (intake.c, keep_behind), and its
 * partition is paused only when they fill tier.buffer.* or it is a source
 * partition (kretry_part_update_pause). dispatch_due hands them to
 * kretry_dispatch. */
static void hold(kretry_adapter_t *a,
                 kretry_part_t *part,
                 rd_kafka_message_t *rkm,
                 int64_t due) {
        /* One slot a partition: every caller holds only a message of a
         * partition that holds none (the workers never call this). */
        assert(!part->held);
        /* Copied out of librdkafka's memory: the Fetch response it came in
         * is not kept allocated while it waits (owned.c). */
        part->held      = kretry_rkm_own(rkm);
        part->held_due  = due;
        part->next_held = a->held_list;
        a->held_list    = part;
        atomic_fetch_add_explicit(&a->stats.held, 1, memory_order_relaxed);
        kretry_part_update_pause(a, part);
}

/* How long a message waits when memory ran out before its outcome was
 * decided. */
#define KRETRY_NO_MEM_RETRY_MS 100

/* Out of memory before @p rkm's outcome was decided: hold it like a message
 * not yet due (its partition paused, so nothing behind it completes and no
 * commit passes it) and try again shortly, instead of dropping it. */
void kretry_retry_later(kretry_adapter_t *a,
                        kretry_part_t *part,
                        rd_kafka_message_t *rkm,
                        const char *what) {
        kretry_log(a, KRETRY_LOG_ERR, "MEMORY",
                   "out of memory %s %s [%d] offset %lld; trying again in "
                   "%d ms, nothing committed past it meanwhile",
                   what, a->topics[part->tier], (int)part->partition,
                   (long long)rkm->offset, KRETRY_NO_MEM_RETRY_MS);
        hold(a, part, rkm, kretry_now_ms() + KRETRY_NO_MEM_RETRY_MS);
}

/* @p rkm was decided by the partition's previous owner above the offset it
 * committed (part->decided): acknowledged unhandled, like a duplicate. */
static void skip_decided(kretry_adapter_t *a,
                         kretry_part_t *part,
                         rd_kafka_message_t *rkm) {
        atomic_fetch_add_explicit(&a->stats.duplicates, 1,
                                  memory_order_relaxed);
        int64_t offset = rkm->offset;
        kretry_route_cb(a, part, rkm, KRETRY_ROUTE_DUPLICATE, 0, NULL, 0);
        kretry_complete(a, part, offset);
        kretry_rkm_destroy(rkm);
        /* Past its last range: nothing more to look up. */
        if (offset + 1 >= part->decided.r[2 * part->decided.cnt - 1])
                kretry_decided_free(&part->decided);
}

/* Track the offset, then hold the message until due or dispatch it. */
static void
admit(kretry_adapter_t *a, kretry_part_t *part, rd_kafka_message_t *rkm) {
        int rc = kretry_offsets_add(&part->offsets, rkm->offset);
        if (rc == KRETRY_OFFSETS_NO_MEM) {
                kretry_retry_later(a, part, rkm, "tracking");
                return;
        }
        if (rc) {
                kretry_log(a, KRETRY_LOG_WARNING, "OFFSET",
                           "%s [%d] offset %lld out of order; ignored",
                           a->topics[part->tier], (int)part->partition,
                           (long long)rkm->offset);
                kretry_rkm_destroy(rkm);
                return;
        }
        if (part->decided.cnt &&
            kretry_decided_has(&part->decided, rkm->offset)) {
                skip_decided(a, part, rkm);
                return;
        }
        if (part->tier > 0) {
                rd_kafka_headers_t *h;
                const void *v;
                size_t n;
                int64_t due, now;
                if (!kretry_rkm_headers(rkm, &h) &&
                    !rd_kafka_header_get_last(h, KRETRY_H_DUE_TS, &v, &n) &&
                    !kretry_header_num(v, n, INT64_MAX, &due) &&
                    due > (now = kretry_now_ms())) {
                        /* No copy kretry makes is due later than this; one
                         * that says so (a topology whose delays were
                         * shortened, another writer) must not hold up its
                         * partition longer than the tier's delay. */
                        int64_t bound =
                                kretry_due_bound(a->conf->tiers_ms, part->tier,
                                                 a->conf->jitter, now);
                        hold(a, part, rkm, due < bound ? due : bound);
                        return;
                }
        }
        kretry_workers_submit(a, part, rkm);
}

void kretry_dispatch(kretry_adapter_t *a,
                     kretry_part_t *part,
                     rd_kafka_message_t *rkm) {
        /* A held message whose offset could not be tracked (out of memory)
         * starts over; any other was tracked when it was consumed. */
        if (kretry_offsets_pending(&part->offsets, rkm->offset))
                kretry_workers_submit(a, part, rkm);
        else
                admit(a, part, rkm);
}

void kretry_count_consumed(kretry_adapter_t *a,
                           kretry_part_t *part,
                           const rd_kafka_message_t *rkm) {
        atomic_fetch_add_explicit(&a->stats.consumed, 1, memory_order_relaxed);
        a->topic_consumed[part->tier]++;
        if (part->tier == 0 && part->src_next >= 0 &&
            rkm->offset >= part->src_next)
                part->src_next = rkm->offset + 1;
}

void kretry_process(kretry_adapter_t *a,
                    kretry_part_t *part,
                    rd_kafka_message_t *rkm) {
        kretry_count_consumed(a, part, rkm);
        admit(a, part, rkm);
}

static void count_route(kretry_adapter_t *a, const kretry_inflight_t *r) {
        switch (r->route) {
        case KRETRY_ROUTE_RETRY:
                atomic_fetch_add_explicit(&a->stats.retried[r->dest], 1,
                                          memory_order_relaxed);
                break;
        case KRETRY_ROUTE_PARKED:
                atomic_fetch_add_explicit(&a->stats.forwarded, 1,
                                          memory_order_relaxed);
                break;
        case KRETRY_ROUTE_DLQ:
        case KRETRY_ROUTE_INVALID:
                atomic_fetch_add_explicit(&a->stats.dlq, 1,
                                          memory_order_relaxed);
                for (int c = 0; c < KRETRY_CLASS_CNT; c++)
                        if (!strcmp(r->info.error_class, kretry_class_name(c)))
                                atomic_fetch_add_explicit(
                                        &a->stats.dlq_by_class[c], 1,
                                        memory_order_relaxed);
                break;
        default: /* OK once its version is durable: counted when handled */
                break;
        }
}

void kretry_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
        (void)rk;
        kretry_adapter_t *a  = opaque;
        kretry_inflight_t *r = m->_private;
        a->inflight--;
        if ((void *)r == &unpark_tag) {
                /* A park record's tombstone (kretry_route_unpark): one that
                 * timed out (after message.timeout.ms: no busy loop) is
                 * produced again, still counted; any other failure is
                 * said. Purged (a close) or in an aborted transaction,
                 * the replay's offset is not committed either, and the
                 * replay lifts the park again. */
                rd_kafka_resp_err_t err = m->err;
                int purged = err == RD_KAFKA_RESP_ERR__PURGE_QUEUE ||
                             err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT;
                int again =
                        err == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT && !a->txn.on;
                if (again && !kretry_producer_fatal(a) &&
                    !(err = send_unpark(a, m->partition, m->key, m->key_len))) {
                        a->inflight++;
                        return;
                }
                a->unparks--;
                if (err && !purged && !a->txn.on)
                        unpark_lost(a, m->partition, err);
                return;
        }
        if (a->txn.on && (m->err || a->txn.aborting)) {
                /* A copy of an aborted transaction: decided again. */
                if (m->err)
                        kretry_txn_copy_failed(a, r, m->err);
                else
                        kretry_inflight_free(a, r);
                return;
        }
        if (m->err) {
                fail_record(a, r, m->err);
                return;
        }
        if (r->park_first) {
                /* The park is durable: now the DLQ copy, the same record
                 * (its offset completes with the copy). */
                r->park_first = 0;
                send_copy(a, r);
                return;
        }
        kretry_part_t *part = r->part;
        if (r->failed && part->assigned) {
                part->produce_failures--;
                part->too_large_logged &= part->produce_failures > 0;
                kretry_part_update_pause(a, part);
        }
        count_route(a, r);
        kretry_route_cb(a, part, r->rkm, r->route, r->dest > 0 ? r->dest : 0,
                        r->info.error_class, r->handler_attempt);
        kretry_complete(a, part, r->rkm->offset);
        kretry_inflight_free(a, r);
}

int64_t kretry_retry_failed(kretry_adapter_t *a, int64_t now) {
        kretry_inflight_t *list = a->failed, *r;
        int64_t wait            = -1;
        if (a->producer_fatal)
                return -1; /* nothing can be produced any more */
        a->failed = NULL;
        while ((r = list)) {
                list = r->next_failed;
                if (!r->part->assigned) {
                        /* Revoked: the new owner consumes it again. */
                        kretry_inflight_free(a, r);
                        continue;
                }
                if (r->retry_at > now) {
                        r->next_failed = a->failed;
                        a->failed      = r;
                        if (wait < 0 || r->retry_at - now < wait)
                                wait = r->retry_at - now;
                        continue;
                }
                send_copy(a, r);
        }
        return wait;
}
