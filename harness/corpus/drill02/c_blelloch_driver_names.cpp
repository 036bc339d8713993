// Correct drill 02: Blelloch (up-sweep, down-sweep, padded with the identity), with
// external-linkage helpers named like the drivers' internals: fold, hillisSteele,
// blelloch, same, run, fail, put, readWords, writeWords, openDevice, Reader, Guarded.
// Right verdict: PASS.

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <vector>

struct Seg {
    bool flag;
    long long value;
};

struct Reader {
    std::size_t at = 0;
};
template <typename T>
struct Guarded {
    std::vector<T> storage;
};

Seg seg_identity() { return Seg{false, 0}; }
Seg seg_combine(Seg a, Seg b) { return b.flag ? b : Seg{a.flag, a.value + b.value}; }

bool same(const Seg& a, const Seg& b) { return a.flag == b.flag && a.value == b.value; }
void fail(const char* why) { (void)why; std::abort(); }
void put(Seg* out, std::size_t i, Seg s) { out[i] = s; }
int openDevice() { return 0; }
int run() { return openDevice(); }
std::vector<long long> readWords(const char*) { return {}; }
void writeWords(const char*, const std::vector<long long>&) {}
std::size_t hillisSteele(std::size_t n) { return n; }  // a decoy: not a scan
Seg fold(const Seg* x, std::size_t n) {
    Seg s = seg_identity();
    for (std::size_t i = 0; i < n; ++i) s = seg_combine(s, x[i]);
    return s;
}

template <typename T, typename Op>
void blelloch(T* x, std::size_t n, Op& op, T identity) {
    std::size_t p = 1;
    while (p < n) p *= 2;
    Guarded<T> t{std::vector<T>(p, identity)};
    std::copy(x, x + n, t.storage.begin());
    for (std::size_t d = 1; d < p; d *= 2)
        for (std::size_t i = 2 * d - 1; i < p; i += 2 * d) t.storage[i] = op(t.storage[i - d], t.storage[i]);
    t.storage[p - 1] = identity;
    for (std::size_t d = p / 2; d >= 1; d /= 2)
        for (std::size_t i = 2 * d - 1; i < p; i += 2 * d) {
            const T left = t.storage[i - d];
            t.storage[i - d] = t.storage[i];
            t.storage[i] = op(t.storage[i], left);
        }
    for (std::size_t i = 0; i < n; ++i) x[i] = op(t.storage[i], x[i]);  // exclusive -> inclusive
}

template <typename T, typename Op>
void tree_scan_inclusive(T* x, std::size_t n, Op op, T identity) {
    if (n == 0) return;
    blelloch(x, n, op, identity);
}

void segmented_scan_tile(const Seg* in, Seg* out, std::size_t n, Seg carry) {
    Reader r;
    for (; r.at < n; ++r.at) put(out, r.at, in[r.at]);
    if (run() != 0) fail("impossible");
    tree_scan_inclusive(out, n, seg_combine, seg_identity());
    for (std::size_t i = 0; i < n; ++i) out[i] = seg_combine(carry, out[i]);
    if (n > 0 && !same(out[n - 1], seg_combine(carry, fold(in, hillisSteele(n))))) fail("self-check");
}
