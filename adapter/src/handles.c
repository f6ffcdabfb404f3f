/*
 * Service: the handles of held messages.
 *
 * The table of held-message handles (handles.h). Slots are reused through
 * a free list; a slot's generation moves on every time its handle ends, so
 * a handle names one hold for 2^32 (2^16 on 32-bit) reuses of its slot.
 */
#include "handles.h"

#include <pthread.h>
#include <stdlib.h>

#define GEN_BITS (sizeof(uintptr_t) * 4) /* half the bits, the tag aside */
#define GEN_MASK (((uintptr_t)1 << GEN_BITS) - 1)
#define SLOT_MAX ((uintptr_t)1 << (GEN_BITS - 1))

typedef struct {
        uintptr_t gen;
        void *obj;     /* NULL while free */
        uint32_t next; /* free list, UINT32_MAX at its end */
} slot_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static slot_t *slots;
static uint32_t cnt, cap, free_head = UINT32_MAX;

static kretry_handle_t pack(uint32_t i) {
        return (((uintptr_t)i << GEN_BITS | (slots[i].gen & GEN_MASK)) << 1) |
               1;
}

/* Under lock: the slot @p h names while valid, or NULL. */
static slot_t *find(kretry_handle_t h) {
        if (!kretry_handle_is((const void *)h))
                return NULL;
        uintptr_t i = (h >> 1) >> GEN_BITS;
        if (i >= cnt || !slots[i].obj ||
            (slots[i].gen & GEN_MASK) != ((h >> 1) & GEN_MASK))
                return NULL;
        return &slots[i];
}

static void end_slot(slot_t *s) {
        s->obj = NULL;
        s->gen++;
        s->next   = free_head;
        free_head = (uint32_t)(s - slots);
}

kretry_handle_t kretry_handle_new(void *obj) {
        kretry_handle_t h = 0;
        pthread_mutex_lock(&lock);
        if (free_head == UINT32_MAX && cnt == cap) {
                uint32_t ncap = cap ? cap * 2 : 64;
                slot_t *n     = ncap <= SLOT_MAX && ncap > cap
                                        ? realloc(slots, sizeof(*n) * ncap)
                                        : NULL;
                if (!n)
                        goto out;
                slots = n;
                cap   = ncap;
        }
        uint32_t i;
        if (free_head != UINT32_MAX) {
                i         = free_head;
                free_head = slots[i].next;
        } else {
                i            = cnt++;
                slots[i].gen = 1;
        }
        slots[i].obj = obj;
        h            = pack(i);
out:
        pthread_mutex_unlock(&lock);
        return h;
}

void *kretry_handle_get(kretry_handle_t h) {
        pthread_mutex_lock(&lock);
        slot_t *s = find(h);
        void *obj = s ? s->obj : NULL;
        pthread_mutex_unlock(&lock);
        return obj;
}

void kretry_handle_end(kretry_handle_t h) {
        pthread_mutex_lock(&lock);
        slot_t *s = find(h);
        if (s)
                end_slot(s);
        pthread_mutex_unlock(&lock);
}

int kretry_handle_take(kretry_handle_t h,
                       int (*fn)(void *obj, void *arg),
                       void *arg) {
        pthread_mutex_lock(&lock);
        slot_t *s = find(h);
        int rc    = -1;
        if (s) {
                void *obj = s->obj;
                end_slot(s);
                rc = fn(obj, arg);
        }
        pthread_mutex_unlock(&lock);
        return rc;
}
