// Wrong drill 02: segmented_scan_tile scans its input `in` in place (const cast
// away) and copies the result out: every value of out is right, in is changed.
// Right verdict: FAIL on segmented_scan_tile only ("changed its input").

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
    Seg* scratch = const_cast<Seg*>(in);
    tree_scan_inclusive(scratch, n, seg_combine, seg_identity());
    for (std::size_t i = 0; i < n; ++i) out[i] = seg_combine(carry, scratch[i]);
}
