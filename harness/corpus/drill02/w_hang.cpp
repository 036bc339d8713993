// Wrong drill 02: tree_scan_inclusive's level loop never advances (offset * 2 is
// computed and thrown away), so it never returns. Right verdict: FAIL on the tree and
// tile checks ("did not finish", the time limit); the grader itself returns.

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
    for (std::size_t offset = 1; offset < n; offset * 2) {  // never grows
        for (std::size_t i = 0; i < n; ++i) buffer[i] = i >= offset ? op(x[i - offset], x[i]) : x[i];
        std::copy(buffer.begin(), buffer.end(), x);
    }
}

void segmented_scan_tile(const Seg* in, Seg* out, std::size_t n, Seg carry) {
    std::copy(in, in + n, out);
    tree_scan_inclusive(out, n, seg_combine, seg_identity());
    for (std::size_t i = 0; i < n; ++i) out[i] = seg_combine(carry, out[i]);
}
