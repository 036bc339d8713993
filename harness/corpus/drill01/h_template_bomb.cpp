// Hostile drill 01: a template that makes about 16 million instantiations (a 250-cube of
// them, each the sum of three neighbours; never deeper than g++'s limit of 900), which
// burns the compiler's time and memory. A bomb like it burned the compile's 120 s of CPU
// before and was reported as "internal compiler error". Right verdict: FAIL at "builds"
// within the compile limits, the report naming the limit first (CPU or memory, whichever
// this machine reaches first).

#include <cstddef>

template <int A, int B, int C> struct Cube {
    static const long long v = Cube<A - 1, B, C>::v + Cube<A, B - 1, C>::v + Cube<A, B, C - 1>::v;
};
template <int B, int C> struct Cube<0, B, C> { static const long long v = 1; };
template <int A, int C> struct Cube<A, 0, C> { static const long long v = 1; };
template <int A, int B> struct Cube<A, B, 0> { static const long long v = 1; };

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) excl[i] = i == 0 ? 0 : incl[i - 1];
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == 0 ? 0 : excl[n - 1] + in[n - 1];
}

long long bomb() { return Cube<250, 250, 250>::v; }
