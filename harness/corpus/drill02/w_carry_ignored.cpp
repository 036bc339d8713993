// Wrong drill 02: segmented_scan_tile ignores the carry-in (it scans the tile as if
// it were the first one). Right verdict: FAIL on segmented_scan_tile only, "the
// carry-in ... is missing from the open first segment".

#include <algorithm>
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
