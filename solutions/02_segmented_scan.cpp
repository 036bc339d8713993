// A05 drill 02 (reference answer): a segmented scan, done through a tree.
//
// A segmented scan restarts at every flagged segment head: with heads at 0, 3
// and 5, the input 3 1 7 | 0 4 | 1 6 3 scans to 3 4 11 | 0 4 | 1 7 10. It is
// the primitive under ragged batches (one scan over many sequences). A
// sequential loop that resets a counter at each head is easy and cannot run as
// a tree. The tree version carries the flag WITH the value: scan (flag, value)
// pairs under an operator that is associative, so any bracketing, and so any
// tree schedule, gives the same answer. The functions below are what the
// harness grades; main() is only this file's own sandbox self-check.
//
// Build and run (from solutions/; `make run` does both):
//   g++ -std=c++17 -O2 -Wall -Wextra -o ../build/solutions/02_segmented_scan 02_segmented_scan.cpp
//   ../build/solutions/02_segmented_scan
// Grade (the harness runs seg_combine through its own Hillis-Steele and
// Blelloch schedules, checks associativity, and traces tree_scan_inclusive):
//   python3 ../harness/grade.py drill02 02_segmented_scan.cpp
//
// Observe: every row matches, the associativity row finds no triple that
// breaks, and the last line says PASS. Exit status: 0 every check matched; 1 one did not.

#include <algorithm>
#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

// One element, or the combination of a run of consecutive elements (a span).
struct Seg {
    bool flag;        // a segment head lies somewhere in this span
    long long value;  // the sum from the last head in the span (or from its start, if none) to its end
};

// ---- the operator and the tree (graded) -----------------------------------------

// The identity: a span that starts nothing and adds nothing. (Given.)
Seg seg_identity() { return Seg{false, 0}; }

// a (+) b: the span of a followed by the span of b. If b contains a head, nothing
// of a survives past it: b's value is already the sum since that head. If not,
// b continues a's open run. The flag is carried (a.flag | b.flag), not dropped:
// without it, regrouping (a (+) b) (+) c as a (+) (b (+) c) forgets that a head
// lay inside b, and the operator is no longer associative.
Seg seg_combine(Seg a, Seg b) {
    if (b.flag) return b;
    return Seg{a.flag, a.value + b.value};
}

// Inclusive scan of x[0..n-1] in place, for any associative op: Hillis-Steele,
// double-buffered. Level k combines each element with the one 2^k to its left,
// reading only `src` and writing only `dst`, so no level reads a value it has
// already updated (the CPU twin of the GPU read-write race). Lanes with nothing
// to their left copy themselves, so no identity padding is needed here;
// Blelloch's tree would pad to a power of two with `identity`. The earlier span
// stays the LEFT operand: the segmented operator is not commutative.
// Work: n*ceil(log2 n) - (2^ceil(log2 n) - 1) combines; depth: ceil(log2 n).
template <typename T, typename Op>
void tree_scan_inclusive(T* x, std::size_t n, Op op, T identity) {
    (void)identity;
    std::vector<T> buffer(x, x + n);
    T* src = x;
    T* dst = buffer.data();
    for (std::size_t offset = 1; offset < n; offset *= 2) {
        for (std::size_t i = 0; i < n; ++i) {  // every lane of one level; any order works with two buffers
            dst[i] = i >= offset ? op(src[i - offset], src[i]) : src[i];
        }
        std::swap(src, dst);
    }
    if (src != x) std::copy(src, src + n, x);
}

// One tile of a longer segmented array: out[i] = carry (+) in[0] (+) ... (+) in[i],
// where carry is everything before the tile (the identity for the first tile).
// Scan the tile through the tree, then fold the carry in front of every prefix,
// which is phase 3 of the multi-tile scan. A head at in[0] must stop the carry,
// and seg_combine(carry, prefix) does exactly that because prefix.flag is set.
void segmented_scan_tile(const Seg* in, Seg* out, std::size_t n, Seg carry) {
    std::copy(in, in + n, out);
    tree_scan_inclusive(out, n, seg_combine, seg_identity());
    for (std::size_t i = 0; i < n; ++i) out[i] = seg_combine(carry, out[i]);
}

#ifndef SCANLAB_GRADER
// ---- sandbox self-check (not graded) --------------------------------------------
//
// The reference is the obvious sequential loop that resets at every head: the
// very thing the drill replaces, and exactly right for checking it.

static uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static std::vector<Seg> segmentedReference(const std::vector<Seg>& in, Seg carry) {
    std::vector<Seg> out(in.size());
    bool flag = carry.flag;
    long long running = carry.value;
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i].flag) {
            flag = true;
            running = 0;
        }
        running += in[i].value;
        out[i] = Seg{flag, running};
    }
    return out;
}

static bool same(const Seg& a, const Seg& b) { return a.flag == b.flag && a.value == b.value; }

static std::string show(const Seg& s) {
    char text[48];
    std::snprintf(text, sizeof text, "(%d,%lld)", int(s.flag), s.value);
    return text;
}

struct Case {
    const char* name;
    std::vector<Seg> in;
    Seg carry;
};

static std::vector<Seg> withHeads(const std::vector<long long>& values, const std::vector<std::size_t>& heads) {
    std::vector<Seg> in(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) in[i] = Seg{false, values[i]};
    for (std::size_t h : heads) in[h].flag = true;
    return in;
}

static std::vector<long long> cycle8(std::size_t n) {
    std::vector<long long> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<long long>(i % 8 + 1);
    return v;
}

static std::vector<Case> makeCases() {
    std::vector<Case> cases;
    cases.push_back({"page example", withHeads({3, 1, 7, 0, 4, 1, 6, 3}, {0, 3, 5}), seg_identity()});
    cases.push_back({"one segment, no heads", withHeads(cycle8(100), {}), seg_identity()});
    std::vector<std::size_t> every(33);
    for (std::size_t i = 0; i < every.size(); ++i) every[i] = i;
    cases.push_back({"a segment per element", withHeads(cycle8(33), every), seg_identity()});
    cases.push_back({"heads at 0 and n-1", withHeads(cycle8(257), {0, 256}), seg_identity()});
    std::vector<Seg> random(1000);
    uint64_t state = 7;
    for (Seg& s : random) {
        s.flag = splitmix64(state) % 8 == 0;
        s.value = static_cast<long long>(splitmix64(state) % 31) - 15;
    }
    cases.push_back({"random heads, seed 7", random, seg_identity()});
    cases.push_back({"carry, no head at 0", withHeads(cycle8(16), {5, 11}), Seg{false, 100}});
    cases.push_back({"carry, head at 0", withHeads(cycle8(16), {0, 9}), Seg{false, 100}});
    cases.push_back({"empty", {}, seg_identity()});
    return cases;
}

static void printRow(const char* name, std::size_t n, const std::string& carry, std::size_t mismatches,
                     std::size_t first, const std::string& expected, const std::string& actual) {
    char first_text[24] = "-";
    if (mismatches > 0) std::snprintf(first_text, sizeof first_text, "%zu", first);
    std::printf("%-22s  %4zu  %-8s  %10zu  %9s  %8s  %8s\n", name, n, carry.c_str(), mismatches, first_text,
                mismatches > 0 ? expected.c_str() : "-", mismatches > 0 ? actual.c_str() : "-");
}

static void printExample(const Case& c, const std::vector<Seg>& expected, const std::vector<Seg>& actual) {
    std::printf("page example: heads at 0, 3 and 5 make the segments 3 1 7 | 0 4 | 1 6 3\n");
    const char* labels[] = {"flag", "in", "expected", "yours"};
    for (int row = 0; row < 4; ++row) {
        std::printf("  %-8s", labels[row]);
        for (std::size_t i = 0; i < c.in.size(); ++i) {
            const long long v = row == 0 ? c.in[i].flag : row == 1 ? c.in[i].value
                              : row == 2 ? expected[i].value : actual[i].value;
            std::printf("%4lld", v);
        }
        std::printf("\n");
    }
    std::printf("\n");
}

int main() {
    std::printf("Drill 02: segmented scan of (flag, value) pairs through a tree (+, identity (0,0))\n");
    std::printf("pairs print as (flag,value); outputs start zeroed; each is compared exactly with a\n");
    std::printf("sequential loop that resets at every head\n\n");

    const std::vector<Case> cases = makeCases();
    std::vector<std::vector<Seg>> expected(cases.size()), actual(cases.size());
    for (std::size_t k = 0; k < cases.size(); ++k) {
        expected[k] = segmentedReference(cases[k].in, cases[k].carry);
        actual[k].assign(cases[k].in.size(), Seg{false, 0});
        segmented_scan_tile(cases[k].in.data(), actual[k].data(), cases[k].in.size(), cases[k].carry);
    }
    printExample(cases[0], expected[0], actual[0]);

    std::size_t checks = 0, failures = 0;
    std::printf("case                       n  carry     mismatches  first bad  expected    actual\n");
    std::printf("----------------------  ----  --------  ----------  ---------  --------  --------\n");
    for (std::size_t k = 0; k < cases.size(); ++k) {
        std::size_t mismatches = 0, first = 0;
        for (std::size_t i = 0; i < expected[k].size(); ++i) {
            if (!same(expected[k][i], actual[k][i]) && mismatches++ == 0) first = i;
        }
        printRow(cases[k].name, cases[k].in.size(), show(cases[k].carry), mismatches, first,
                 mismatches ? show(expected[k][first]) : "-", mismatches ? show(actual[k][first]) : "-");
        ++checks;
        failures += mismatches > 0;
    }

    // The tree on its own, with plain + on integers: no flags involved.
    {
        std::vector<long long> x(1000), expected(1000);
        uint64_t state = 11;
        long long running = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
            x[i] = static_cast<long long>(splitmix64(state) % 31) - 15;
            expected[i] = running += x[i];
        }
        tree_scan_inclusive(x.data(), x.size(), [](long long a, long long b) { return a + b; }, 0LL);
        std::size_t mismatches = 0, first = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
            if (x[i] != expected[i] && mismatches++ == 0) first = i;
        }
        printRow("tree scan with plain +", x.size(), "-", mismatches, first, std::to_string(expected[first]),
                 std::to_string(x[first]));
        ++checks;
        failures += mismatches > 0;
    }

    // Associativity on triples drawn from the random case's elements and prefixes.
    {
        const Case& c = cases[4];
        std::vector<Seg> pool = c.in;
        const std::vector<Seg> prefixes = segmentedReference(c.in, c.carry);
        pool.insert(pool.end(), prefixes.begin(), prefixes.end());
        uint64_t state = 13;
        const std::size_t triples = 512;
        std::size_t broken = 0, first = 0;
        Seg first_left{}, first_right{};
        for (std::size_t t = 0; t < triples; ++t) {
            const Seg a = pool[splitmix64(state) % pool.size()];
            const Seg b = pool[splitmix64(state) % pool.size()];
            const Seg d = pool[splitmix64(state) % pool.size()];
            const Seg left = seg_combine(seg_combine(a, b), d);
            const Seg right = seg_combine(a, seg_combine(b, d));
            if (!same(left, right) && broken++ == 0) {
                first = t;
                first_left = left;
                first_right = right;
            }
        }
        printRow("associativity triples", triples, "-", broken, first, show(first_left), show(first_right));
        ++checks;
        failures += broken > 0;
    }
    std::printf("\n");
    if (failures > 0) {
        std::printf("FAILED: %zu of %zu checks mismatched\n", failures, checks);
        return 1;
    }
    std::printf("PASS: all %zu checks matched\n", checks);
    return 0;
}
#endif  // SCANLAB_GRADER
