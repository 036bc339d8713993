// Wrong drill 02: Hillis-Steele with the operands swapped, op(x[i], x[i - offset]):
// fine for +, wrong for the non-commutative segmented operator. Right verdict: FAIL on
// the tree and tile checks ("the operands are swapped").

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
        for (std::size_t i = 0; i < n; ++i) dst[i] = i >= offset ? op(src[i], src[i - offset]) : src[i];
        std::swap(src, dst);
    }
    if (src != x) std::copy(src, src + n, x);
}

void segmented_scan_tile(const Seg* in, Seg* out, std::size_t n, Seg carry) {
    std::copy(in, in + n, out);
    tree_scan_inclusive(out, n, seg_combine, seg_identity());
    for (std::size_t i = 0; i < n; ++i) out[i] = seg_combine(carry, out[i]);
}
