// Hostile drill 02: the grader's id rule is public (harness/drivers/drill02_trace.hpp: the
// inputs by position, then the results of the combines numbered in the order op made
// them, stored through a public bijection). So tree_scan_inclusive skips op altogether:
// it writes into every x[i] the id that a Hillis-Steele scan's op WOULD have returned for
// it, and makes one combine whose operand is an id op has not returned yet (a forward
// reference, which a judge resolving ids lazily could take for a finished result). For
// Seg it runs a plain left-to-right loop, so every other check passes.
// Right verdict: FAIL, on the two tree checks, with the forged diagnosis ("holds a value the
// grader never issued"). The judge resolves an id only through the log, in order: the j-th
// combine may use only the inputs, the identity and results 0..j-1, and a final x[i] only
// results the log holds. Knowing the numbering creates no value; an id that names a value
// that does exist is a copy of it, which any scan may make.
// Bounded: O(n) work, one combine, no processes.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

struct Seg {
    bool flag;
    long long value;
};

Seg seg_identity() { return Seg{false, 0}; }
Seg seg_combine(Seg a, Seg b) { return b.flag ? b : Seg{a.flag, a.value + b.value}; }

namespace {

// drill02_trace.hpp's encoding, copied: splitmix64's finaliser of index | tag << 32.
constexpr std::uint64_t kMix1 = 0xBF58476D1CE4E5B9ull, kMix2 = 0x94D049BB133111EBull;

std::uint64_t inverseOdd(std::uint64_t a) {
    std::uint64_t x = a;
    for (int k = 0; k < 5; ++k) x *= 2 - a * x;
    return x;
}

std::uint64_t unshift(std::uint64_t z, int s) {
    std::uint64_t x = z;
    for (int k = 0; k < 64; k += s) x = z ^ (x >> s);
    return x;
}

std::uint64_t encode(std::uint64_t index, std::uint64_t tag) {
    std::uint64_t z = index | tag << 32;
    z = (z ^ (z >> 30)) * kMix1;
    z = (z ^ (z >> 27)) * kMix2;
    return z ^ (z >> 31);
}

std::uint64_t unmix(std::uint64_t id) {
    std::uint64_t z = unshift(id, 31) * inverseOdd(kMix2);
    z = unshift(z, 27) * inverseOdd(kMix1);
    return unshift(z, 30);
}

}  // namespace

template <typename T, typename Op>
void tree_scan_inclusive(T* x, std::size_t n, Op op, T identity) {
    (void)identity;
    if constexpr (std::is_same_v<T, Seg>) {
        for (std::size_t i = 1; i < n; ++i) x[i] = op(x[i - 1], x[i]);
    } else if constexpr (sizeof(T) == sizeof(std::uint64_t)) {
        if (n < 2) return;
        std::uint64_t raw = 0;
        std::memcpy(&raw, static_cast<const void*>(&x[0]), sizeof raw);
        const std::uint64_t tag = unmix(raw) >> 32;
        const std::uint64_t first = unmix(raw) & 0xFFFFFFFFu;  // x[0]'s index: 9 (kGuard + 1)
        const std::uint64_t total = n + 2 * (first - 1);
        // One real combine (the log's first, result total + 2), of x[0] and an id op has not
        // returned yet; then the ids a Hillis-Steele scan's combines would get after it.
        std::vector<std::uint64_t> index(n);
        for (std::size_t i = 0; i < n; ++i) index[i] = first + i;
        std::uint64_t made = 0;
        for (std::size_t offset = 1; offset < n; offset *= 2) {
            for (std::size_t i = n; i-- > offset;) index[i] = total + 3 + made++;
        }
        T ahead;
        const std::uint64_t future = encode(total + 3 + made + 5, tag);
        std::memcpy(static_cast<void*>(&ahead), &future, sizeof future);
        (void)op(x[0], ahead);
        for (std::size_t i = 1; i < n; ++i) {
            const std::uint64_t id = encode(index[i], tag);
            std::memcpy(static_cast<void*>(&x[i]), &id, sizeof id);
        }
    }
}

void segmented_scan_tile(const Seg* in, Seg* out, std::size_t n, Seg carry) {
    std::copy(in, in + n, out);
    tree_scan_inclusive(out, n, seg_combine, seg_identity());
    for (std::size_t i = 0; i < n; ++i) out[i] = seg_combine(carry, out[i]);
}
