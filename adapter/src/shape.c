/* Leaf: a chain's expected shape on the cluster. */
#include "shape.h"

#include <stdio.h>

/* What to run, in the words of the message: the file when it is known. */
static void fix_text(const kretry_shape_t *s, char *buf, size_t size) {
        if (s->file && *s->file)
                snprintf(buf, size, "run `kretry topology apply %s`", s->file);
        else
                snprintf(buf, size,
                         "run `kretry topology apply FILE` with a topology "
                         "file that declares it");
}

/* One topic of the chain: it exists with at least @p need partitions. */
static void check_topic(const kretry_shape_t *s,
                        const kretry_meta_t *meta,
                        const char *role,
                        const char *topic,
                        int need,
                        kretry_diags_t *d) {
        char fix[400];
        fix_text(s, fix, sizeof(fix));
        const kretry_meta_topic_t *m = kretry_meta_find(meta, topic);
        if (!m && topic == s->source)
                kretry_diag_add(d, KRETRY_DIAG_ERROR, 0, 0,
                                "%s topic %s does not exist: create it, or "
                                "declare topics.partitions and %s",
                                role, topic, fix);
        else if (!m)
                kretry_diag_add(d, KRETRY_DIAG_ERROR, 0, 0,
                                "%s topic %s does not exist: %s before "
                                "starting (a producer could make the broker "
                                "create it with its default partitions and "
                                "cleanup)",
                                role, topic, fix);
        else if (need > 0 && m->partitions < need)
                kretry_diag_add(d, KRETRY_DIAG_ERROR, 0, 0,
                                "%s topic %s has %d partition%s, fewer than "
                                "the source %s (%d): copies from source "
                                "partitions %d..%d could not be written; %s "
                                "to add partitions",
                                role, topic, m->partitions,
                                m->partitions == 1 ? "" : "s", s->source, need,
                                m->partitions, need - 1, fix);
}

/* A tier or the DLQ takes what the source does, plus kretry's headers:
 * otherwise a copy of a message near the source's limit is refused and its
 * partition waits until the limit is raised. A warning: only messages near
 * the limit are concerned, and the limits may be unknown. */
static void check_size(const kretry_shape_t *s,
                       const kretry_meta_t *meta,
                       const char *role,
                       const char *topic,
                       kretry_diags_t *d) {
        const kretry_meta_topic_t *src = kretry_meta_find(meta, s->source);
        const kretry_meta_topic_t *m   = kretry_meta_find(meta, topic);
        char fix[400];
        if (!src || !m || src->max_message_bytes <= 0 ||
            m->max_message_bytes < 0 ||
            m->max_message_bytes >=
                    src->max_message_bytes + KRETRY_COPY_HEADROOM)
                return;
        fix_text(s, fix, sizeof(fix));
        kretry_diag_add(d, KRETRY_DIAG_WARNING, 0, 0,
                        "%s topic %s takes messages up to %lld bytes, the "
                        "source %s up to %lld: a copy of a message near the "
                        "source's limit, with kretry's headers, would be "
                        "refused and its partition wait; %s",
                        role, topic, (long long)m->max_message_bytes, s->source,
                        (long long)src->max_message_bytes, fix);
}

/* A compacted topic of the group's own: @p role (the version changelog,
 * the parked keys; @p label in the compaction's messages) named @p name,
 * keeping @p what. */
static void check_compacted(const kretry_shape_t *s,
                            const kretry_meta_t *meta,
                            int need,
                            const char *role,
                            const char *label,
                            const char *name,
                            const char *what,
                            kretry_diags_t *d) {
        check_topic(s, meta, role, name, need, d);
        const kretry_meta_topic_t *m = kretry_meta_find(meta, name);
        char fix[400];
        fix_text(s, fix, sizeof(fix));
        if (!m)
                return;
        if (m->compact == 0)
                kretry_diag_add(d, KRETRY_DIAG_ERROR, 0, 0,
                                "%s %s is not compacted: its "
                                "cleanup.policy must be compact, or "
                                "retention deletes the %s it stores; "
                                "%s",
                                label, name, what, fix);
        else if (m->compact < 0)
                kretry_diag_add(d, KRETRY_DIAG_WARNING, 0, 0,
                                "cannot tell whether %s %s is "
                                "compacted: the cluster did not answer "
                                "DescribeConfigs (librdkafka's mock cluster "
                                "cannot); make sure its cleanup.policy is "
                                "compact",
                                label, name);
}

int kretry_shape_check(const kretry_shape_t *s,
                       const kretry_meta_t *meta,
                       kretry_diags_t *d) {
        int before                     = d->errors;
        const kretry_meta_topic_t *src = kretry_meta_find(meta, s->source);
        int need                       = src ? src->partitions : 0;
        if (!src)
                check_topic(s, meta, "source", s->source, 0, d);
        for (int n = 0; n < s->tier_cnt; n++) {
                char role[32];
                snprintf(role, sizeof(role), "tier %d", n + 1);
                check_topic(s, meta, role, s->tiers[n], need, d);
                check_size(s, meta, role, s->tiers[n], d);
        }
        check_topic(s, meta, "DLQ", s->dlq, need, d);
        check_size(s, meta, "DLQ", s->dlq, d);
        if (s->changelog)
                check_compacted(s, meta, need, "version changelog",
                                "version changelog", s->changelog, "versions",
                                d);
        if (s->parked)
                check_compacted(s, meta, need, "parked-keys",
                                "parked-keys topic", s->parked, "parked keys",
                                d);
        return d->errors - before;
}
