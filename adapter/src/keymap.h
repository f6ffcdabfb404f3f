/*
 * Leaf: a hash map from message keys.
 *
 * A hash map from message keys (byte strings) to a fixed-size value, owned
 * by one partition's state and used by the key-ordering chains and the
 * version store. Open addressing with linear probing and backward-shift
 * deletion (no tombstones); keys are copied once on insertion. Memory: one
 * slot (24 bytes) per capacity entry plus each key's bytes and value. Not
 * thread-safe.
 */
#ifndef KRETRY_KEYMAP_H
#define KRETRY_KEYMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
        void *entry; /* key length, key bytes, value; NULL = empty slot */
        uint64_t hash;
        size_t len;
} kretry_keymap_slot_t;

typedef struct {
        kretry_keymap_slot_t *slots;
        size_t cap, cnt;
        size_t value_size;
        size_t bytes; /* memory held by entries, for stats */
} kretry_keymap_t;

/* FNV-1a over the key's bytes (a NULL key of length 0 hashes like ""). */
uint64_t kretry_key_hash(const void *key, size_t len);

void kretry_keymap_init(kretry_keymap_t *m, size_t value_size);
void kretry_keymap_clear(kretry_keymap_t *m);
void kretry_keymap_free(kretry_keymap_t *m);

/* The value stored for @p key, or NULL. */
void *kretry_keymap_get(const kretry_keymap_t *m, const void *key, size_t len);

/* The value for @p key, inserted zero-filled when absent (*createdp = 1).
 * NULL when out of memory. */
void *kretry_keymap_put(kretry_keymap_t *m,
                        const void *key,
                        size_t len,
                        int *createdp);

/* Remove @p key; returns 1 when it was present. */
int kretry_keymap_del(kretry_keymap_t *m, const void *key, size_t len);

/* Iterate: start with *posp = 0; returns the next value (and its key) or
 * NULL at the end. The map must not change during the iteration. */
void *kretry_keymap_next(const kretry_keymap_t *m,
                         size_t *posp,
                         const void **keyp,
                         size_t *lenp);

/* The stored key of length @p len whose value is @p value. */
const void *kretry_keymap_key_of(const void *value, size_t len);

/* Approximate bytes this map holds (slots and entries). */
size_t kretry_keymap_memory(const kretry_keymap_t *m);

#endif
