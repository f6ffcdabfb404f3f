/*
 * A standalone driver for the fuzz targets, so they run in every build
 * (gcc, sanitizers) as bounded CTest cases: each seed of the corpus
 * directories given on the command line, then --iterations inputs mutated
 * from them (byte flips, cuts, insertions, splices; deterministic from
 * --seed). With clang and -DKRETRY_FUZZ=ON the same targets link against
 * libFuzzer instead and this file is not used.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define KF_MAX_SEEDS 256
#define KF_MAX_INPUT 65536

static uint64_t rng = 0x9E3779B97F4A7C15ULL;

static uint64_t next(void) {
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        return rng * 0x2545F4914F6CDD1DULL;
}

static unsigned char *seeds[KF_MAX_SEEDS];
static size_t seed_len[KF_MAX_SEEDS];
static int seed_cnt;

static void add_seed(const unsigned char *d, size_t n) {
        if (seed_cnt == KF_MAX_SEEDS || n > KF_MAX_INPUT)
                return;
        seeds[seed_cnt] = malloc(n ? n : 1);
        memcpy(seeds[seed_cnt], d, n);
        seed_len[seed_cnt++] = n;
}

static void load_dir(const char *dir) {
        DIR *d = opendir(dir);
        struct dirent *e;
        if (!d) {
                fprintf(stderr, "fuzz: cannot open %s\n", dir);
                exit(2);
        }
        while ((e = readdir(d))) {
                char path[4096];
                unsigned char buf[KF_MAX_INPUT];
                if (e->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
                FILE *f = fopen(path, "rb");
                if (!f)
                        continue;
                size_t n = fread(buf, 1, sizeof(buf), f);
                fclose(f);
                add_seed(buf, n);
        }
        closedir(d);
}

/* One mutation of a random seed into @p out; returns its length. */
static size_t mutate(unsigned char *out) {
        int s    = (int)(next() % (uint64_t)seed_cnt);
        size_t n = seed_len[s];
        memcpy(out, seeds[s], n);
        int rounds = 1 + (int)(next() % 4);
        for (int r = 0; r < rounds; r++) {
                switch (next() % 5) {
                case 0: /* flip a byte */
                        if (n)
                                out[next() % n] ^=
                                        (unsigned char)(1 + next() % 255);
                        break;
                case 1: /* cut */
                        if (n)
                                n = next() % n;
                        break;
                case 2: /* insert random bytes */
                        if (n + 8 < KF_MAX_INPUT) {
                                size_t at = n ? next() % n : 0;
                                memmove(out + at + 8, out + at, n - at);
                                for (int i = 0; i < 8; i++)
                                        out[at + i] = (unsigned char)next();
                                n += 8;
                        }
                        break;
                case 3: { /* splice in another seed's tail */
                        int o     = (int)(next() % (uint64_t)seed_cnt);
                        size_t at = n ? next() % n : 0;
                        size_t k  = seed_len[o] ? next() % seed_len[o] : 0;
                        size_t m  = seed_len[o] - k;
                        if (at + m <= KF_MAX_INPUT) {
                                memcpy(out + at, seeds[o] + k, m);
                                n = at + m;
                        }
                        break;
                }
                default: /* interesting bytes */
                        if (n) {
                                static const unsigned char v[] = {
                                        0,    0xff, 0x7f, 0x80,
                                        '\n', ':',  '{',  '-'};
                                out[next() % n] = v[next() % sizeof(v)];
                        }
                }
        }
        return n;
}

int main(int argc, char **argv) {
        long iterations = 10000;
        for (int i = 1; i < argc; i++) {
                if (!strcmp(argv[i], "--iterations") && i + 1 < argc)
                        iterations = atol(argv[++i]);
                else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
                        rng = strtoull(argv[++i], NULL, 0) | 1;
                else
                        load_dir(argv[i]);
        }
        add_seed((const unsigned char *)"", 0);
        for (int s = 0; s < seed_cnt; s++)
                LLVMFuzzerTestOneInput(seeds[s], seed_len[s]);
        static unsigned char buf[KF_MAX_INPUT];
        for (long i = 0; i < iterations; i++)
                LLVMFuzzerTestOneInput(buf, mutate(buf));
        printf("%d seeds, %ld mutated inputs: no crash\n", seed_cnt,
               iterations);
        for (int s = 0; s < seed_cnt; s++)
                free(seeds[s]);
        return 0;
}
