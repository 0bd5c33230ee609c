/* The rule tables' scan with a Hyperscan built for this machine, from C: is the wheel's
 * portable build (no AVX2 in its code) what holds the scan back? (benchmarks/README.md,
 * issue 43's sixth round: it is not.)
 *
 *   python benchmarks/scan_floor.py --dump-patterns /tmp/patterns.txt     # prints the flags
 *   cc -O2 benchmarks/hs_host_scan.c -lhs -o /tmp/hs_host_scan            # libhyperscan-dev
 *   taskset -c 0 /tmp/hs_host_scan /tmp/patterns.txt FLAGS LOG [FIRST_N_PATTERNS]
 *
 * Compiles the patterns (one a line, ids in order) for this host, maps LOG (populated), and
 * scans it three times in 16 MB calls as the batch engine's windows, a callback counting the
 * matches; prints the database's platform and each scan's seconds. FIRST_N_PATTERNS: only the
 * first N (the rule literals come first: `Prefilter.literal_count` of them). */
#include <hs/hs.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_PATTERNS 4096
#define PIECE (16L << 20)

static long hits;

static int on_match(unsigned int id, unsigned long long from, unsigned long long to, unsigned int flags, void *ctx) {
    (void)id; (void)from; (void)to; (void)flags; (void)ctx;
    hits++;
    return 0;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s PATTERNS FLAGS LOG [FIRST_N_PATTERNS]\n", argv[0]);
        return 2;
    }
    FILE *pf = fopen(argv[1], "r");
    if (pf == NULL) { perror(argv[1]); return 2; }
    static char *patterns[MAX_PATTERNS];
    static unsigned flags[MAX_PATTERNS], ids[MAX_PATTERNS];
    static char line[1 << 16];
    unsigned n = 0, flag = (unsigned)atoi(argv[2]);
    while (n < MAX_PATTERNS && fgets(line, sizeof line, pf)) {
        line[strcspn(line, "\n")] = 0;
        patterns[n] = strdup(line);
        flags[n] = flag;
        ids[n] = n;
        n++;
    }
    fclose(pf);
    if (argc > 4 && (unsigned)atoi(argv[4]) < n) n = (unsigned)atoi(argv[4]);
    hs_database_t *db;
    hs_compile_error_t *error;
    if (hs_compile_multi((const char *const *)patterns, flags, ids, n, HS_MODE_BLOCK, NULL, &db, &error) != HS_SUCCESS) {
        fprintf(stderr, "compile: %s\n", error->message);
        return 1;
    }
    char *info;
    hs_database_info(db, &info);
    printf("%u patterns; %s\n", n, info);
    hs_scratch_t *scratch = NULL;
    if (hs_alloc_scratch(db, &scratch) != HS_SUCCESS) { fprintf(stderr, "scratch\n"); return 1; }
    int fd = open(argv[3], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) { perror(argv[3]); return 2; }
    const char *data = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (data == MAP_FAILED) { perror("mmap"); return 2; }
    for (int round = 0; round < 3; round++) {
        double start = now();
        hits = 0;
        for (off_t at = 0; at < st.st_size; at += PIECE) {
            off_t len = st.st_size - at < PIECE ? st.st_size - at : PIECE;
            hs_scan(db, data + at, (unsigned)len, 0, scratch, on_match, NULL);
        }
        printf("scan %.3f s (%ld matches) for %.0f MiB\n", now() - start, hits, st.st_size / 1048576.0);
    }
    return 0;
}
