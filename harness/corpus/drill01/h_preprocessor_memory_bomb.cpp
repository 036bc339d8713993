// Hostile drill 01: a macro that doubles 38 times (2^38 copies of a 40-byte string): the
// preprocessor runs out of memory. g++ said "virtual memory exhausted", which the report
// passed on as a compiler problem. Right verdict: FAIL at "builds", naming the compiler's
// memory limit.

#include <cstddef>

#define B0 "0123456789012345678901234567890123456789"
#define B1 B0 B0
#define B2 B1 B1
#define B3 B2 B2
#define B4 B3 B3
#define B5 B4 B4
#define B6 B5 B5
#define B7 B6 B6
#define B8 B7 B7
#define B9 B8 B8
#define B10 B9 B9
#define B11 B10 B10
#define B12 B11 B11
#define B13 B12 B12
#define B14 B13 B13
#define B15 B14 B14
#define B16 B15 B15
#define B17 B16 B16
#define B18 B17 B17
#define B19 B18 B18
#define B20 B19 B19
#define B21 B20 B20
#define B22 B21 B21
#define B23 B22 B22
#define B24 B23 B23
#define B25 B24 B24
#define B26 B25 B25
#define B27 B26 B26
#define B28 B27 B27
#define B29 B28 B28
#define B30 B29 B29
#define B31 B30 B30
#define B32 B31 B31
#define B33 B32 B32
#define B34 B33 B33
#define B35 B34 B34
#define B36 B35 B35
#define B37 B36 B36
#define B38 B37 B37

const char* bomb = B38;

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) excl[i] = i == 0 ? 0 : incl[i - 1];
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == 0 ? 0 : excl[n - 1] + in[n - 1];
}
