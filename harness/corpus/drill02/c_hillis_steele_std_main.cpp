// Correct drill 02: double-buffered Hillis-Steele with `using namespace std`, an
// unguarded main() that returns 1 if it ever runs inside the grader, and the Op
// taken by forwarding reference. Right verdict: PASS ("your main() is not used").

#include <cstddef>
#include <cstdio>
#include <utility>
#include <vector>

using namespace std;

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
void tree_scan_inclusive(T* x, size_t n, Op&& op, T identity) {
    (void)identity;
    vector<T> a(x, x + n), b(x, x + n);
    for (size_t offset = 1; offset < n; offset *= 2) {
        for (size_t i = 0; i < n; ++i) b[i] = i >= offset ? op(a[i - offset], a[i]) : a[i];
        swap(a, b);
    }
    for (size_t i = 0; i < n; ++i) x[i] = a[i];
}

void segmented_scan_tile(const Seg* in, Seg* out, size_t n, Seg carry) {
    for (size_t i = 0; i < n; ++i) out[i] = in[i];
    tree_scan_inclusive(out, n, seg_combine, seg_identity());
    for (size_t i = 0; i < n; ++i) out[i] = seg_combine(carry, out[i]);
}

int main() {
    printf("FAILED: this main must never run inside the grader\n");
    return 1;
}
