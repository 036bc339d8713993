// Hostile drill 01: each function computes nothing and ends the process with
// status 0 before the driver can write its results: quick_exit, _exit and exit.
// Right verdict: FAIL on all three checks.

#include <cstddef>
#include <cstdlib>
#include <unistd.h>

void exclusive_to_inclusive(const long long*, const long long*, long long*, std::size_t) { std::quick_exit(0); }
void inclusive_to_exclusive(const long long*, long long*, std::size_t) { _exit(0); }
long long total_from_exclusive(const long long*, const long long*, std::size_t) { std::exit(0); }
