/*
 * Leaf: the per-partition offset tracker.
 *
 * The per-partition offset tracker: which consumed offsets are still in
 * flight (handler running, copy not yet acknowledged) and the highest offset
 * that may be committed — never past the lowest one still in flight.
 * Offsets arrive in increasing order (consume order); completions in any
 * order. A ring buffer that grows by doubling: no allocation per message in
 * steady state. Not thread-safe: the adapter's thread owns it.
 */
#ifndef KRETRY_OFFSETS_H
#define KRETRY_OFFSETS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
        int64_t *offs; /* ring of tracked offsets; negative = done */
        size_t cap, head, cnt;
        int64_t next; /* committable offset once everything tracked is done */
} kretry_offsets_t;

void kretry_offsets_init(kretry_offsets_t *t);
void kretry_offsets_free(kretry_offsets_t *t);

enum {
        KRETRY_OFFSETS_OUT_OF_ORDER = -1, /* not above the last tracked */
        KRETRY_OFFSETS_NO_MEM       = -2  /* the ring could not grow */
};

/* Track @p offset as in flight. Returns 0; KRETRY_OFFSETS_OUT_OF_ORDER when
 * @p offset does not increase (the caller's bug: it is ignored); or
 * KRETRY_OFFSETS_NO_MEM, nothing changed: the offset is not tracked, so the
 * caller must not let anything after it complete (committable() would pass
 * it) and must add it again later. */
int kretry_offsets_add(kretry_offsets_t *t, int64_t offset);

/* 1 when @p offset is tracked and not done yet. */
int kretry_offsets_pending(const kretry_offsets_t *t, int64_t offset);

/* Mark @p offset done. Returns 1 when the committable offset advanced, 0 when
 * not, -1 when @p offset is not tracked. */
int kretry_offsets_done(kretry_offsets_t *t, int64_t offset);

/* The offset to commit (next to consume), or -1 when nothing is done yet. */
int64_t kretry_offsets_committable(const kretry_offsets_t *t);

/* Where a new owner resumes: the committable offset, or while nothing is
 * done yet the lowest offset tracked; -1 when nothing is tracked. */
int64_t kretry_offsets_resume_at(const kretry_offsets_t *t);

/* Offsets still in flight. */
size_t kretry_offsets_inflight(const kretry_offsets_t *t);

/*
 * Decided offsets above the committed one, carried in the commit's metadata
 * (the idea of Confluent's Parallel Consumer): under ordering=key messages
 * of other keys overtake one that waits behind its own key, so a partition
 * handed over (a clean stop, a revocation) has offsets decided above the
 * lowest one still undecided, where its commit stops. The next owner reads
 * them with the committed offset and acknowledges them unhandled (adapter
 * restore.c, route.c admit): nothing decided is handled again.
 *
 * Text, after KRETRY_DECIDED_METADATA: ranges "<from>+<count>" separated
 * by ",", <from> relative to the committed offset, increasing; offsets a
 * range spans that were never consumed (compaction, transaction markers)
 * do not exist. Dropping a range is always safe (its offsets are handled
 * again), so a set that does not fit is cut.
 */
#define KRETRY_DECIDED_METADATA "kretry-decided:"
/* Room for the metadata: below Kafka's offset.metadata.max.bytes (4096). */
#define KRETRY_DECIDED_MAX 3072

/* Decided offsets read from a commit: [r[2i], r[2i+1]) ranges. */
typedef struct {
        int64_t *r;
        size_t cnt;
} kretry_decided_t;

/* The decided offsets above where a new owner resumes (resume_at, which
 * *@p base gets) written into @p buf (KRETRY_DECIDED_MAX bytes or fewer):
 * those this assignment tracked as done, and of @p inherited (what the
 * previous owner's commit said was decided, NULL none) those above the
 * last tracked offset, not yet consumed again: a rolling restart hands the
 * set from owner to owner however little each consumed. The metadata's
 * length, 0 when nothing is decided above @p base. */
size_t kretry_offsets_decided(const kretry_offsets_t *t,
                              const kretry_decided_t *inherited,
                              int64_t *base,
                              char *buf,
                              size_t size);

/* kretry_decided_parse: malformed (or memory short), and ranges that end
 * past @p limit. */
#define KRETRY_DECIDED_MALFORMED -1
#define KRETRY_DECIDED_BEYOND -2

/* Parse commit metadata @p md (@p len bytes, not terminated) of a commit at
 * @p base into @p d (empty before). The metadata is untrusted: any client
 * allowed to commit for the group can write it, and a range taken on its
 * word acknowledges messages unhandled. So every range must end at or
 * before @p limit (the partition's end offset when the assignment began:
 * nothing past it can have been decided; INT64_MAX for metadata this
 * instance wrote), and the text must be one kretry writes (at most
 * KRETRY_DECIDED_MAX bytes). 0 when read, or when it is not kretry's
 * decided set (nothing read); KRETRY_DECIDED_MALFORMED or
 * KRETRY_DECIDED_BEYOND with nothing read (the offsets are handled
 * again). */
int kretry_decided_parse(kretry_decided_t *d,
                         int64_t base,
                         int64_t limit,
                         const void *md,
                         size_t len);
/* 1 when @p offset is in @p d. */
int kretry_decided_has(const kretry_decided_t *d, int64_t offset);
void kretry_decided_free(kretry_decided_t *d);

/*
 * Test only, never set in production: when set and it returns nonzero for
 * @p site, that allocation fails as if memory were exhausted. Sites:
 * "offsets" (this tracker's ring), "record" and "reserve" (route.c: a copy's
 * record and the one kept in reserve), "metadata" (commit.c: a commit's
 * decided-above offsets). Called on the adapter's thread.
 */
extern int (*kretry_test_alloc_fails)(const char *site);

#endif
