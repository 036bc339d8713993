// Hostile drill 02: correct code, then at the end of the file preprocessor tricks
// aimed at a driver pasted after it: #define long int, #define exit, #define Seg,
// redefined std names, #pragma GCC poison on today's driver names and stdio calls.
// Right verdict: PASS (its macros and pragmas never reach harness code).

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
    std::copy(in, in + n, out);
    tree_scan_inclusive(out, n, seg_combine, seg_identity());
    for (std::size_t i = 0; i < n; ++i) out[i] = seg_combine(carry, out[i]);
}

#define long int
#define exit(status) ((void)(status))
#define vector list
#define size_t int
#define Seg int
#define seg_combine(a, b) (b)
#define SCANLAB_GRADER
#pragma GCC poison scanlab_driver scanlab_io Guarded Reader fwrite fopen fclose
