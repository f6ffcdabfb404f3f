#include "stats_calc.h"

#include "headers.h" /* KRETRY_TOO_LARGE_METADATA, KRETRY_DENIED_METADATA */
#include "ops_time.h"
#include "topology.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

const char *stats_role_name(stats_role_t role) {
        return role == STATS_ROLE_SOURCE ? "source"
               : role == STATS_ROLE_TIER ? "tier"
                                         : "dlq";
}

int64_t stats_tier_allowance_ms(int64_t delay_ms, double jitter) {
        /* 1e-6: 70000 x 0.07 is 4900.000000000001 in binary */
        return delay_ms + (int64_t)ceil((double)delay_ms * jitter - 1e-6);
}

int64_t stats_part_start(const stats_part_t *p) {
        if (p->low < 0 || p->high < 0 || !p->committed_ok)
                return -1;
        int64_t s = p->committed >= 0 ? p->committed : p->low;
        if (s < p->low)
                s = p->low; /* committed before what retention kept */
        if (s > p->high)
                s = p->high;
        return s;
}

int64_t stats_part_waiting(const stats_part_t *p) {
        int64_t s = stats_part_start(p);
        return s < 0 ? -1 : p->rest_unreadable ? 0 : p->high - s;
}

void stats_part_metadata(stats_part_t *p, const void *md, size_t len) {
        static const char *const marks[STATS_STUCK_CAUSES] = {
                KRETRY_TOO_LARGE_METADATA, KRETRY_DENIED_METADATA};
        for (int c = 0; c < STATS_STUCK_CAUSES; c++) {
                size_t plen       = strlen(marks[c]);
                p->stuck_by[c][0] = '\0';
                if (md && len > plen && !memcmp(md, marks[c], plen))
                        snprintf(p->stuck_by[c], sizeof(p->stuck_by[c]), "%.*s",
                                 (int)(len - plen), (const char *)md + plen);
        }
}

void stats_topic_depth(stats_topic_t *t, const stats_part_t *parts, int cnt) {
        t->waiting_ok = cnt >= 0;
        t->waiting    = 0;
        for (int c = 0; c < STATS_STUCK_CAUSES; c++)
                t->stuck_parts[c] = 0;
        for (int i = 0; i < cnt; i++) {
                for (int c = 0; c < STATS_STUCK_CAUSES; c++)
                        if (parts[i].stuck_by[c][0] && !t->stuck_parts[c]++) {
                                t->stuck_first[c] = i;
                                snprintf(t->stuck_by[c], sizeof(t->stuck_by[c]),
                                         "%s", parts[i].stuck_by[c]);
                        }
                int64_t w = stats_part_waiting(&parts[i]);
                if (w < 0)
                        t->waiting_ok = 0;
                else
                        t->waiting += w;
        }
        if (!t->waiting_ok)
                t->waiting = -1;
}

void stats_topic_oldest(stats_topic_t *t, int64_t oldest_ts, int64_t now_ms) {
        t->oldest_ok     = 1;
        t->oldest_ts     = oldest_ts;
        t->oldest_age_ms = 0;
        if (oldest_ts >= 0 && now_ms > oldest_ts)
                t->oldest_age_ms = now_ms - oldest_ts;
}

stats_drain_t
stats_drain(int64_t waiting, double consume, double arrival, double *secs) {
        *secs = 0;
        if (waiting <= 0)
                return STATS_DRAIN_SECONDS;
        if (arrival >= consume)
                return STATS_DRAIN_NEVER;
        *secs = (double)waiting / (consume - arrival);
        return STATS_DRAIN_SECONDS;
}

void stats_topic_rates(stats_topic_t *t,
                       const stats_part_t *before,
                       const stats_part_t *after,
                       int cnt,
                       int64_t window_ms) {
        int64_t arrived = 0, consumed = 0;
        t->rates_ok = 0;
        t->drain    = STATS_DRAIN_UNKNOWN;
        if (window_ms <= 0 || !t->waiting_ok || cnt < 0)
                return;
        for (int i = 0; i < cnt; i++) {
                int64_t s0 = stats_part_start(&before[i]);
                int64_t s1 = stats_part_start(&after[i]);
                if (s0 < 0 || s1 < 0)
                        return;
                /* An offset moved back (a reset) is no negative work. */
                if (after[i].high > before[i].high)
                        arrived += after[i].high - before[i].high;
                if (s1 > s0)
                        consumed += s1 - s0;
        }
        t->rates_ok     = 1;
        t->arrival_rate = (double)arrived * 1000.0 / (double)window_ms;
        t->consume_rate = (double)consumed * 1000.0 / (double)window_ms;
        t->drain = stats_drain(t->waiting, t->consume_rate, t->arrival_rate,
                               &t->drain_s);
}

/* An age for people: whole seconds from one second on. */
static void age_text(int64_t ms, char *dest, size_t size) {
        kretry_topology_format_duration(ms >= 1000 ? ms - ms % 1000 : ms, dest,
                                        size);
}

static stats_alert_t *
alert_add(stats_report_t *r, const char *rule, const stats_topic_t *t) {
        if (r->alert_cnt >= STATS_MAX_ALERTS)
                return NULL;
        stats_alert_t *a = &r->alerts[r->alert_cnt++];
        memset(a, 0, sizeof(*a));
        a->rule = rule;
        snprintf(a->topic, sizeof(a->topic), "%s", t->topic);
        return a;
}

static void eval_dlq(stats_report_t *r, const stats_topic_t *t) {
        stats_alert_t *a = alert_add(r, "dlq_messages", t);
        if (!a)
                return;
        a->limit = r->limits.dlq_messages;
        a->value = t->waiting;
        if (!t->waiting_ok) {
                a->state = STATS_ALERT_UNKNOWN;
                snprintf(a->text, sizeof(a->text),
                         "dlq_messages: cannot tell how many messages %s "
                         "holds (limit %lld)",
                         t->topic, (long long)a->limit);
                return;
        }
        a->state = t->waiting >= a->limit ? STATS_ALERT_FIRING : STATS_ALERT_OK;
        snprintf(a->text, sizeof(a->text),
                 "dlq_messages: %s holds %lld message%s (limit %lld)", t->topic,
                 (long long)t->waiting, t->waiting == 1 ? "" : "s",
                 (long long)a->limit);
}

static void eval_dlq_rate(stats_report_t *r, const stats_topic_t *t) {
        stats_alert_t *a = alert_add(r, "dlq_rate", t);
        if (!a)
                return;
        a->limit = r->limits.dlq_rate;
        if (!t->rates_ok) {
                a->state = STATS_ALERT_UNKNOWN;
                snprintf(a->text, sizeof(a->text),
                         "dlq_rate: cannot tell how fast messages arrive in "
                         "%s (%s; limit %lld a minute)",
                         t->topic,
                         r->window_ms ? "not answered" : "no rates: --window 0",
                         (long long)a->limit);
                return;
        }
        double per_min = t->arrival_rate * 60.0;
        a->value       = (int64_t)llround(per_min);
        a->state       = per_min >= (double)a->limit ? STATS_ALERT_FIRING
                                                     : STATS_ALERT_OK;
        snprintf(a->text, sizeof(a->text),
                 "dlq_rate: %s receives %.1f messages a minute (limit %lld)",
                 t->topic, per_min, (long long)a->limit);
}

static void eval_age(stats_report_t *r, const stats_topic_t *t) {
        stats_alert_t *a = alert_add(r, "oldest_age", t);
        char age[32], lim[32], allow[32];
        if (!a)
                return;
        a->limit = r->limits.oldest_age_ms + t->allowance_ms;
        a->value = t->oldest_age_ms;
        kretry_topology_format_duration(r->limits.oldest_age_ms, lim,
                                        sizeof(lim));
        kretry_topology_format_duration(t->allowance_ms, allow, sizeof(allow));
        if (!t->oldest_ok) {
                a->state = STATS_ALERT_UNKNOWN;
                snprintf(a->text, sizeof(a->text),
                         "oldest_age: cannot tell the age of %s's oldest "
                         "waiting message (limit %s)",
                         t->topic, lim);
                return;
        }
        age_text(t->oldest_age_ms, age, sizeof(age));
        a->state = t->oldest_age_ms > a->limit ? STATS_ALERT_FIRING
                                               : STATS_ALERT_OK;
        if (t->oldest_ts < 0)
                snprintf(age, sizeof(age), "nothing waits");
        else
                snprintf(age + strlen(age), sizeof(age) - strlen(age), " old");
        if (t->role == STATS_ROLE_TIER)
                snprintf(a->text, sizeof(a->text),
                         "oldest_age: %s: %s (limit %s past the tier's %s "
                         "delay at +jitter)",
                         t->topic, age, lim, allow);
        else
                snprintf(a->text, sizeof(a->text),
                         "oldest_age: %s: %s (limit %s)", t->topic, age, lim);
}

/* Not a threshold: a partition whose copies the broker refuses as too large
 * is stuck until an operator raises the destination's max.message.bytes,
 * one refused for want of an ACL until Write on it is granted, so they
 * always alert. */
static void eval_stuck(stats_report_t *r, const stats_topic_t *t, int c) {
        static const char *const names[STATS_STUCK_CAUSES] = {"copy_too_large",
                                                              "copy_denied"};
        /* What the destination refuses, and the fix around its name. */
        static const char *const why[STATS_STUCK_CAUSES][3] = {
                {"as too large", "raise max.message.bytes of ", ""},
                {"for want of an ACL", "grant Write on ",
                 " to the service's principal"}};
        stats_alert_t *a = alert_add(r, names[c], t);
        if (!a)
                return;
        a->state = STATS_ALERT_FIRING;
        a->value = t->stuck_parts[c];
        snprintf(a->text, sizeof(a->text),
                 "%s: %.160s [%d]%s is stuck: %.160s refuses its copy %s; "
                 "%s%.160s%s",
                 names[c], t->topic, t->stuck_first[c],
                 t->stuck_parts[c] > 1 ? " and others" : "", t->stuck_by[c],
                 why[c][0], why[c][1], t->stuck_by[c], why[c][2]);
}

int stats_evaluate(stats_report_t *r) {
        r->alert_cnt = 0;
        for (size_t i = 0; i < r->topic_cnt; i++) {
                const stats_topic_t *t = &r->topics[i];
                for (int c = 0; c < STATS_STUCK_CAUSES; c++)
                        if (t->stuck_parts[c])
                                eval_stuck(r, t, c);
                if (t->role == STATS_ROLE_DLQ && r->limits.dlq_messages >= 0)
                        eval_dlq(r, t);
                if (t->role == STATS_ROLE_DLQ && r->limits.dlq_rate > 0)
                        eval_dlq_rate(r, t);
                if (t->role != STATS_ROLE_DLQ && r->limits.oldest_age_ms > 0)
                        eval_age(r, t);
        }
        return stats_alert_count(r, STATS_ALERT_FIRING);
}

int stats_alert_count(const stats_report_t *r, stats_alert_state_t s) {
        int n = 0;
        for (size_t i = 0; i < r->alert_cnt; i++)
                n += r->alerts[i].state == s;
        return n;
}

/* ---- table ---- */

static void rate_cell(const stats_topic_t *t, double v, char *d, size_t n) {
        if (t->rates_ok)
                snprintf(d, n, "%.2f", v);
        else
                snprintf(d, n, "-");
}

static void drain_cell(const stats_topic_t *t, char *d, size_t n) {
        if (t->drain == STATS_DRAIN_NEVER)
                snprintf(d, n, "never");
        else if (t->drain == STATS_DRAIN_SECONDS)
                /* whole seconds, rounded up: an estimate, not a promise */
                kretry_topology_format_duration(
                        (int64_t)ceil(t->drain_s) * 1000, d, n);
        else
                snprintf(d, n, "-");
}

static void table_row(FILE *out, const stats_topic_t *t, int width) {
        char role[16], parts[16], wait[24], age[32], arr[32], con[32], dr[32];
        snprintf(role, sizeof(role), "%s", stats_role_name(t->role));
        if (t->role == STATS_ROLE_TIER)
                snprintf(role, sizeof(role), "tier %d", t->tier);
        snprintf(parts, sizeof(parts), "%d", t->partitions);
        if (t->partitions < 0)
                snprintf(parts, sizeof(parts), "?");
        snprintf(wait, sizeof(wait), "%lld", (long long)t->waiting);
        if (!t->waiting_ok)
                snprintf(wait, sizeof(wait), "?");
        if (!t->oldest_ok)
                snprintf(age, sizeof(age), "?");
        else if (t->oldest_ts < 0)
                snprintf(age, sizeof(age), "-");
        else
                age_text(t->oldest_age_ms, age, sizeof(age));
        rate_cell(t, t->arrival_rate, arr, sizeof(arr));
        rate_cell(t, t->consume_rate, con, sizeof(con));
        drain_cell(t, dr, sizeof(dr));
        fprintf(out, "%-*s %-8s %5s %10s %10s %10s %10s %8s\n", width, t->topic,
                role, parts, wait, age, arr, con, dr);
}

static const char *state_word(stats_alert_state_t s) {
        return s == STATS_ALERT_FIRING    ? "ALERT"
               : s == STATS_ALERT_UNKNOWN ? "UNKNOWN"
                                          : "ok";
}

void stats_render_table(FILE *out, const stats_report_t *r) {
        char at[32], win[32];
        int width = 5;
        for (size_t i = 0; i < r->topic_cnt; i++)
                if ((int)strlen(r->topics[i].topic) > width)
                        width = (int)strlen(r->topics[i].topic);
        ops_iso_time(r->at_ms, at, sizeof(at));
        kretry_topology_format_duration(r->window_ms, win, sizeof(win));
        fprintf(out, "topology %s, group %s, at %s, %s%s\n", r->topology,
                r->group, at, r->window_ms ? "rates over " : "no rates",
                r->window_ms ? win : " (--window 0)");
        fprintf(out, "%-*s %-8s %5s %10s %10s %10s %10s %8s\n", width, "TOPIC",
                "ROLE", "PARTS", "WAITING", "OLDEST AGE", "ARRIVAL/s",
                "CONSUME/s", "DRAIN");
        for (size_t i = 0; i < r->topic_cnt; i++)
                table_row(out, &r->topics[i], width);
        for (size_t i = 0; i < r->alert_cnt; i++)
                fprintf(out, "%s%-7s %s\n", i ? "" : "\nalerts:\n",
                        state_word(r->alerts[i].state), r->alerts[i].text);
        int errs = 0;
        for (size_t i = 0; i < r->topic_cnt; i++)
                if (r->topics[i].error[0])
                        fprintf(out, "%s%s: %s\n",
                                errs++ ? "" : "\nnot answered:\n",
                                r->topics[i].topic, r->topics[i].error);
}

/* ---- JSON ---- */

static json_t *int_or_null(int ok, int64_t v) {
        return ok ? json_integer(v) : json_null();
}

static json_t *drain_json(const stats_topic_t *t) {
        if (t->drain == STATS_DRAIN_NEVER)
                return json_string("never");
        if (t->drain == STATS_DRAIN_SECONDS)
                return json_real(t->drain_s);
        return json_null();
}

static json_t *topic_json(const stats_topic_t *t) {
        json_t *o = json_object();
        json_object_set_new(o, "topic", json_string(t->topic));
        json_object_set_new(o, "role", json_string(stats_role_name(t->role)));
        json_object_set_new(o, "tier",
                            int_or_null(t->role == STATS_ROLE_TIER, t->tier));
        json_object_set_new(o, "partitions",
                            int_or_null(t->partitions >= 0, t->partitions));
        json_object_set_new(o, "waiting",
                            int_or_null(t->waiting_ok, t->waiting));
        json_object_set_new(
                o, "oldest_timestamp_ms",
                int_or_null(t->oldest_ok && t->oldest_ts >= 0, t->oldest_ts));
        json_object_set_new(o, "oldest_age_ms",
                            int_or_null(t->oldest_ok, t->oldest_age_ms));
        json_object_set_new(o, "arrival_rate",
                            t->rates_ok ? json_real(t->arrival_rate)
                                        : json_null());
        json_object_set_new(o, "consume_rate",
                            t->rates_ok ? json_real(t->consume_rate)
                                        : json_null());
        json_object_set_new(o, "drain_seconds", drain_json(t));
        json_object_set_new(o, "error",
                            t->error[0] ? json_string(t->error) : json_null());
        return o;
}

static json_t *alert_json(const stats_alert_t *a) {
        static const char *const states[] = {"alert", "unknown", "ok"};
        json_t *o                         = json_object();
        json_object_set_new(o, "rule", json_string(a->rule));
        json_object_set_new(o, "topic", json_string(a->topic));
        json_object_set_new(o, "state", json_string(states[a->state]));
        json_object_set_new(
                o, "value",
                int_or_null(a->state != STATS_ALERT_UNKNOWN, a->value));
        json_object_set_new(o, "limit", json_integer(a->limit));
        json_object_set_new(o, "text", json_string(a->text));
        return o;
}

json_t *stats_report_json(const stats_report_t *r) {
        json_t *o = json_object(), *topics = json_array(),
               *alerts = json_array();
        json_object_set_new(o, "topology", json_string(r->topology));
        json_object_set_new(o, "group", json_string(r->group));
        json_object_set_new(o, "at_ms", json_integer(r->at_ms));
        json_object_set_new(o, "window_ms", json_integer(r->window_ms));
        for (size_t i = 0; i < r->topic_cnt; i++)
                json_array_append_new(topics, topic_json(&r->topics[i]));
        for (size_t i = 0; i < r->alert_cnt; i++)
                json_array_append_new(alerts, alert_json(&r->alerts[i]));
        json_object_set_new(o, "topics", topics);
        json_object_set_new(o, "alerts", alerts);
        return o;
}

/* ---- Prometheus ---- */

/* A label value: backslash, double quote and newline escaped. */
static void label_value(FILE *out, const char *s) {
        for (; *s; s++) {
                if (*s == '\\' || *s == '"')
                        fprintf(out, "\\%c", *s);
                else if (*s == '\n')
                        fputs("\\n", out);
                else
                        fputc(*s, out);
        }
}

static void
topic_labels(FILE *out, const stats_report_t *r, const stats_topic_t *t) {
        fputs("{topology=\"", out);
        label_value(out, r->topology);
        fputs("\",topic=\"", out);
        label_value(out, t->topic);
        fprintf(out, "\",role=\"%s\"", stats_role_name(t->role));
        if (t->role == STATS_ROLE_TIER)
                fprintf(out, ",tier=\"%d\"", t->tier);
        fputc('}', out);
}

typedef enum {
        M_PARTITIONS,
        M_WAITING,
        M_AGE,
        M_ARRIVAL,
        M_CONSUME,
        M_DRAIN,
        M_ANSWERED,
        M_CNT
} metric_t;

static const struct {
        const char *name, *help;
} metrics[M_CNT] = {
        {"kretry_topic_partitions", "Partitions of the topic."},
        {"kretry_topic_waiting_messages",
         "Messages after the group's committed offset (from the low "
         "watermark where it has none)."},
        {"kretry_topic_oldest_age_seconds",
         "Age of the oldest waiting message (0 when nothing waits)."},
        {"kretry_topic_arrival_messages_per_second",
         "Messages produced to the topic per second over the window."},
        {"kretry_topic_consume_messages_per_second",
         "Messages the group committed per second over the window."},
        {"kretry_topic_drain_seconds",
         "Time to drain at the current rates: waiting / (consume - "
         "arrival); +Inf when arrival >= consume."},
        {"kretry_topic_answered",
         "1 when the cluster answered every question about the topic."},
};

/* @returns 0 when the figure is unknown, else writes it to @p v. */
static int metric_value(metric_t m, const stats_topic_t *t, char *v, size_t n) {
        switch (m) {
        case M_PARTITIONS:
                return t->partitions >= 0 &&
                       snprintf(v, n, "%d", t->partitions) > 0;
        case M_WAITING:
                return t->waiting_ok &&
                       snprintf(v, n, "%lld", (long long)t->waiting) > 0;
        case M_AGE:
                return t->oldest_ok &&
                       snprintf(v, n, "%.3f",
                                (double)t->oldest_age_ms / 1000.0) > 0;
        case M_ARRIVAL:
                return t->rates_ok &&
                       snprintf(v, n, "%.3f", t->arrival_rate) > 0;
        case M_CONSUME:
                return t->rates_ok &&
                       snprintf(v, n, "%.3f", t->consume_rate) > 0;
        case M_DRAIN:
                if (t->drain == STATS_DRAIN_NEVER)
                        return snprintf(v, n, "+Inf") > 0;
                return t->drain == STATS_DRAIN_SECONDS &&
                       snprintf(v, n, "%.3f", t->drain_s) > 0;
        default:
                return snprintf(v, n, "%d", t->error[0] ? 0 : 1) > 0;
        }
}

static void prom_topic_metric(FILE *out,
                              const stats_report_t *const *rs,
                              size_t n,
                              metric_t m) {
        char v[64];
        fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n", metrics[m].name,
                metrics[m].help, metrics[m].name);
        for (size_t k = 0; k < n; k++)
                for (size_t i = 0; i < rs[k]->topic_cnt; i++) {
                        const stats_topic_t *t = &rs[k]->topics[i];
                        if (!metric_value(m, t, v, sizeof(v)))
                                continue;
                        fputs(metrics[m].name, out);
                        topic_labels(out, rs[k], t);
                        fprintf(out, " %s\n", v);
                }
}

static void prom_alerts(FILE *out, const stats_report_t *r) {
        for (size_t i = 0; i < r->alert_cnt; i++) {
                const stats_alert_t *a = &r->alerts[i];
                if (a->state == STATS_ALERT_UNKNOWN)
                        continue;
                fputs("kretry_alert_firing{topology=\"", out);
                label_value(out, r->topology);
                fprintf(out, "\",rule=\"%s\",topic=\"", a->rule);
                label_value(out, a->topic);
                fprintf(out, "\"} %d\n", a->state == STATS_ALERT_FIRING);
        }
}

void stats_render_prometheus_many(FILE *out,
                                  const stats_report_t *const *rs,
                                  size_t n) {
        for (int m = 0; m < M_CNT; m++)
                prom_topic_metric(out, rs, n, (metric_t)m);
        fputs("# HELP kretry_alert_firing 1 when an alerts: threshold of the "
              "topology holds for the topic (left out when it cannot be "
              "told).\n# TYPE kretry_alert_firing gauge\n",
              out);
        for (size_t k = 0; k < n; k++)
                prom_alerts(out, rs[k]);
        fputs("# HELP kretry_stats_timestamp_seconds When kretry stats took "
              "these figures.\n# TYPE kretry_stats_timestamp_seconds "
              "gauge\n",
              out);
        for (size_t k = 0; k < n; k++) {
                fputs("kretry_stats_timestamp_seconds{topology=\"", out);
                label_value(out, rs[k]->topology);
                fprintf(out, "\"} %.3f\n", (double)rs[k]->at_ms / 1000.0);
        }
}

void stats_render_prometheus(FILE *out, const stats_report_t *r) {
        stats_render_prometheus_many(out, &r, 1);
}
