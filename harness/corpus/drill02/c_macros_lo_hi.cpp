// Correct drill 02 whose macros collide with the drivers' field and type names:
// lo, hi, kind, depth, N, max, Traced, TracedOp, Op (defined after the includes, and
// never used by this file's own code in a way they break). Right verdict: PASS.

#include <algorithm>
#include <cstddef>
#include <vector>

#define N 1024
#define lo 0
#define hi 1
#define kind 2
#define depth 3
#define max
#define Traced long
#define TracedOp int

struct Seg {
    bool flag;
    long long value;
};

Seg seg_identity() { return Seg{false, lo}; }

Seg seg_combine(Seg a, Seg b) { return b.flag ? b : Seg{a.flag, a.value + b.value}; }

template <typename T, typename F>
void tree_scan_inclusive(T* x, std::size_t n, F op, T identity) {
    (void)identity;
    static_assert(N > hi && kind < depth, "macros in use");
    std::vector<T> src(x, x + n), dst(n);
    for (std::size_t offset = hi; offset < n; offset *= 2) {
        for (std::size_t i = lo; i < n; ++i) dst[i] = i >= offset ? op(src[i - offset], src[i]) : src[i];
        src.swap(dst);
    }
    std::copy(src.begin(), src.end(), x);
}

void max segmented_scan_tile(const Seg* in, Seg* out, std::size_t n, Seg carry) {
    std::copy(in, in + n, out);
    tree_scan_inclusive(out, n, seg_combine, seg_identity());
    for (std::size_t i = lo; i < n; ++i) out[i] = seg_combine(carry, out[i]);
}
