/* line_probe.c: the machine's limit for independent random 64-byte reads.
 *
 * A bloomkit batch query of a large filter is, at bottom, one random cache
 * line read per key (blocked layout) whose address does not depend on any
 * earlier read.  The fastest such a loop can go on this machine is set by
 * how many misses the core keeps in flight (10-12 line fill buffers on
 * x86) and by the TLB: with 4 KiB pages every probe of a 124 MB set is
 * also a page walk, with 2 MiB pages the walks mostly hit the STLB.
 *
 * Usage: line_probe BYTES [READS] [thp|nothp]
 *   BYTES  working-set size (rounded up to 2 MiB)
 *   READS  number of reads timed (default 2^22)
 *   thp    madvise(MADV_HUGEPAGE) on the set (transparent huge pages,
 *          when the kernel's setting is "madvise" or "always"); nothp
 *          (default) madvise(MADV_NOHUGEPAGE)
 * Prints one line: "bytes=N reads=N thp=0|1 huge_kib=N ns_per_read=X"
 * (the best of 3 timed passes in thread CPU time, so that time spent
 * descheduled on a shared machine does not count; huge_kib: AnonHugePages of this process
 * from /proc/self/smaps_rollup, -1 where unknown).
 *
 * The loop: the line offsets are drawn (xorshift64*) into an array before
 * the clock starts, so that the timed loop is loads only; 16 reads are
 * issued per step into 16 independent accumulators (no read's address
 * depends on another read), which is the pattern of the batch query with
 * its prefetch group.  The sum is printed so that no read is optimised
 * away. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define LP_LINE 64u
#define LP_HUGE (2u << 20)
#define LP_GROUP 16

static uint64_t lp_state = 0x9E3779B97F4A7C15ull;

static inline uint64_t lp_next(void)
{
    lp_state ^= lp_state >> 12;
    lp_state ^= lp_state << 25;
    lp_state ^= lp_state >> 27;
    return lp_state * 0x2545F4914F6CDD1Dull;
}

static double lp_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time: the machine is shared */
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long lp_huge_kib(void)
{
    char line[256];
    long kib = -1;
    FILE *fh = fopen("/proc/self/smaps_rollup", "r");
    if (fh == NULL)
        return -1;
    while (fgets(line, sizeof line, fh) != NULL)
        if (sscanf(line, "AnonHugePages: %ld kB", &kib) == 1)
            break;
    fclose(fh);
    return kib;
}

int main(int argc, char **argv)
{
    uint64_t bytes, reads, lines, sum = 0, *offs;
    int thp = 0;
    uint8_t *set;
    double best = 1e30;
    if (argc < 2) {
        fprintf(stderr, "usage: line_probe BYTES [READS] [thp|nothp]\n");
        return 2;
    }
    bytes = strtoull(argv[1], NULL, 10);
    reads = argc > 2 ? strtoull(argv[2], NULL, 10) : (1ull << 22);
    thp = argc > 3 && strcmp(argv[3], "thp") == 0;
    bytes = (bytes + LP_HUGE - 1) / LP_HUGE * LP_HUGE;
    if (bytes == 0 || reads < LP_GROUP) {
        fprintf(stderr, "line_probe: BYTES and READS must be positive\n");
        return 2;
    }
    /* over-allocate by one huge page and align, so that THP can back it */
    set = mmap(NULL, bytes + LP_HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (set == MAP_FAILED) {
        perror("line_probe: mmap");
        return 1;
    }
    set = (uint8_t *)(((uintptr_t)set + LP_HUGE - 1) / LP_HUGE * LP_HUGE);
    madvise(set, bytes, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    for (uint64_t i = 0; i < bytes; i += 8)
        *(uint64_t *)(set + i) = i * 0x9E3779B97F4A7C15ull; /* resident, not zero pages */
    lines = bytes / LP_LINE;
    reads -= reads % LP_GROUP;
    offs = malloc(reads * sizeof *offs);
    if (offs == NULL) {
        fprintf(stderr, "line_probe: no memory for %llu offsets\n", (unsigned long long)reads);
        return 1;
    }
    for (uint64_t r = 0; r < reads; r++)
        offs[r] = (uint64_t)(((unsigned __int128)lp_next() * lines) >> 64) * LP_LINE;
    for (int pass = 0; pass < 3; pass++) {
        uint64_t acc[LP_GROUP] = {0};
        double t0 = lp_now(), dt;
        for (uint64_t r = 0; r < reads; r += LP_GROUP) {
            for (int j = 0; j < LP_GROUP; j++)
                acc[j] += *(volatile uint64_t *)(set + offs[r + (uint64_t)j]);
        }
        dt = lp_now() - t0;
        for (int j = 0; j < LP_GROUP; j++)
            sum += acc[j];
        if (dt < best)
            best = dt;
    }
    printf("bytes=%llu reads=%llu thp=%d huge_kib=%ld ns_per_read=%.3f sum=%llu\n",
           (unsigned long long)bytes, (unsigned long long)reads, thp, lp_huge_kib(),
           best * 1e9 / (double)reads, (unsigned long long)(sum & 0xff));
    free(offs);
    return 0;
}
