// Correct drill 01 written with `using namespace std` at file scope and the
// standard algorithms (std::partial_sum, std::exclusive_scan, std::copy) instead
// of loops. Right verdict: PASS.

#include <algorithm>
#include <cstddef>
#include <functional>
#include <numeric>
#include <vector>

using namespace std;

void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, size_t n) {
    transform(excl, excl + n, in, incl, plus<long long>());
}

void inclusive_to_exclusive(const long long* incl, long long* excl, size_t n) {
    if (n == 0) return;
    // Recover the inputs from the inclusive scan, then scan them exclusively.
    vector<long long> values(n);
    adjacent_difference(incl, incl + n, values.begin());
    exclusive_scan(values.begin(), values.end(), excl, 0LL);
}

long long total_from_exclusive(const long long* in, const long long* excl, size_t n) {
    if (n == 0) return 0;
    vector<long long> last{excl[n - 1], in[n - 1]};
    vector<long long> sums(2);
    partial_sum(last.begin(), last.end(), sums.begin());
    return sums.back();
}
