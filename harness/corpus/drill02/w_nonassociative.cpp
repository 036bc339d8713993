// Wrong drill 02: seg_combine restarts at a head in a (a.flag) instead of b, and
// keeps only b's flag: right on some pairs, and not associative, so every tree
// bracketing gives its own answer. Right verdict: FAIL ("is not associative").

#include <algorithm>
#include <cstddef>
#include <vector>

struct Seg {
    bool flag;
    long long value;
};

Seg seg_identity() { return Seg{false, 0}; }

Seg seg_combine(Seg a, Seg b) {
    if (b.flag) return b;
    if (a.flag) return Seg{false, a.value + b.value};
    return Seg{b.flag, b.value};
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
    std::copy(in, in + n, out);
    tree_scan_inclusive(out, n, seg_combine, seg_identity());
    for (std::size_t i = 0; i < n; ++i) out[i] = seg_combine(carry, out[i]);
}

