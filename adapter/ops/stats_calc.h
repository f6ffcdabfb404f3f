/*
 * kretry stats, the figures without the cluster: what waits for a group on
 * each topic of a topology, how old the oldest waiting message is, the
 * arrival and consume rates between two snapshots, the drain estimate, the
 * topology's alert rules, and the rendering as a table, JSON or Prometheus
 * text. cmd_stats.c reads offsets and timestamps from Kafka and hands them
 * here; nothing in this module does I/O other than writing to a FILE.
 *
 * Where a partition's waiting messages start: the group's committed offset,
 * or the low watermark when the group has none there (the group would read
 * everything retained: kretry consumes with auto.offset.reset=earliest),
 * clamped to [low, high]. Waiting = high watermark - start, or 0 when a
 * read_committed reader finds no record there (transaction markers, see
 * stats_part_t.rest_unreadable). Nobody consumes
 * a DLQ: there the caller passes kretry dlq replay's progress as the
 * committed offset where the group has none (stats_kafka.h), so that what a
 * replay went past stops counting; without either, all of it counts.
 */
#ifndef KRETRY_CLI_STATS_CALC_H
#define KRETRY_CLI_STATS_CALC_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
        STATS_ROLE_SOURCE,
        STATS_ROLE_TIER,
        STATS_ROLE_DLQ
} stats_role_t;

/* One partition at one moment; -1 where the cluster did not answer. */
/* Why a partition's copies cannot be delivered (the adapter's commit
 * mark): too large for their topic, or refused for want of an ACL. */
typedef enum {
        STATS_STUCK_TOO_LARGE,
        STATS_STUCK_DENIED,
        STATS_STUCK_CAUSES
} stats_stuck_t;

typedef struct {
        int64_t low, high;
        int64_t committed; /* -1: the group has no committed offset */
        int committed_ok;  /* the committed offset (or its absence) is known */
        /* A read_committed reader assigned at the start found no record
         * before the end: what lies there is transaction markers (a commit
         * marker follows a transaction's last record, and the group's
         * offset stops before it), aborted records or an open
         * transaction's — nothing the group can read yet. Waiting: 0. */
        int rest_unreadable;
        /* The adapter's mark on the commit (KRETRY_TOO_LARGE_METADATA,
         * KRETRY_DENIED_METADATA): a copy from this partition is refused,
         * as too large or for want of an ACL, by this topic; "" when none. */
        char stuck_by[STATS_STUCK_CAUSES][256];
} stats_part_t;

typedef enum {
        STATS_DRAIN_UNKNOWN, /* no rates (--window 0, or not answered) */
        STATS_DRAIN_SECONDS, /* drain_s holds the estimate; 0 when empty */
        STATS_DRAIN_NEVER    /* arrival >= consume with messages waiting */
} stats_drain_t;

/* The figures of one topic. */
typedef struct {
        char topic[256];
        stats_role_t role;
        int tier;             /* 1-based for a tier, 0 otherwise */
        int64_t allowance_ms; /* a tier's delay at +jitter: expected age */
        int partitions;       /* -1 unknown */
        int waiting_ok;
        int64_t waiting;
        int oldest_ok;         /* oldest_ts and oldest_age_ms are known */
        int64_t oldest_ts;     /* -1 when nothing waits */
        int64_t oldest_age_ms; /* 0 when nothing waits */
        int rates_ok;
        double arrival_rate, consume_rate; /* messages per second */
        stats_drain_t drain;
        double drain_s;
        char error[512]; /* what the cluster could not answer, "" if all */
        /* Partitions whose copies the broker refuses, as too large or for
         * want of an ACL (the adapter's commit mark), the first of them
         * and its destination, by cause. */
        int stuck_parts[STATS_STUCK_CAUSES];
        int stuck_first[STATS_STUCK_CAUSES];
        char stuck_by[STATS_STUCK_CAUSES][256];
} stats_topic_t;

/* The thresholds of a topology's alerts: block. */
typedef struct {
        int64_t dlq_messages;  /* -1: none */
        int64_t oldest_age_ms; /* 0: none */
        int64_t dlq_rate;      /* messages a minute into the DLQ, 0: none */
} stats_limits_t;

typedef enum {
        STATS_ALERT_FIRING,  /* the threshold holds */
        STATS_ALERT_UNKNOWN, /* a figure it needs is unknown */
        STATS_ALERT_OK       /* evaluated, does not hold */
} stats_alert_state_t;

typedef struct {
        const char *rule; /* "dlq_messages", "dlq_rate", "oldest_age" or
                             "copy_too_large", "copy_denied" (always
                             evaluated) */
        char topic[256];
        stats_alert_state_t state;
        int64_t value, limit; /* messages, ms, or messages a minute */
        char text[768];
} stats_alert_t;

#define STATS_MAX_ALERTS 80

typedef struct {
        const char *topology, *group;
        int64_t at_ms;     /* when the figures were taken (epoch ms) */
        int64_t window_ms; /* 0: no rates */
        stats_topic_t *topics;
        size_t topic_cnt;
        stats_limits_t limits;
        stats_alert_t alerts[STATS_MAX_ALERTS];
        size_t alert_cnt;
} stats_report_t;

/* A tier's expected age of a waiting message: its delay at +jitter,
 * rounded up to the millisecond. */
int64_t stats_tier_allowance_ms(int64_t delay_ms, double jitter);

/* First waiting offset of a partition (see above); -1 when unknown. */
int64_t stats_part_start(const stats_part_t *p);

/* Waiting messages of one partition; -1 when unknown. */
int64_t stats_part_waiting(const stats_part_t *p);

/* Reads a committed offset's metadata (@p md, @p len bytes) into @p p:
 * the destination when it is the adapter's too-large mark. */
void stats_part_metadata(stats_part_t *p, const void *md, size_t len);

/* Sets t->waiting (and waiting_ok) from @p parts, the latest snapshot. */
void stats_topic_depth(stats_topic_t *t, const stats_part_t *parts, int cnt);

/*
 * Sets the oldest figures: @p oldest_ts is the earliest timestamp among the
 * messages at the partitions' starts, -1 when nothing waits. A timestamp
 * after @p now_ms (clock skew) counts as age 0.
 */
void stats_topic_oldest(stats_topic_t *t, int64_t oldest_ts, int64_t now_ms);

/*
 * Sets the rates and the drain estimate from two snapshots @p window_ms
 * apart: arrival from the high watermarks, consumption from the starts (the
 * committed offsets). Needs t->waiting; leaves both unknown when any
 * figure is. A window of 0 leaves them unknown.
 */
void stats_topic_rates(stats_topic_t *t,
                       const stats_part_t *before,
                       const stats_part_t *after,
                       int cnt,
                       int64_t window_ms);

/* depth / (consume - arrival): STATS_DRAIN_SECONDS with *@p secs (0 for an
 * empty topic), or STATS_DRAIN_NEVER when arrival >= consume. */
stats_drain_t
stats_drain(int64_t waiting, double consume, double arrival, double *secs);

/*
 * Evaluate the limits on the topics into r->alerts:
 *   dlq_messages: the DLQ holds >= limit waiting messages;
 *   dlq_rate:     messages arrive in the DLQ at >= limit a minute (the
 *                 arrival rate over the window; unknown without rates);
 *   oldest_age:   the source's oldest waiting message is older than the
 *                 limit, or a tier's is older than its allowance (its delay
 *                 at +jitter) plus the limit. Strictly older: an age equal
 *                 to the limit does not alert. The DLQ is left to
 *                 dlq_messages.
 * Returns the number of firing alerts.
 */
int stats_evaluate(stats_report_t *r);

/* Number of alerts in state @p s. */
int stats_alert_count(const stats_report_t *r, stats_alert_state_t s);

void stats_render_table(FILE *out, const stats_report_t *r);

/* The report as one JSON object (free with json_decref()). */
json_t *stats_report_json(const stats_report_t *r);

/* Prometheus text exposition format, HELP and TYPE lines included; unknown
 * figures are left out, "never" drains are +Inf. */
void stats_render_prometheus(FILE *out, const stats_report_t *r);

/* The same for @p n reports (the topologies of one file) in one
 * exposition: each metric's HELP and TYPE once, its samples from every
 * report under it. */
void stats_render_prometheus_many(FILE *out,
                                  const stats_report_t *const *rs,
                                  size_t n);

/* "source", "tier" or "dlq". */
const char *stats_role_name(stats_role_t role);

#endif
