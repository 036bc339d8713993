// A05 drill 01: exclusive <-> inclusive, and the total an exclusive scan drops.
//
// Blelloch hands you an exclusive scan, Hillis-Steele an inclusive one, and
// stream compaction needs the grand total, which the exclusive form does not
// contain anywhere. Write the three conversions below. Each is a few lines; the
// point is the boundaries (see exercises/README.md, "Why 256 and 255").
//
// Build and run (from exercises/; `make run` does both):
//   g++ -std=c++17 -O2 -Wall -Wextra -o ../build/exercises/01_exclusive_to_inclusive 01_exclusive_to_inclusive.cpp
//   ../build/exercises/01_exclusive_to_inclusive
// Grade (the harness builds your three functions into its own driver, feeds
// them inputs you have not seen, and checks every output itself; main below is
// only your sandbox and is not used):
//   python3 ../harness/grade.py drill01 01_exclusive_to_inclusive.cpp
//
// Observe (untouched): on the 256-element input, exclusive -> inclusive shows
// 256 mismatches but inclusive -> exclusive only 255. The stubs write nothing,
// the outputs start zeroed, and excl[0] = 0 is the identity: one right answer
// by accident. The grader fills outputs with a poison value instead, so that
// accident earns nothing there. Exit status: 0 every check matched; 1 one did not.
//
// Rules: never write into the input arrays, write every output element, and
// keep main inside #ifndef SCANLAB_GRADER so the grader can replace it.

#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <vector>

// The identity of +: the sum of no elements. An exclusive scan starts with it.
constexpr long long kIdentity = 0;

// ---- the three conversions (graded) --------------------------------------------

// TODO: incl[i] = excl[i] + in[i] for every i in 0..n-1.
void exclusive_to_inclusive(const long long* in, const long long* excl, long long* incl, std::size_t n) {
    (void)in;
    (void)excl;
    (void)incl;
    (void)n;
}

// TODO: excl[0] = kIdentity and excl[i] = incl[i - 1]. Read incl, write excl:
// never shift inside one buffer.
void inclusive_to_exclusive(const long long* incl, long long* excl, std::size_t n) {
    (void)incl;
    (void)excl;
    (void)n;
}

// TODO: the sum of all n inputs, from the exclusive scan: excl[n - 1] + in[n - 1].
// What is it for n == 0 (and what does excl[n - 1] read then)?
long long total_from_exclusive(const long long* in, const long long* excl, std::size_t n) {
    (void)in;
    (void)excl;
    (void)n;
    return 0;
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
