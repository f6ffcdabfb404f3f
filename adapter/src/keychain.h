/*
 * Leaf: per-key chains across retries.
 *
 * Per-key ordering across retries (`ordering: key`), for one source
 * partition. For each key with messages in the retry chain, the original
 * source offsets still pending, in order, with the tier and due time where
 * each waits. The lowest pending offset is the head: the only message of the
 * key that may reach the handler. A later message of the key is parked —
 * forwarded behind the head — until everything before it is resolved.
 * Ordering is decided by original offset, so it survives any physical
 * interleaving of tiers. Plain data: no I/O, unit-tested on its own. Memory
 * grows with the retry backlog only, never with the source topic.
 */
#ifndef KRETRY_KEYCHAIN_H
#define KRETRY_KEYCHAIN_H

#include "keymap.h"

#include <stddef.h>
#include <stdint.h>

/* One pending message and the copy of it that is current: the tier where
 * it waits and, as the restore found it, the copy's attempt and offset in
 * that tier (-1 for copies made since). */
typedef struct {
        int64_t orig_offset;
        int64_t due_ts;
        int64_t copy_offset;
        int tier;
        int attempt;
} kretry_pending_t;

/* A key's in-flight state (workers.c): busy while one of its messages is
 * dispatched (waiting for a worker, or in the handler), and the messages
 * that wait for it, in consume order (opaque here). The key's entry lives
 * while its chain, its park or its gate holds it: one entry per key, one
 * model of where the key stands. */
typedef struct {
        int busy;
        void *head, *tail;
        size_t len; /* the key's length (kretry_chains_gate_idle) */
} kretry_gate_t;

typedef struct {
        int cnt, cap;
        kretry_pending_t one; /* inline storage while cap <= 1 */
        kretry_pending_t *many;
        int parked; /* park_key: the key's head was dead-lettered */
        /* Restore: the highest original offset among the DLQ copies that
         * parked the key; a replayed message above it lifted the park. */
        int64_t parked_at;
        kretry_gate_t gate;
} kretry_chain_key_t;

typedef struct {
        kretry_keymap_t map;
        size_t pending; /* messages in all chains */
        size_t chained; /* keys with a chain or a park */
        /* Older copies of a pending message the restore found above the
         * committed offsets (a crash between a copy and its commit), by
         * tier and offset: acknowledged as duplicates when consumed. */
        kretry_keymap_t superseded;
} kretry_chains_t;

typedef enum {
        KRETRY_CHAIN_HANDLE = 0, /* no chain, or this is the head */
        KRETRY_CHAIN_PARK   = 1, /* forward behind the head */
        KRETRY_CHAIN_DEAD   = 2  /* park_key: the key is dead-lettered */
} kretry_chain_decision_t;

void kretry_chains_init(kretry_chains_t *c);
void kretry_chains_clear(kretry_chains_t *c);
void kretry_chains_free(kretry_chains_t *c);

/* What to do with a message of @p key at @p orig_offset; @p headp (may be
 * NULL) receives the head when the answer is PARK. */
kretry_chain_decision_t kretry_chains_decide(kretry_chains_t *c,
                                             const void *key,
                                             size_t len,
                                             int64_t orig_offset,
                                             kretry_pending_t *headp);

/* 1 when the message at @p orig_offset is in the key's chain. */
int kretry_chains_has(const kretry_chains_t *c,
                      const void *key,
                      size_t len,
                      int64_t orig_offset);

/* 1 when a message of the key before @p orig_offset is still pending: the
 * message at @p orig_offset is not the key's head. */
int kretry_chains_before(const kretry_chains_t *c,
                         const void *key,
                         size_t len,
                         int64_t orig_offset);

/* The message at @p orig_offset is (still) in the chain, waiting in @p tier
 * until @p due_ts. Returns 0, or -1 when out of memory. */
int kretry_chains_add(kretry_chains_t *c,
                      const void *key,
                      size_t len,
                      int64_t orig_offset,
                      int tier,
                      int64_t due_ts);

/* Room for one more message in the key's chain (its entry created when
 * absent), made before the message is decided, so that the
 * kretry_chains_add() its outcome calls for cannot fail. Returns 0, or -1
 * when out of memory. */
int kretry_chains_reserve(kretry_chains_t *c, const void *key, size_t len);

/* The restore found @p copy (orig_offset, tier, due_ts, attempt,
 * copy_offset) in a tier: the newest copy of a message — highest attempt;
 * then, in one tier, the later offset, across tiers the later due time —
 * is its entry; every other one is remembered as superseded. Returns 0, or
 * -1 when out of memory. */
int kretry_chains_restore(kretry_chains_t *c,
                          const void *key,
                          size_t len,
                          const kretry_pending_t *copy);

/* 1 when the copy at @p offset of @p tier was superseded (and forgets it:
 * it is consumed once). */
int kretry_chains_superseded(kretry_chains_t *c, int tier, int64_t offset);

/* The message at @p orig_offset reached its end (OK, DLQ, stale). */
void kretry_chains_remove(kretry_chains_t *c,
                          const void *key,
                          size_t len,
                          int64_t orig_offset);

/* park_key: mark the key dead-lettered (followers go to the DLQ), or, with
 * @p on = 0, lift it (the key was replayed). Returns the number of followers
 * pending when it was marked. */
size_t
kretry_chains_park(kretry_chains_t *c, const void *key, size_t len, int on);

/* 1 when @p key is parked (park_key). */
int kretry_chains_is_parked(const kretry_chains_t *c,
                            const void *key,
                            size_t len);

/* The restore found a DLQ copy that parks the key (the head's, with
 * kretry-parked-followers, or a parked follower's) of the message at
 * @p orig_offset. Returns 0, or -1 when out of memory. */
int kretry_chains_park_evidence(kretry_chains_t *c,
                                const void *key,
                                size_t len,
                                int64_t orig_offset);

/* The lowest original offset among the parks the restore rebuilt, or -1:
 * only a replayed message above it can have lifted one. */
int64_t kretry_chains_parked_from(const kretry_chains_t *c);

/* The restore found a replayed message of the key at source offset
 * @p offset, handled before the assignment: it lifted a park whose evidence
 * is older (a lower original offset). */
void kretry_chains_replayed(kretry_chains_t *c,
                            const void *key,
                            size_t len,
                            int64_t offset);

/* Keys with a chain or a park (not those only in flight). */
size_t kretry_chains_keys(const kretry_chains_t *c);

/* The gate of @p key, its entry created when absent; NULL when out of
 * memory. The pointer stays valid until the gate is idle again and
 * kretry_chains_gate_idle() was called, or the chains are cleared. */
kretry_gate_t *
kretry_chains_gate(kretry_chains_t *c, const void *key, size_t len);
/* The gate of @p key if its entry exists, else NULL (nothing created). */
kretry_gate_t *
kretry_chains_gate_find(kretry_chains_t *c, const void *key, size_t len);
/* @p g is no longer busy and nothing waits on it: its key's entry goes
 * unless a chain or a park holds it. */
void kretry_chains_gate_idle(kretry_chains_t *c, kretry_gate_t *g);
/* Iterate every gate (start with *posp = 0); NULL at the end. */
kretry_gate_t *kretry_chains_next_gate(const kretry_chains_t *c, size_t *posp);

#endif
