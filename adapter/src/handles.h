/*
 * Service: the handles of held messages.
 *
 * Handles of held messages (kretry_msg_hold): a slot of a process-wide
 * table and the slot's generation, packed into an odd pointer-sized value
 * that can never be a message's address. A handle lives from the hold to
 * its completion, or to the handler's return when the hold was void; a
 * handle used after that (a late or repeated kretry_msg_complete(), one
 * kept from a void hold, one outliving its adapter) finds its slot's
 * generation moved on and is refused, never taken for the message now in
 * the slot. Process-wide because a handle may outlive its adapter; one
 * lock, taken only by held messages.
 */
#ifndef KRETRY_HANDLES_H
#define KRETRY_HANDLES_H

#include <stdint.h>

typedef uintptr_t kretry_handle_t;

/* 1 when @p p is a handle, not a message's address. */
static inline int kretry_handle_is(const void *p) {
        return ((uintptr_t)p & 1) != 0;
}

/* A new handle for @p obj; 0 when memory is short. */
kretry_handle_t kretry_handle_new(void *obj);
/* What @p h stands for, or NULL when it is no longer valid. The object is
 * the caller's to keep alive (the hold's owner frees it only after
 * kretry_handle_end()). */
void *kretry_handle_get(kretry_handle_t h);
/* End @p h (nothing when it already ended). */
void kretry_handle_end(kretry_handle_t h);
/* Look @p h up and end it in one step, under the table's lock, and run
 * @p fn on its object with that lock still held (so that no other thread
 * ends or reuses it meanwhile); returns fn's result, or -1 when @p h was
 * not valid. @p fn must not take the table's lock. */
int kretry_handle_take(kretry_handle_t h,
                       int (*fn)(void *obj, void *arg),
                       void *arg);

#endif
