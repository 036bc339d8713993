// Wrong drill 01: exclusive_to_inclusive's loop stops one element early
// (i + 1 < n), so incl[n - 1] keeps the grader's poison. The rest is right.
// Right verdict: FAIL on exclusive_to_inclusive, diagnosed as what it is ("only the last element
// is wrong, and it was never written ... does the loop stop one short"), not as the shift
// incl[i] = excl[i + 1] that an earlier grader named here.

#include <cstddef>

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i + 1 < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) excl[i] = i == 0 ? 0 : incl[i - 1];
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == 0 ? 0 : excl[n - 1] + in[n - 1];
}
