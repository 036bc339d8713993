// Hostile drill 02: correct, but tree_scan_inclusive spins on the CPU for up to 90 s
// of wall time when n == 3 (one of the tracer's sizes; no tile case has n = 3).
// Right verdict: FAIL on the tree checks, naming the "time limit" (CPU or wall).

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

struct Seg {
    bool flag;
    long long value;
};

Seg seg_identity() { return Seg{false, 0}; }
Seg seg_combine(Seg a, Seg b) { return b.flag ? b : Seg{a.flag, a.value + b.value}; }

template <typename T, typename Op>
void tree_scan_inclusive(T* x, std::size_t n, Op op, T identity) {
    (void)identity;
    if (n == 3) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(90);
        volatile unsigned long long spins = 0;
        while (std::chrono::steady_clock::now() < until) spins = spins + 1;
    }
    std::vector<T> src(x, x + n), dst(x, x + n);
    for (std::size_t offset = 1; offset < n; offset *= 2) {
        for (std::size_t i = 0; i < n; ++i) dst[i] = i >= offset ? op(src[i - offset], src[i]) : src[i];
        src.swap(dst);
    }
    std::copy(src.begin(), src.end(), x);
}

void segmented_scan_tile(const Seg* in, Seg* out, std::size_t n, Seg carry) {
    std::copy(in, in + n, out);
    tree_scan_inclusive(out, n, seg_combine, seg_identity());
    for (std::size_t i = 0; i < n; ++i) out[i] = seg_combine(carry, out[i]);
}
