#include "plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *kretry_plan_op_name(kretry_plan_op_t op) {
        static const char *names[] = {"create", "add partitions",
                                      "alter config", "unknown", "conflict"};
        return names[op];
}

void kretry_plan_clear(kretry_plan_t *plan) {
        free(plan->actions);
        memset(plan, 0, sizeof(*plan));
}

static int planned(const kretry_plan_t *plan, const char *topic) {
        for (size_t i = 0; i < plan->cnt; i++)
                if (!strcmp(plan->actions[i].topic, topic) &&
                    plan->actions[i].op != KRETRY_PLAN_CONFLICT)
                        return 1;
        return 0;
}

static kretry_plan_action_t *push(kretry_plan_t *plan,
                                  kretry_plan_op_t op,
                                  const kretry_topology_t *t,
                                  const char *topic,
                                  const char *role) {
        if (plan->cnt == plan->size) {
                size_t size = plan->size ? plan->size * 2 : 16;
                void *p = realloc(plan->actions, size * sizeof(*plan->actions));
                if (!p)
                        return NULL;
                plan->actions = p;
                plan->size    = size;
        }
        kretry_plan_action_t *a = &plan->actions[plan->cnt++];
        memset(a, 0, sizeof(*a));
        a->op       = op;
        a->topology = t->name;
        snprintf(a->topic, sizeof(a->topic), "%s", topic);
        snprintf(a->role, sizeof(a->role), "%s", role);
        if (op == KRETRY_PLAN_CONFLICT)
                plan->conflicts++;
        else if (op != KRETRY_PLAN_UNKNOWN)
                plan->changes++;
        return a;
}

static int note(kretry_plan_t *plan,
                kretry_plan_op_t op,
                const kretry_topology_t *t,
                const char *topic,
                const char *role,
                const char *fmt,
                ...) __attribute__((format(printf, 6, 7)));
static int note(kretry_plan_t *plan,
                kretry_plan_op_t op,
                const kretry_topology_t *t,
                const char *topic,
                const char *role,
                const char *fmt,
                ...) {
        kretry_plan_action_t *a = push(plan, op, t, topic, role);
        if (!a)
                return -1;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(a->reason, sizeof(a->reason), fmt, ap);
        va_end(ap);
        return 0;
}

/* min.insync.replicas for a topic of @p replication replicas: the declared
 * value, else min(2, replication) (with 3 replicas and the broker's default
 * of 1, acks=all would be met by the leader alone); 0 when unknown. */
static int want_min_insync(const kretry_topology_t *t, int replication) {
        if (t->min_insync)
                return t->min_insync;
        return replication > 2 ? 2 : replication;
}

/* max.message.bytes of a tier or the DLQ: the source's plus the headroom
 * of a copy's headers; 0 when the source's is unknown. */
static int64_t want_max_bytes(const kretry_topology_t *t,
                              const kretry_meta_t *meta) {
        const kretry_meta_topic_t *src = kretry_meta_find(meta, t->source);
        return src && src->max_message_bytes > 0
                       ? src->max_message_bytes + KRETRY_COPY_HEADROOM
                       : 0;
}

/* An existing topic's configuration: retention.ms as declared (@p retention,
 * 0: not declared), min.insync.replicas and max.message.bytes (@p max_bytes,
 * 0: none) raised to what the guarantees need — never lowered, unless
 * min_insync_replicas is declared — and a changelog (@p changelog) that is
 * not compacted made compact (delete cleanup would expire the versions).
 * One ALTER_CONFIG for all of them. */
static int plan_configs(kretry_plan_t *plan,
                        const kretry_topology_t *t,
                        const kretry_meta_topic_t *m,
                        const char *role,
                        int64_t retention,
                        int64_t max_bytes,
                        int changelog) {
        kretry_plan_action_t c = {0};
        c.compact              = changelog && m->compact == 0;
        if (retention && m->retention_ms != retention) {
                if (m->retention_ms < 0)
                        return note(plan, KRETRY_PLAN_UNKNOWN, t, m->name, role,
                                    "its retention.ms is unknown (the cluster "
                                    "did not answer DescribeConfigs)");
                c.retention_ms         = retention;
                c.current_retention_ms = m->retention_ms;
        }
        int insync = want_min_insync(t, m->replication);
        if (insync && m->min_insync >= 0 &&
            (t->min_insync ? m->min_insync != insync
                           : m->min_insync < insync)) {
                c.min_insync         = insync;
                c.current_min_insync = m->min_insync;
        }
        if (max_bytes && m->max_message_bytes >= 0 &&
            m->max_message_bytes < max_bytes) {
                c.max_message_bytes         = max_bytes;
                c.current_max_message_bytes = m->max_message_bytes;
        }
        if (!c.retention_ms && !c.min_insync && !c.max_message_bytes &&
            !c.compact)
                return 0;
        kretry_plan_action_t *a =
                push(plan, KRETRY_PLAN_ALTER_CONFIG, t, m->name, role);
        if (!a)
                return -1;
        a->retention_ms              = c.retention_ms;
        a->current_retention_ms      = c.current_retention_ms;
        a->min_insync                = c.min_insync;
        a->current_min_insync        = c.current_min_insync;
        a->max_message_bytes         = c.max_message_bytes;
        a->current_max_message_bytes = c.current_max_message_bytes;
        a->compact                   = c.compact;
        return 0;
}

/* A tier, the DLQ or the changelog (@p changelog): create it, grow it, or
 * bring its configuration in line. */
static int plan_topic(kretry_plan_t *plan,
                      const kretry_topology_t *t,
                      const kretry_meta_t *meta,
                      const char *topic,
                      const char *role,
                      int partitions,
                      int changelog) {
        if (planned(plan, topic))
                return 0; /* shared with an earlier topology */
        const kretry_meta_topic_t *m = kretry_meta_find(meta, topic);
        int64_t max_bytes            = changelog ? 0 : want_max_bytes(t, meta);
        kretry_plan_action_t *a;
        if (!m) {
                if (!(a = push(plan, KRETRY_PLAN_CREATE, t, topic, role)))
                        return -1;
                a->partitions        = partitions;
                a->replication       = t->replication;
                a->retention_ms      = changelog ? 0 : t->retention_ms;
                a->compact           = changelog;
                a->min_insync        = want_min_insync(t, t->replication);
                a->max_message_bytes = max_bytes;
                return 0;
        }
        if (m->partitions < partitions) {
                if (!(a = push(plan, KRETRY_PLAN_ADD_PARTITIONS, t, topic,
                               role)))
                        return -1;
                a->partitions         = partitions;
                a->current_partitions = m->partitions;
        }
        /* The changelog: compaction, not retention, bounds it. */
        return plan_configs(plan, t, m, role, changelog ? 0 : t->retention_ms,
                            max_bytes, changelog);
}

/* The partition count of the chain, or 0 after recording a conflict. */
static int chain_partitions(kretry_plan_t *plan,
                            const kretry_topology_t *t,
                            const kretry_meta_t *meta,
                            int *rc) {
        const kretry_meta_topic_t *src = kretry_meta_find(meta, t->source);
        if (src && t->partitions && t->partitions < src->partitions) {
                *rc = note(plan, KRETRY_PLAN_CONFLICT, t, t->source, "source",
                           "topics.partitions is %d but the source has %d "
                           "partitions: every tier and the DLQ need at least "
                           "the source's count (tier partitions follow their "
                           "source partition)",
                           t->partitions, src->partitions);
                return 0;
        }
        if (src)
                return t->partitions ? t->partitions : src->partitions;
        if (!t->partitions) {
                *rc = note(plan, KRETRY_PLAN_CONFLICT, t, t->source, "source",
                           "the source topic does not exist and "
                           "topics.partitions is not declared: nothing "
                           "tells how many partitions the chain needs");
                return 0;
        }
        if (planned(plan, t->source))
                return t->partitions;
        kretry_plan_action_t *a =
                push(plan, KRETRY_PLAN_CREATE, t, t->source, "source");
        if (!a) {
                *rc = -1;
                return 0;
        }
        /* The source keeps the cluster's retention: it is not kretry's. */
        a->partitions  = t->partitions;
        a->replication = t->replication;
        return t->partitions;
}

/* versioning: the compacted changelog of the version store, co-partitioned
 * with the source. */
static int plan_versions_topic(kretry_plan_t *plan,
                               const kretry_topology_t *t,
                               const kretry_meta_t *meta,
                               int partitions) {
        char topic[256];
        if (t->versioning == KRETRY_VERSIONING_NONE ||
            kretry_topology_versions_topic(t, topic, sizeof(topic)))
                return 0;
        return plan_topic(plan, t, meta, topic, "versions", partitions, 1);
}

/* park_key: the compacted topic of the parked keys, co-partitioned with the
 * source, in the changelog's shape. */
static int plan_parked_topic(kretry_plan_t *plan,
                             const kretry_topology_t *t,
                             const kretry_meta_t *meta,
                             int partitions) {
        char topic[256];
        if (!kretry_topology_parks(t) ||
            kretry_topology_parked_topic(t, topic, sizeof(topic)))
                return 0;
        return plan_topic(plan, t, meta, topic, "parked", partitions, 1);
}

static int plan_topology(kretry_plan_t *plan,
                         const kretry_topology_t *t,
                         const kretry_meta_t *meta) {
        int rc         = 0;
        int partitions = chain_partitions(plan, t, meta, &rc);
        if (!partitions)
                return rc;
        for (int n = 0; n < t->tier_cnt; n++) {
                char role[32];
                snprintf(role, sizeof(role), "tier %d", n + 1);
                if (plan_topic(plan, t, meta, t->tier_topics[n], role,
                               partitions, 0))
                        return -1;
        }
        if (plan_topic(plan, t, meta, t->dlq, "dlq", partitions, 0))
                return -1;
        if (plan_versions_topic(plan, t, meta, partitions))
                return -1;
        return plan_parked_topic(plan, t, meta, partitions);
}

int kretry_plan_compute(const kretry_topology_t *topos,
                        size_t cnt,
                        const kretry_meta_t *meta,
                        kretry_plan_t *plan) {
        for (size_t i = 0; i < cnt; i++)
                if (plan_topology(plan, &topos[i], meta))
                        return -1;
        return 0;
}
