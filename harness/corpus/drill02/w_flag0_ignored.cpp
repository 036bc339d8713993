// Wrong drill 02: segmented_scan_tile folds the carry into element 0 before the scan
// without looking at its flag, so a head at in[0] does not stop the carry and it leaks
// into the first segment. Right verdict: FAIL on segmented_scan_tile only ("leaked into
// the segment that starts at index 0").

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
    std::vector<T> buffer(x, x + n);
    T* src = x;
    T* dst = buffer.data();
    for (std::size_t offset = 1; offset < n; offset *= 2) {
        for (std::size_t i = 0; i < n; ++i) dst[i] = i >= offset ? op(src[i - offset], src[i]) : src[i];
        std::swap(src, dst);
    }
    if (src != x) std::copy(src, src + n, x);
}

void segmented_scan_tile(const Seg* in, Seg* out, std::size_t n, Seg carry) {
    if (n == 0) return;
    std::copy(in, in + n, out);
    out[0].value += carry.value;  // ignores in[0].flag
    out[0].flag = out[0].flag || carry.flag;
    tree_scan_inclusive(out, n, seg_combine, seg_identity());
}
