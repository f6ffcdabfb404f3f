/*
 * version_mem KEYS [KEY_BYTES]: memory of kretry's version store holding
 * KEYS distinct keys, spread over BENCH_PARTITIONS stores (one per source
 * partition, as the adapter keeps them). No broker: the mock keeps at most
 * 5 MiB a partition, far fewer keys than a store may hold in production,
 * so this fills the stores directly through the engine's own code
 * (adapter/src/versions.c) and reports, per key:
 *   - the store's own accounting (kretry_keymap_memory, what the
 *     version_bytes counter reports),
 *   - heap in use (mallinfo2's uordblks, allocator overhead included),
 *   - resident memory (VmRSS), the figure an operator sees.
 * Keys are "key-" and a zero-padded number, KEY_BYTES long in all (default
 * 10; longer when KEYS needs more digits); every key gets version 1.
 */
#include "bench.h"
#include "versions.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* VmRSS, or with @p peak VmHWM (the peak: a store grows by rehashing into
 * a slot array twice the size, both held for a moment). */
static long rss_kb(int peak) {
        const char *want = peak ? "VmHWM:" : "VmRSS:";
        char line[256];
        long kb = -1;
        FILE *f = fopen("/proc/self/status", "r");
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (!strncmp(line, want, 6)) {
                        kb = atol(line + 6);
                        break;
                }
        fclose(f);
        return kb;
}

int main(int argc, char **argv) {
        if (argc < 2) {
                fprintf(stderr, "usage: version_mem KEYS [KEY_BYTES]\n");
                return 64;
        }
        long keys  = atol(argv[1]);
        int kbytes = argc > 2 ? atoi(argv[2]) : 10;
        if (keys <= 0 || kbytes < 5 || kbytes > 60) {
                fprintf(stderr,
                        "version_mem: KEYS > 0, 5 <= KEY_BYTES <= 60\n");
                return 64;
        }
        static kretry_versions_t v[BENCH_PARTITIONS];
        for (int p = 0; p < BENCH_PARTITIONS; p++)
                kretry_versions_init(&v[p]);
        long rss0           = rss_kb(0);
        struct mallinfo2 m0 = mallinfo2();
        int digits          = kbytes - 4;
        for (long n = keys - 1, d = 1; n >= 10; n /= 10)
                if (++d > digits)
                        digits = (int)d;
        kbytes = 4 + digits;
        char key[80];
        for (long i = 0; i < keys; i++) {
                snprintf(key, sizeof(key), "key-%0*ld", digits, i);
                if (kretry_versions_raise(&v[i % BENCH_PARTITIONS], key,
                                          (size_t)kbytes, 1) != 1) {
                        fprintf(stderr, "version_mem: raise failed at %ld\n",
                                i);
                        return 1;
                }
        }
        size_t own = 0;
        for (int p = 0; p < BENCH_PARTITIONS; p++)
                own += kretry_keymap_memory(&v[p].map);
        /* in use: small chunks plus mmapped ones (large slot arrays) */
        struct mallinfo2 m1 = mallinfo2();
        size_t heap = (m1.uordblks + m1.hblkhd) - (m0.uordblks + m0.hblkhd);
        long rss    = rss_kb(0) - rss0;
        long peak   = rss_kb(1) - rss0;
        printf("%ld keys of %d bytes in %d stores: store's own count %zu "
               "bytes (%.1f/key), heap %zu bytes (%.1f/key), RSS +%ld KB "
               "(%.1f bytes/key), peak RSS +%ld KB (%.1f bytes/key)\n",
               keys, kbytes, BENCH_PARTITIONS, own, (double)own / keys, heap,
               (double)heap / keys, rss, (double)rss * 1024 / keys, peak,
               (double)peak * 1024 / keys);
        for (int p = 0; p < BENCH_PARTITIONS; p++)
                kretry_versions_free(&v[p]);
        return 0;
}
