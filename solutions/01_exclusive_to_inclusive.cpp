// A05 drill 01 (reference answer): exclusive <-> inclusive, and the total an
// exclusive scan drops.
//
// Three conversions every scan user writes sooner or later. Blelloch hands you
// an exclusive scan, Hillis-Steele an inclusive one, and compaction needs the
// grand total that the exclusive form does not contain. The functions below are
// what the harness grades; main() is only this file's own sandbox self-check.
//
// Build and run (from solutions/; `make run` does both):
//   g++ -std=c++17 -O2 -Wall -Wextra -o ../build/solutions/01_exclusive_to_inclusive 01_exclusive_to_inclusive.cpp
//   ../build/solutions/01_exclusive_to_inclusive
// Grade (the harness builds the three functions into its own driver; main is not used):
//   python3 ../harness/grade.py drill01 01_exclusive_to_inclusive.cpp
//
// Observe: every row of the self-check matches, including n = 1 and n = 0, and
// the last line says PASS. Exit status: 0 every check matched; 1 one did not.

#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <vector>

// The identity of +: the sum of no elements. An exclusive scan starts with it.
constexpr long long kIdentity = 0;

// ---- the three conversions (graded) --------------------------------------------

// incl[i] = excl[i] + in[i]. No boundary case in this direction: the element's
// own value is exactly what the exclusive form left out, at every index.
void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) incl[i] = excl[i] + in[i];
}

// excl[0] = identity, excl[i] = incl[i - 1]. Two traps: excl[0] is the identity,
// not incl[0]; and the shift reads incl and writes excl, never one buffer in
// place (shifting front to back inside one buffer reads the slot it has just
// overwritten; on a GPU, thread i - 1 races thread i for it).
void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    if (n == 0) return;
    excl[0] = kIdentity;
    for (std::size_t i = 1; i < n; ++i) excl[i] = incl[i - 1];
}

// The grand total: the last combine of an exclusive scan falls off the end, so
// add the last element back. n == 0 is the empty sum, the identity (and
// excl[n - 1] would read excl[SIZE_MAX]: n - 1 wraps for an unsigned n).
long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    if (n == 0) return kIdentity;
    return excl[n - 1] + in[n - 1];
}

#ifndef SCANLAB_GRADER
// ---- sandbox self-check (not graded) --------------------------------------------
//
// The obvious sequential scans, a handful of inputs, every output compared
// exactly. Outputs start zeroed, as a fresh std::vector would be.

static uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static std::vector<long long> inclusiveReference(const std::vector<long long>& in) {
    std::vector<long long> out(in.size());
    long long running = kIdentity;
    for (std::size_t i = 0; i < in.size(); ++i) out[i] = running += in[i];
    return out;
}

static std::vector<long long> exclusiveReference(const std::vector<long long>& in) {
    std::vector<long long> out(in.size());
    long long running = kIdentity;
    for (std::size_t i = 0; i < in.size(); ++i) {
        out[i] = running;
        running += in[i];
    }
    return out;
}

struct Input {
    const char* name;
    std::vector<long long> values;
};

static std::vector<Input> makeInputs() {
    std::vector<Input> inputs;
    std::vector<long long> cycle8(256);
    for (std::size_t i = 0; i < cycle8.size(); ++i) cycle8[i] = static_cast<long long>(i % 8 + 1);
    inputs.push_back({"cycle8", cycle8});
    inputs.push_back({"page", {3, 1, 7, 0, 4, 1, 6, 3}});
    std::vector<long long> random(1000);
    uint64_t state = 31;
    for (long long& v : random) v = static_cast<long long>(splitmix64(state) % 31) - 15;
    inputs.push_back({"random", random});
    inputs.push_back({"single", {5}});
    inputs.push_back({"empty", {}});
    return inputs;
}

struct Row {
    std::size_t mismatches = 0;
    std::size_t first = 0;
    long long expected = 0;
    long long actual = 0;
};

static Row compareExact(const std::vector<long long>& expected, const std::vector<long long>& actual) {
    Row row;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        if (actual[i] != expected[i]) {
            if (row.mismatches == 0) {
                row.first = i;
                row.expected = expected[i];
                row.actual = actual[i];
            }
            ++row.mismatches;
        }
    }
    return row;
}

static void printRow(const char* input, std::size_t n, const char* check, const Row& row, bool has_index) {
    char first[24] = "-", expected[24] = "-", actual[24] = "-";
    if (row.mismatches > 0) {
        if (has_index) std::snprintf(first, sizeof first, "%zu", row.first);
        std::snprintf(expected, sizeof expected, "%lld", row.expected);
        std::snprintf(actual, sizeof actual, "%lld", row.actual);
    }
    std::printf("%-6s  %4zu  %-22s  %10zu  %9s  %8s  %6s\n", input, n, check, row.mismatches, first, expected,
                actual);
}

int main() {
    std::printf("Drill 01: exclusive <-> inclusive, and the total an exclusive scan drops (+, identity 0)\n");
    std::printf("inputs: cycle8 = (i %% 8) + 1, the lesson's input; page = 3 1 7 0 4 1 6 3;\n");
    std::printf("        random = integers -15..15, splitmix64 seed 31; single = 5; empty = nothing\n");
    std::printf("outputs start zeroed; each is compared exactly with a sequential scan\n\n");

    std::printf("input      n  check                   mismatches  first bad  expected  actual\n");
    std::printf("------  ----  ----------------------  ----------  ---------  --------  ------\n");
    std::size_t checks = 0, failures = 0;
    for (const Input& input : makeInputs()) {
        const std::vector<long long>& in = input.values;
        const std::size_t n = in.size();
        const std::vector<long long> incl = inclusiveReference(in);
        const std::vector<long long> excl = exclusiveReference(in);

        std::vector<long long> got_incl(n), got_excl(n);
        exclusive_to_inclusive(in.data(), excl.data(), got_incl.data(), n);
        inclusive_to_exclusive(incl.data(), got_excl.data(), n);
        const long long want_total = n > 0 ? incl[n - 1] : kIdentity;
        const long long got_total = total_from_exclusive(in.data(), excl.data(), n);

        const Row to_incl = compareExact(incl, got_incl);
        const Row to_excl = compareExact(excl, got_excl);
        Row total;
        if (got_total != want_total) total = Row{1, 0, want_total, got_total};
        printRow(input.name, n, "exclusive -> inclusive", to_incl, true);
        printRow(input.name, n, "inclusive -> exclusive", to_excl, true);
        printRow(input.name, n, "total from exclusive", total, false);
        checks += 3;
        failures += (to_incl.mismatches > 0) + (to_excl.mismatches > 0) + (total.mismatches > 0);
    }
    std::printf("\n");
    if (failures > 0) {
        std::printf("FAILED: %zu of %zu checks mismatched the sequential reference\n", failures, checks);
        return 1;
    }
    std::printf("PASS: all %zu checks matched the sequential reference\n", checks);
    return 0;
}
#endif  // SCANLAB_GRADER
