/* Leaf: the per-partition offset tracker. */
#include "offsets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Done entries are stored as -(offset + 1) so that the ring keeps the order
 * and the value without a separate flag array. */
#define DONE(o) (-(o)-1)

void kretry_offsets_init(kretry_offsets_t *t) {
        memset(t, 0, sizeof(*t));
        t->next = -1;
}

void kretry_offsets_free(kretry_offsets_t *t) {
        free(t->offs);
        kretry_offsets_init(t);
}

static int64_t *slot(const kretry_offsets_t *t, size_t i) {
        return &t->offs[(t->head + i) & (t->cap - 1)];
}

int (*kretry_test_alloc_fails)(const char *site);

static int grow(kretry_offsets_t *t) {
        size_t ncap = t->cap ? t->cap * 2 : 64;
        int64_t *offs =
                kretry_test_alloc_fails && kretry_test_alloc_fails("offsets")
                        ? NULL
                        : malloc(ncap * sizeof(*offs));
        if (!offs)
                return -1;
        for (size_t i = 0; i < t->cnt; i++)
                offs[i] = *slot(t, i);
        free(t->offs);
        t->offs = offs;
        t->cap  = ncap;
        t->head = 0;
        return 0;
}

static int64_t last_tracked(const kretry_offsets_t *t) {
        int64_t v = *slot(t, t->cnt - 1);
        return v < 0 ? DONE(v) : v;
}

int kretry_offsets_add(kretry_offsets_t *t, int64_t offset) {
        if (offset < 0 || (t->cnt && offset <= last_tracked(t)) ||
            (!t->cnt && t->next >= 0 && offset < t->next))
                return KRETRY_OFFSETS_OUT_OF_ORDER;
        if (t->cnt == t->cap && grow(t))
                return KRETRY_OFFSETS_NO_MEM;
        *slot(t, t->cnt) = offset;
        t->cnt++;
        return 0;
}

/* The ring holds increasing offsets, usually consecutive ones (a
 * partition's offsets have gaps only after compaction or transactions):
 * the slot @p offset would have then is tried first, then a binary
 * search. */
static int64_t *find(const kretry_offsets_t *t, int64_t offset) {
        if (!t->cnt)
                return NULL;
        int64_t first = *slot(t, 0);
        first         = first < 0 ? DONE(first) : first;
        if (offset >= first && (uint64_t)(offset - first) < t->cnt) {
                int64_t *s = slot(t, (size_t)(offset - first));
                if (*s == offset || *s == DONE(offset))
                        return s;
        }
        size_t lo = 0, hi = t->cnt;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int64_t v  = *slot(t, mid);
                int64_t o  = v < 0 ? DONE(v) : v;
                if (o == offset)
                        return slot(t, mid);
                if (o < offset)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

int kretry_offsets_pending(const kretry_offsets_t *t, int64_t offset) {
        if (!t->cnt)
                return 0;
        /* Usually the last one: a message is dispatched before anything
         * behind it in its partition is tracked. */
        const int64_t *s = *slot(t, t->cnt - 1) == offset ? slot(t, t->cnt - 1)
                                                          : find(t, offset);
        return s && *s >= 0;
}

int kretry_offsets_done(kretry_offsets_t *t, int64_t offset) {
        int64_t *s = find(t, offset);
        if (!s || *s < 0)
                return -1;
        *s           = DONE(offset);
        int advanced = 0;
        while (t->cnt && *slot(t, 0) < 0) {
                t->next = DONE(*slot(t, 0)) + 1;
                t->head = (t->head + 1) & (t->cap - 1);
                t->cnt--;
                advanced = 1;
        }
        return advanced;
}

int64_t kretry_offsets_committable(const kretry_offsets_t *t) {
        return t->next;
}

int64_t kretry_offsets_resume_at(const kretry_offsets_t *t) {
        if (t->next >= 0 || !t->cnt)
                return t->next;
        int64_t v = *slot(t, 0);
        return v < 0 ? DONE(v) : v;
}

size_t kretry_offsets_inflight(const kretry_offsets_t *t) {
        size_t n = 0;
        for (size_t i = 0; i < t->cnt; i++)
                n += *slot(t, i) >= 0;
        return n;
}

/* The metadata text being written: ranges are joined when they touch, and
 * one that does not fit ends the text (the rest is handled again). */
typedef struct {
        char *buf;
        size_t size, len, plen;
        int64_t base, from, to; /* the range not yet written: [from, to) */
        int cut;
} md_out_t;

static void md_flush(md_out_t *o) {
        if (o->cut || o->to <= o->from)
                return;
        int n = snprintf(o->buf + o->len, o->size - o->len, "%s%lld+%lld",
                         o->len > o->plen ? "," : "",
                         (long long)(o->from - o->base),
                         (long long)(o->to - o->from));
        if (n < 0 || (size_t)n >= o->size - o->len)
                o->cut = 1;
        else
                o->len += (size_t)n;
        o->from = o->to = 0;
}

static void md_range(md_out_t *o, int64_t from, int64_t to) {
        if (o->to > o->from && o->to == from) {
                o->to = to;
                return;
        }
        md_flush(o);
        o->from = from;
        o->to   = to;
}

size_t kretry_offsets_decided(const kretry_offsets_t *t,
                              const kretry_decided_t *inherited,
                              int64_t *base,
                              char *buf,
                              size_t size) {
        md_out_t o = {.buf  = buf,
                      .size = size > KRETRY_DECIDED_MAX ? KRETRY_DECIDED_MAX
                                                        : size,
                      .plen = strlen(KRETRY_DECIDED_METADATA)};
        o.base = *base = kretry_offsets_resume_at(t);
        if (*base < 0 || o.size <= o.plen)
                return 0;
        memcpy(buf, KRETRY_DECIDED_METADATA, o.plen);
        o.len = o.plen;
        for (size_t i = 0; i < t->cnt;) {
                if (*slot(t, i) >= 0) {
                        i++;
                        continue;
                }
                int64_t from = DONE(*slot(t, i)), to = from + 1;
                for (i++; i < t->cnt && *slot(t, i) < 0; i++)
                        to = DONE(*slot(t, i)) + 1;
                md_range(&o, from, to);
        }
        /* Inherited offsets up to the last tracked one were consumed again
         * and are in the ring (skipped: done); the rest are not. */
        int64_t above = t->cnt ? last_tracked(t) + 1 : *base;
        for (size_t i = 0; inherited && i < inherited->cnt; i++) {
                int64_t from = inherited->r[2 * i],
                        to   = inherited->r[2 * i + 1];
                if (to > above)
                        md_range(&o, from > above ? from : above, to);
        }
        md_flush(&o);
        if (o.len == o.plen)
                return 0;
        buf[o.len] = '\0';
        return o.len;
}

/* A decimal number of @p s up to @p end, at most 18 digits; -1 none. */
static int64_t number(const char **s, const char *end) {
        int64_t v  = 0;
        int digits = 0;
        while (*s < end && **s >= '0' && **s <= '9' && digits < 18) {
                v = v * 10 + (**s - '0');
                (*s)++;
                digits++;
        }
        return digits ? v : -1;
}

int kretry_decided_parse(kretry_decided_t *d,
                         int64_t base,
                         int64_t limit,
                         const void *md,
                         size_t len) {
        const size_t plen = strlen(KRETRY_DECIDED_METADATA);
        const char *s = md, *end = s ? s + len : NULL;
        if (!s || len < plen || memcmp(s, KRETRY_DECIDED_METADATA, plen))
                return 0;
        if (len > KRETRY_DECIDED_MAX || base < 0)
                return KRETRY_DECIDED_MALFORMED;
        s += plen;
        size_t cap = 1;
        for (const char *c = s; c < end; c++)
                cap += *c == ',';
        int64_t *r = malloc(cap * 2 * sizeof(*r)), prev = base;
        size_t cnt = 0;
        int rc     = r ? 0 : KRETRY_DECIDED_MALFORMED;
        while (!rc && s < end && cnt < cap) {
                int64_t from = number(&s, end), n = -1;
                if (from < 0 || s == end || *s++ != '+' ||
                    (n = number(&s, end)) <= 0 ||
                    (s < end && (*s++ != ',' || s == end))) {
                        rc = KRETRY_DECIDED_MALFORMED;
                        break;
                }
                /* limit >= base first: no sum below can overflow. */
                if (limit < base || from > limit - base ||
                    n > limit - base - from) {
                        rc = KRETRY_DECIDED_BEYOND;
                        break;
                }
                if (base + from < prev) {
                        rc = KRETRY_DECIDED_MALFORMED;
                        break;
                }
                r[2 * cnt]     = base + from;
                r[2 * cnt + 1] = prev = base + from + n;
                cnt++;
        }
        if (!rc && (s != end || !cnt))
                rc = KRETRY_DECIDED_MALFORMED;
        if (rc) {
                free(r);
                return rc;
        }
        d->r   = r;
        d->cnt = cnt;
        return 0;
}

int kretry_decided_has(const kretry_decided_t *d, int64_t offset) {
        size_t lo = 0, hi = d->cnt;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (offset < d->r[2 * mid])
                        hi = mid;
                else if (offset >= d->r[2 * mid + 1])
                        lo = mid + 1;
                else
                        return 1;
        }
        return 0;
}

void kretry_decided_free(kretry_decided_t *d) {
        free(d->r);
        d->r   = NULL;
        d->cnt = 0;
}
