// Correct drill 01 with its own sandbox main() kept inside #ifndef SCANLAB_GRADER,
// as the starter asks. Tries: nothing unusual; the baseline every grader must pass.
// Right verdict: PASS.

#include <cstddef>
#include <cstdio>

constexpr long long kIdentity = 0;

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    if (n == 0) return;
    excl[0] = kIdentity;
    for (std::size_t i = 1; i < n; ++i) excl[i] = incl[i - 1];
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == 0 ? kIdentity : excl[n - 1] + in[n - 1];
}

#ifndef SCANLAB_GRADER
int main() {
    const long long in[4] = {3, 1, 7, 0}, excl[4] = {0, 3, 4, 11};
    long long incl[4];
    exclusive_to_inclusive(in, excl, incl, 4);
    std::printf("%lld %lld %lld %lld, total %lld\n", incl[0], incl[1], incl[2], incl[3],
                total_from_exclusive(in, excl, 4));
    return 0;
}
#endif
