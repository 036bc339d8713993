// Correct drill 01 whose helpers, with external linkage, share their names with the
// drivers' internals: run, fail, readWords, writeWords, same, fold, put, openDevice,
// and classes Reader and Guarded. Right verdict: PASS (a name clash is the grader's bug).

#include <cstddef>
#include <cstdlib>
#include <vector>

struct Reader {
    const long long* at;
    long long next() { return *at++; }
};

template <typename T>
struct Guarded {
    T value;
};

long long fold(const long long* a, const long long* b, std::size_t i) { return a[i] + b[i]; }
bool same(long long a, long long b) { return a == b; }
void put(long long* out, std::size_t i, long long v) { out[i] = v; }
void fail(const char* why) { (void)why; std::abort(); }
std::vector<long long> readWords(const long long* p, std::size_t n) { return std::vector<long long>(p, p + n); }
void writeWords(long long* out, const std::vector<long long>& w) {
    for (std::size_t i = 0; i < w.size(); ++i) out[i] = w[i];
}
int openDevice() { return 0; }
int run(int x) { return x + openDevice(); }

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) put(incl, i, fold(excl, in, i));
}

void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    if (n == 0) return;
    std::vector<long long> shifted(n);
    shifted[0] = run(0);
    for (std::size_t i = 1; i < n; ++i) shifted[i] = incl[i - 1];
    writeWords(excl, shifted);
}

long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    if (same(static_cast<long long>(n), 0)) return 0;
    Reader last{excl + n - 1};
    Guarded<long long> total{last.next() + in[n - 1]};
    if (readWords(&total.value, 1).size() != 1) fail("impossible");
    return total.value;
}
