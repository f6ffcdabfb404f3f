#include "ui_history.h"

#include <stdlib.h>
#include <string.h>

/* One sample; -1 for a figure that was unknown. */
typedef struct {
        int64_t at_ms;
        int64_t dlq_waiting;
        double dlq_rate_per_min;
        int tier_cnt;
        int64_t waiting[UI_HISTORY_TIERS];
        int64_t oldest_age_ms[UI_HISTORY_TIERS];
} sample_t;

struct ui_history_s {
        sample_t *ring;
        size_t capacity, count, next; /* next: where the next one goes */
};

ui_history_t *ui_history_new(size_t capacity) {
        ui_history_t *h = calloc(1, sizeof(*h));
        if (!h || !capacity ||
            !(h->ring = calloc(capacity, sizeof(*h->ring)))) {
                free(h);
                return NULL;
        }
        h->capacity = capacity;
        return h;
}

void ui_history_destroy(ui_history_t *h) {
        if (!h)
                return;
        free(h->ring);
        free(h);
}

void ui_history_add(ui_history_t *h, const stats_report_t *r) {
        sample_t *s = &h->ring[h->next];
        memset(s, 0, sizeof(*s));
        s->at_ms            = r->at_ms;
        s->dlq_waiting      = -1;
        s->dlq_rate_per_min = -1;
        for (size_t i = 0; i < r->topic_cnt; i++) {
                const stats_topic_t *t = &r->topics[i];
                if (t->role == STATS_ROLE_DLQ) {
                        s->dlq_waiting = t->waiting_ok ? t->waiting : -1;
                        s->dlq_rate_per_min =
                                t->rates_ok ? t->arrival_rate * 60 : -1;
                } else if (t->role == STATS_ROLE_TIER && t->tier >= 1 &&
                           t->tier <= UI_HISTORY_TIERS) {
                        int k         = t->tier - 1;
                        s->waiting[k] = t->waiting_ok ? t->waiting : -1;
                        s->oldest_age_ms[k] =
                                t->oldest_ok ? t->oldest_age_ms : -1;
                        if (t->tier > s->tier_cnt)
                                s->tier_cnt = t->tier;
                }
        }
        h->next = (h->next + 1) % h->capacity;
        if (h->count < h->capacity)
                h->count++;
}

size_t ui_history_count(const ui_history_t *h) {
        return h->count;
}

static json_t *figure(int64_t v) {
        return v >= 0 ? json_integer(v) : json_null();
}

json_t *ui_history_json(const ui_history_t *h, int64_t since_ms) {
        json_t *j = json_object(), *at = json_array(), *size = json_array(),
               *rate = json_array(), *tiers = json_array();
        json_t *tw[UI_HISTORY_TIERS] = {0}, *ta[UI_HISTORY_TIERS] = {0};
        int tier_cnt = 0;
        size_t first = (h->next + h->capacity - h->count) % h->capacity;
        for (size_t i = 0; i < h->count; i++)
                if (h->ring[(first + i) % h->capacity].tier_cnt > tier_cnt)
                        tier_cnt = h->ring[(first + i) % h->capacity].tier_cnt;
        for (int k = 0; k < tier_cnt; k++) {
                tw[k] = json_array();
                ta[k] = json_array();
        }
        size_t n = 0;
        for (size_t i = 0; i < h->count; i++) {
                const sample_t *s = &h->ring[(first + i) % h->capacity];
                if (s->at_ms < since_ms)
                        continue;
                n++;
                json_array_append_new(at, json_integer(s->at_ms));
                json_array_append_new(size, figure(s->dlq_waiting));
                json_array_append_new(rate,
                                      s->dlq_rate_per_min >= 0
                                              ? json_real(s->dlq_rate_per_min)
                                              : json_null());
                for (int k = 0; k < tier_cnt; k++) {
                        int known = k < s->tier_cnt;
                        json_array_append_new(
                                tw[k], figure(known ? s->waiting[k] : -1));
                        json_array_append_new(
                                ta[k],
                                figure(known ? s->oldest_age_ms[k] : -1));
                }
        }
        for (int k = 0; k < tier_cnt; k++) {
                json_t *t = json_object();
                json_object_set_new(t, "tier", json_integer(k + 1));
                json_object_set_new(t, "waiting", tw[k]);
                json_object_set_new(t, "oldest_age_ms", ta[k]);
                json_array_append_new(tiers, t);
        }
        json_object_set_new(j, "capacity",
                            json_integer((json_int_t)h->capacity));
        json_object_set_new(j, "count", json_integer((json_int_t)n));
        json_object_set_new(j, "at_ms", at);
        json_object_set_new(j, "dlq_waiting", size);
        json_object_set_new(j, "dlq_rate_per_min", rate);
        json_object_set_new(j, "tiers", tiers);
        return j;
}
