// Correct drill 02: a recursive divide-and-conquer scan (scan each half, then fold the
// left half's total into the right half): depth ceil(log2 n), about (n/2) log2 n
// combines, no identity needed. Right verdict: PASS.

#include <cstddef>

struct Seg {
    bool flag;
    long long value;
};

Seg seg_identity() { return Seg{false, 0}; }

Seg seg_combine(Seg a, Seg b) { return b.flag ? b : Seg{a.flag, a.value + b.value}; }

template <typename T, typename Op>
void tree_scan_inclusive(T* x, std::size_t n, Op op, T identity) {
    if (n < 2) return;
    const std::size_t half = n / 2;
    tree_scan_inclusive(x, half, op, identity);
    tree_scan_inclusive(x + half, n - half, op, identity);
    const T left = x[half - 1];
    for (std::size_t i = half; i < n; ++i) x[i] = op(left, x[i]);
}

void segmented_scan_tile(const Seg* in, Seg* out, std::size_t n, Seg carry) {
    for (std::size_t i = 0; i < n; ++i) out[i] = in[i];
    tree_scan_inclusive(out, n, seg_combine, seg_identity());
    for (std::size_t i = 0; i < n; ++i) out[i] = seg_combine(carry, out[i]);
}
