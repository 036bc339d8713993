// Wrong drill 02: tree_scan_inclusive is a hand-written left-to-right loop: right
// values, n - 1 combines deep. Right verdict: FAIL on the tree-depth check only
// ("That is a left-to-right loop").

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
    return Seg{a.flag, a.value + b.value};
}

template <typename T, typename Op>
void tree_scan_inclusive(T* x, std::size_t n, Op op, T identity) {
    (void)identity;
    for (std::size_t i = 1; i < n; ++i) x[i] = op(x[i - 1], x[i]);
}

void segmented_scan_tile(const Seg* in, Seg* out, std::size_t n, Seg carry) {
    std::copy(in, in + n, out);
    tree_scan_inclusive(out, n, seg_combine, seg_identity());
    for (std::size_t i = 0; i < n; ++i) out[i] = seg_combine(carry, out[i]);
}
