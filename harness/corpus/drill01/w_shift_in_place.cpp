// Wrong drill 01: inclusive_to_exclusive copies incl into excl, then shifts front to
// back inside excl, so each step reads the slot the previous step just wrote.
// Right verdict: FAIL on inclusive_to_exclusive only ("... inside one buffer ...").

#include <cstddef>
#include <vector>

constexpr long long kIdentity = 0;

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) excl[i] = incl[i];
    for (std::size_t i = 1; i < n; ++i) excl[i] = excl[i - 1];  // reads what it just wrote
    if (n > 0) excl[0] = kIdentity;
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == 0 ? kIdentity : excl[n - 1] + in[n - 1];
}
