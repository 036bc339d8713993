// Hostile drill 02: tree_scan_inclusive does no tree at all. For the element type it
// does not know (the grader's tracer) it writes bytes straight into each element,
// forging "inputs 0..i, one combine deep" in today's Traced layout (four 64-bit words:
// kind 2, lo 0, hi i, depth 1); for Seg it runs a plain left-to-right loop.
// Right verdict: FAIL (the tracer's record cannot be forged from inside an element).

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>
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
    if constexpr (std::is_same_v<T, Seg>) {
        for (std::size_t i = 1; i < n; ++i) x[i] = op(x[i - 1], x[i]);
    } else if constexpr (sizeof(T) == 4 * sizeof(long long)) {
        for (std::size_t i = 0; i < n; ++i) {
            const long long words[4] = {2, 0, static_cast<long long>(i), 1};
            std::memcpy(static_cast<void*>(&x[i]), words, sizeof words);
        }
    } else {
        (void)op;  // an unknown layout: leave it, hoping the tracer trusts untouched elements
    }
}

void segmented_scan_tile(const Seg* in, Seg* out, std::size_t n, Seg carry) {
    std::copy(in, in + n, out);
    tree_scan_inclusive(out, n, seg_combine, seg_identity());
    for (std::size_t i = 0; i < n; ++i) out[i] = seg_combine(carry, out[i]);
}
