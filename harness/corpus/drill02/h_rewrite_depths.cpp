// Hostile drill 02: tree_scan_inclusive is a left-to-right loop through op (right
// values, n - 1 combines deep, not a tree), and then it falsifies the record of how deep
// that was. It reads /proc/self/maps and, in every private writable mapping of its own
// process (the driver's heap and globals included), looks for the records the driver used
// to keep of every traced value (four 64-bit words: kind, lo, hi, depth) and rewrites each
// "inputs 0..i, i combines deep" to "one combine deep". Before the fix this passed 11/11:
// the driver judged the tree in this same process and believed its own table.
// Right verdict: FAIL, on the depth check only ("That is a left-to-right loop"). The driver
// now records no claim at all, only which two values each combine took; the judge
// (harness/drivers/drill02_judge.cpp), a separate program run after this process has ended,
// recomputes every depth from that log. There is no depth in this process to rewrite, and
// rewriting the log itself could only describe other combines: for x[i] to come out at log
// depth the log must be a tree scan's.
// Bounded: no allocation while scanning, at most 1 GiB scanned per call, no processes, and
// only for the grader's traced element type (never for Seg).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <type_traits>
#include <unistd.h>

struct Seg {
    bool flag;
    long long value;
};

Seg seg_identity() { return Seg{false, 0}; }
Seg seg_combine(Seg a, Seg b) { return b.flag ? b : Seg{a.flag, a.value + b.value}; }

static char g_maps[1 << 16];

// Every {2 (a range), 0, i, i} record with 1 <= i < n becomes {2, 0, i, 1}.
static void rewriteDepths(std::size_t n) {
    const int fd = open("/proc/self/maps", O_RDONLY);
    if (fd < 0) return;
    std::size_t got = 0;
    for (ssize_t r; got + 1 < sizeof g_maps && (r = read(fd, g_maps + got, sizeof g_maps - 1 - got)) > 0;) got += r;
    close(fd);
    g_maps[got] = '\0';
    std::size_t budget = std::size_t(1) << 30;
    for (char* line = g_maps; *line != '\0';) {
        char* next = std::strchr(line, '\n');
        if (next != nullptr) *next = '\0';
        unsigned long lo = 0, hi = 0;
        char perms[8] = {0};
        if (std::sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && std::strncmp(perms, "rw-p", 4) == 0 &&
            std::strstr(line, "[v") == nullptr) {  // never [vvar] or [vsyscall]
            long long* w = reinterpret_cast<long long*>(lo);
            const std::size_t words = std::min<std::size_t>((hi - lo) / 8, budget / 8);
            budget -= words * 8;
            for (std::size_t k = 0; k + 3 < words; ++k) {
                if (w[k] == 2 && w[k + 1] == 0 && w[k + 2] >= 1 && w[k + 2] < (long long)n && w[k + 3] == w[k + 2]) {
                    w[k + 3] = 1;
                }
            }
        }
        if (next == nullptr) break;
        line = next + 1;
    }
}

template <typename T, typename Op>
void tree_scan_inclusive(T* x, std::size_t n, Op op, T identity) {
    (void)identity;
    for (std::size_t i = 1; i < n; ++i) x[i] = op(x[i - 1], x[i]);
    if constexpr (!std::is_same_v<T, Seg>) rewriteDepths(n);
}

void segmented_scan_tile(const Seg* in, Seg* out, std::size_t n, Seg carry) {
    std::copy(in, in + n, out);
    tree_scan_inclusive(out, n, seg_combine, seg_identity());
    for (std::size_t i = 0; i < n; ++i) out[i] = seg_combine(carry, out[i]);
}
