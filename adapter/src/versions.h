/*
 * Leaf: the version store.
 *
 * The version store (`versioning`), for one source partition: per key, the
 * highest version handled OK. A message whose version is older (or equal,
 * with discard older_or_equal) is stale: acknowledged without calling the
 * handler. The store's changelog is a compacted topic co-partitioned with
 * the source; each record's value is the Avro binary encoding of
 * schemas/kretry/version_record.avsc ({"version": long}: one zig-zag
 * varint), its key the message key. Plain data: no I/O.
 */
#ifndef KRETRY_VERSIONS_H
#define KRETRY_VERSIONS_H

#include "keymap.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
        kretry_keymap_t map;
} kretry_versions_t;

void kretry_versions_init(kretry_versions_t *v);
void kretry_versions_free(kretry_versions_t *v);

/* 1 when @p version is stale for @p key, 0 when it must be handled. */
int kretry_versions_stale(const kretry_versions_t *v,
                          const void *key,
                          size_t len,
                          int64_t version,
                          int discard_equal);

/* Record @p version for @p key when higher than what is stored. Returns 1
 * when the store changed (the changelog must be written), 0 when not, -1
 * when out of memory. */
int kretry_versions_raise(kretry_versions_t *v,
                          const void *key,
                          size_t len,
                          int64_t version);

/* Encode a changelog value into @p buf (at least 10 bytes); returns its
 * length. Decode returns 0, or -1 for a value that is not one varint. */
size_t kretry_version_encode(int64_t version, unsigned char *buf);
int kretry_version_decode(const void *buf, size_t len, int64_t *versionp);

/* A version header value: a decimal integer, optionally negative. */
int kretry_version_parse(const void *value, size_t size, int64_t *versionp);

#endif
