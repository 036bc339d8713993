// Hostile drill 01: #include of a pseudo-terminal master. Opening /dev/ptmx makes a new
// pty whose reads block forever, so a compile handed a full /dev (as bubblewrap's --dev
// gives) sat out the whole compile wall limit (180 s then). A compile now gets a /dev
// holding only /dev/null. Right verdict: FAIL at "builds", at once, with the compiler's
// own "No such file or directory".

#include <cstddef>
#include "/dev/ptmx"

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) excl[i] = i == 0 ? 0 : incl[i - 1];
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    return n == 0 ? 0 : excl[n - 1] + in[n - 1];
}
