#include "dlq_groups.h"

#include <stdlib.h>
#include <string.h>

/* One group; texts are NUL-terminated copies (NULL: header absent). */
typedef struct {
        char *text[3]; /* class, code, original topic */
        uint64_t hash;
        int64_t count, first, last;
} group_t;

/* Open addressing over a power-of-two table at most half full. */
struct dlq_groups_s {
        group_t *groups;
        size_t n, max;
        size_t *slots; /* index + 1 into groups, 0: empty */
        size_t slot_cnt;
        int64_t other;
};

dlq_groups_t *dlq_groups_new(size_t max_groups) {
        dlq_groups_t *g = calloc(1, sizeof(*g));
        if (!g || !max_groups || max_groups > DLQ_GROUPS_MAX)
                goto err;
        g->max      = max_groups;
        g->slot_cnt = 1;
        while (g->slot_cnt < 2 * max_groups)
                g->slot_cnt *= 2;
        g->groups = calloc(max_groups, sizeof(*g->groups));
        g->slots  = calloc(g->slot_cnt, sizeof(*g->slots));
        if (!g->groups || !g->slots)
                goto err;
        return g;
err:
        dlq_groups_destroy(g);
        return NULL;
}

void dlq_groups_destroy(dlq_groups_t *g) {
        if (!g)
                return;
        for (size_t i = 0; g->groups && i < g->n; i++)
                for (int k = 0; k < 3; k++)
                        free(g->groups[i].text[k]);
        free(g->groups);
        free(g->slots);
        free(g);
}

static size_t clip(const kretry_dlq_text_t *t) {
        return t->len < DLQ_GROUPS_TEXT ? t->len : DLQ_GROUPS_TEXT;
}

/* FNV-1a over the three texts, an absent one apart from an empty one. */
static uint64_t hash(const kretry_dlq_text_t *t) {
        uint64_t h = 1469598103934665603ULL;
        for (int k = 0; k < 3; k++) {
                h = (h ^ (t[k].ptr ? 1u : 2u)) * 1099511628211ULL;
                for (size_t i = 0; t[k].ptr && i < clip(&t[k]); i++)
                        h = (h ^ (unsigned char)t[k].ptr[i]) * 1099511628211ULL;
        }
        return h;
}

static int same(const group_t *gr, const kretry_dlq_text_t *t) {
        for (int k = 0; k < 3; k++) {
                if (!gr->text[k] != !t[k].ptr)
                        return 0;
                if (t[k].ptr && (strlen(gr->text[k]) != clip(&t[k]) ||
                                 memcmp(gr->text[k], t[k].ptr, clip(&t[k]))))
                        return 0;
        }
        return 1;
}

static int add_group(dlq_groups_t *g,
                     size_t slot,
                     uint64_t h,
                     const kretry_dlq_text_t *t) {
        group_t *gr = &g->groups[g->n];
        memset(gr, 0, sizeof(*gr));
        for (int k = 0; k < 3; k++) {
                if (!t[k].ptr)
                        continue;
                if (!(gr->text[k] = malloc(clip(&t[k]) + 1))) {
                        for (int j = 0; j < k; j++)
                                free(gr->text[j]);
                        return -1;
                }
                memcpy(gr->text[k], t[k].ptr, clip(&t[k]));
                gr->text[k][clip(&t[k])] = '\0';
        }
        gr->hash       = h;
        gr->first      = -1;
        gr->last       = -1;
        g->slots[slot] = ++g->n;
        return 0;
}

int dlq_groups_add(dlq_groups_t *g,
                   const kretry_dlq_info_t *info,
                   int64_t dead_lettered_at) {
        const kretry_chain_t *c = &info->chain;
        kretry_dlq_text_t t[3]  = {
                 info->error_class,
                 info->error_code,
                 {c->orig_topic_ok ? c->orig_topic : NULL,
                 c->orig_topic_ok ? strlen(c->orig_topic) : 0}};
        uint64_t h  = hash(t);
        size_t slot = (size_t)h & (g->slot_cnt - 1);
        while (g->slots[slot] && (g->groups[g->slots[slot] - 1].hash != h ||
                                  !same(&g->groups[g->slots[slot] - 1], t)))
                slot = (slot + 1) & (g->slot_cnt - 1);
        if (!g->slots[slot]) {
                if (g->n == g->max) {
                        g->other++;
                        return 0;
                }
                if (add_group(g, slot, h, t))
                        return -1;
        }
        group_t *gr = &g->groups[g->slots[slot] - 1];
        gr->count++;
        if (dead_lettered_at >= 0) {
                if (gr->first < 0 || dead_lettered_at < gr->first)
                        gr->first = dead_lettered_at;
                if (dead_lettered_at > gr->last)
                        gr->last = dead_lettered_at;
        }
        return 0;
}

size_t dlq_groups_count(const dlq_groups_t *g) {
        return g->n;
}

int64_t dlq_groups_other(const dlq_groups_t *g) {
        return g->other;
}

static int by_count(const void *a, const void *b) {
        const group_t *x = *(const group_t *const *)a;
        const group_t *y = *(const group_t *const *)b;
        if (x->count != y->count)
                return x->count > y->count ? -1 : 1;
        return x->last > y->last ? -1 : x->last < y->last;
}

static json_t *text_json(const char *s) {
        return s ? json_stringn_nocheck(s, strlen(s)) : json_null();
}

json_t *dlq_groups_json(const dlq_groups_t *g) {
        static const char *const names[3] = {"class", "code", "original_topic"};
        const group_t **order = calloc(g->n ? g->n : 1, sizeof(*order));
        json_t *arr           = order ? json_array() : NULL;
        for (size_t i = 0; arr && i < g->n; i++)
                order[i] = &g->groups[i];
        if (arr)
                qsort(order, g->n, sizeof(*order), by_count);
        for (size_t i = 0; arr && i < g->n; i++) {
                const group_t *gr = order[i];
                json_t *o         = json_object();
                for (int k = 0; k < 3; k++)
                        json_object_set_new(o, names[k],
                                            text_json(gr->text[k]));
                json_object_set_new(o, "count", json_integer(gr->count));
                json_object_set_new(o, "first_seen",
                                    gr->first >= 0 ? json_integer(gr->first)
                                                   : json_null());
                json_object_set_new(o, "last_seen",
                                    gr->last >= 0 ? json_integer(gr->last)
                                                  : json_null());
                json_array_append_new(arr, o);
        }
        free(order);
        return arr;
}

int dlq_groups_read(dlq_reader_t *r,
                    dlq_groups_t *g,
                    int64_t max_messages,
                    int64_t *read,
                    char *errstr,
                    size_t errstr_size) {
        rd_kafka_message_t *m;
        int got = 0;
        *read   = 0;
        while (*read < max_messages &&
               (got = dlq_reader_next(r, &m, errstr, errstr_size)) == 1) {
                rd_kafka_headers_t *h = NULL;
                kretry_dlq_info_t info;
                (*read)++;
                rd_kafka_message_headers(m, &h);
                kretry_dlq_info_decode(h, &info);
                int rc = dlq_groups_add(
                        g, &info,
                        kretry_dlq_dead_lettered_at(
                                &info, rd_kafka_message_timestamp(m, NULL)));
                rd_kafka_message_destroy(m);
                if (rc) {
                        snprintf(errstr, errstr_size, "out of memory");
                        return -1;
                }
        }
        if (got < 0)
                return -1;
        return got == 0 || dlq_reader_done(r);
}
