// Correct drill 01 with Windows (CRLF) line endings throughout, including a
// backslash-continued macro, which only works if the compiler sees the file as is.
// Right verdict: PASS.

#include <cstddef>

#define SUM_AT(a, b, i) \
    ((a)[i] + (b)[i])

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) incl[i] = SUM_AT(excl, in, i);
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) excl[i] = i == 0 ? 0 : incl[i - 1];
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == 0 ? 0 : SUM_AT(excl, in, n - 1);
}

#ifndef SCANLAB_GRADER
int main() { return 0; }
#endif
