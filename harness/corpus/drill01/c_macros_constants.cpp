// Correct drill 01 that defines macros and constants the harness might use itself:
// #define N 1024, lo, hi, max, min, fail, and constants copied from the lesson and
// the drivers (kMaxThreadsPerBlock, kIdentity, kPoison, kGuard). Right verdict: PASS.

#include <cstddef>

constexpr unsigned int kMaxThreadsPerBlock = 1024;
constexpr long long kIdentity = 0;
constexpr long long kPoison = -999999999LL;
constexpr std::size_t kGuard = 8;
constexpr int kExitDriverError = 90;

#define N 1024
#define lo 0
#define hi 1
#define max
#define min
#define fail(x) (x)

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    static_assert(N == kMaxThreadsPerBlock && kGuard > lo && kPoison < hi && kExitDriverError > 0, "lesson constants");
    for (std::size_t i = lo; i < n; ++i) incl[i] = fail(excl[i] + in[i]);
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    for (std::size_t i = lo; i < n; ++i) excl[i] = i == lo ? kIdentity : incl[i - hi];
}

long long max total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == lo ? kIdentity : excl[n - hi] + in[n - hi];
}
