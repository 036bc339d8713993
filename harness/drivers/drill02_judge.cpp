// Harness-only judge of drill 02's tree_scan_inclusive (exercises/02_segmented_scan.cpp).
//
// Never linked with submission code. The grader compiles it on its own (cached
// outside the repository, like the drivers) and runs it AFTER the submission's run
// has ended, in a fresh sandbox holding only this program and the trace that run
// left (harness/scanlab/grade_drill02.py, judge_tree):
//
//   drill02_judge TRACE OUTPUT N...
//       TRACE: the driver's `tree` output, one case per N, in order: per case its
//       word count, then the dump drill02_trace.hpp lays out (the op's log of
//       operand indices, and the index every slot holds at the end).
//       OUTPUT (drill_io.hpp's Results, per case): combines, bad, the first bad
//       combine's operands (a.kind a.lo a.hi b.kind b.lo b.hi), then for every slot,
//       guards included (N + 2 kGuard): kind[], lo[], hi[], depth[]. A guard is
//       kind 4 (outside) with lo = its own index relative to x[0].
//
// Exit status: 0 judged; 90 this program's own I/O failed; 91 out of memory;
// 93 the trace is malformed: one line on stderr says which case and why.
//
// Why judging here is sound. The driver shares its process with the submission, so
// every record kept there could be rewritten, and a static constructor could write
// a results file and exit before main. So the driver records no claim at all: it logs
// which two values each combine took, and numbers values by a public rule. This
// program recomputes, from that log alone, which inputs every value combines (a
// range lo..hi, or broken), how deep its chain of combines is, and the first combine
// whose operands are not adjacent ranges in order. Rewriting the log in memory, or
// writing a trace file instead of the driver, only changes which combines the trace
// says happened; for x[i] to come out as inputs 0..i at most 2 ceil(log2 n) + 2 deep
// with n log n work, the trace must be the combine DAG of a tree scan, which
// something in the submission then had to compute. The trace is hostile input: every
// length and index is checked, memory is bounded by the sizes on the command line
// and by kTraceCap, and anything malformed ends with status 93 (the grader then
// fails the case, never passes it).
//
//   g++ -std=c++17 -O2 -Wall -Wextra -I harness/drivers -o drill02_judge harness/drivers/drill02_judge.cpp

#include "drill02_trace.hpp"
#include "drill_io.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <sys/stat.h>

namespace {

using scanlab_io::kGuard;

constexpr int kExitMalformed = 93;
// A full log of one case is 32 MiB; the sandbox limits the driver's file to 64 MiB.
constexpr std::uint64_t kMaxTraceBytes = std::uint64_t(80) << 20;
constexpr std::uint64_t kMaxSize = std::uint64_t(1) << 24;  // the driver's own limit on N

// ---- reading the trace, distrusting every word --------------------------------------

int g_case = -1;  // for messages: the case being read (its place on the command line), and its size
unsigned long long g_n = 0;

[[noreturn]] void malformed(const std::string& why) {
    if (g_case >= 0) {
        std::fprintf(stderr, "drill02 judge: malformed trace: case %d (n = %llu): %s\n", g_case, g_n, why.c_str());
    } else {
        std::fprintf(stderr, "drill02 judge: malformed trace: %s\n", why.c_str());
    }
    std::fflush(stderr);
    std::_Exit(kExitMalformed);
}

std::string text(std::uint64_t v) { return std::to_string(v); }

std::vector<std::uint64_t> readTrace(const char* path) {
    std::FILE* f = std::fopen(path, "rb");
    if (f == nullptr) scanlab_io::fail("cannot open", path);
    struct stat info {};
    if (fstat(fileno(f), &info) != 0 || !S_ISREG(info.st_mode)) scanlab_io::fail("not a regular file:", path);
    const std::uint64_t bytes = std::uint64_t(info.st_size);
    if (bytes > kMaxTraceBytes) malformed(text(bytes) + " bytes, more than the driver ever writes");
    if (bytes % 8 != 0) malformed(text(bytes) + " bytes: not a whole number of 64-bit words");
    std::vector<std::uint64_t> words(bytes / 8);
    const bool ok = std::fread(words.data(), 8, words.size(), f) == words.size();
    std::fclose(f);
    if (!ok) scanlab_io::fail("cannot read", path);
    return words;
}

std::uint64_t parseSize(const char* arg) {
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(arg, &end, 10);
    if (errno != 0 || end == arg || *end != '\0' || arg[0] == '-' || v > kMaxSize) {
        scanlab_io::fail("wants a size of at most 2^24, not", arg);
    }
    return v;
}

// ---- what every value stands for ------------------------------------------------------

// Kinds and reasons as the grader reads them (grade_drill02.py: KIND_*, BAD_*).
enum Kind : std::uint8_t { kUnset = 0, kEmpty = 1, kRange = 2, kBroken = 3, kOutside = 4, kForged = 5, kUntraced = 6 };
enum Bad : long long {
    kNone = 0, kOverlap = 1, kSwapped = 2, kGap = 3, kUnsetOperand = 4, kOutsideOperand = 5, kForgedOperand = 6
};

// Which inputs a value combines (lo..hi, relative to x[0]) and the length of its chain
// of combines. 32-bit fields: N is at most 2^24 and a chain at most kTraceCap long.
struct Traced {
    std::int32_t lo = 0, hi = 0;
    std::int32_t depth = 0;
    std::uint8_t kind = kUnset;
};

class Judge {
public:
    Judge(std::uint64_t n, std::uint64_t log_len) : n_(n), total_(n + 2 * kGuard) { results_.reserve(log_len); }

    // What `index` stands for when the next combine is results_.size(): a result
    // not made yet cannot be an operand (and reads as forged).
    Traced lookup(std::uint64_t index) const {
        Traced t;
        if (index == scanlab_trace::kUnset) return t;
        if (index <= total_) {
            const std::uint64_t k = index - 1;
            t.kind = k < kGuard || k >= kGuard + n_ ? kOutside : kRange;  // a guard remembers its own position
            t.lo = t.hi = std::int32_t(std::int64_t(k) - std::int64_t(kGuard));
            return t;
        }
        if (index == total_ + 1) {
            t.kind = kEmpty;
            return t;
        }
        if (index == scanlab_trace::kUntraced) {
            t.kind = kUntraced;
            return t;
        }
        if (index - (total_ + 2) < results_.size()) return results_[index - (total_ + 2)];
        t.kind = kForged;
        return t;
    }

    void combine(std::uint64_t a_index, std::uint64_t b_index) {
        const Traced a = lookup(a_index), b = lookup(b_index);
        Traced r;
        r.depth = std::max(a.depth, b.depth) + 1;
        if (a.kind == kForged || b.kind == kForged) {
            noteBad(kForgedOperand, a, b);
            r.kind = kBroken;
        } else if (a.kind == kOutside || b.kind == kOutside) {
            noteBad(kOutsideOperand, a, b);
            r.kind = kBroken;
        } else if (a.kind == kUnset || b.kind == kUnset) {
            noteBad(kUnsetOperand, a, b);
            r.kind = kBroken;
        } else if (a.kind == kBroken || b.kind == kBroken || a.kind == kUntraced || b.kind == kUntraced) {
            r.kind = kBroken;
        } else if (a.kind == kEmpty) {
            r.kind = b.kind, r.lo = b.lo, r.hi = b.hi;
        } else if (b.kind == kEmpty) {
            r.kind = a.kind, r.lo = a.lo, r.hi = a.hi;
        } else if (std::int64_t(a.hi) + 1 == b.lo) {
            r.kind = kRange, r.lo = a.lo, r.hi = b.hi;
        } else {
            noteBad(b.hi < a.lo ? kSwapped : a.hi >= b.lo ? kOverlap : kGap, a, b);
            r.kind = kBroken;
        }
        results_.push_back(r);
    }

    // combines, bad, the bad pair, then kind[], lo[], hi[], depth[] of the final slots.
    std::vector<long long> words(std::uint64_t combines, const std::vector<Traced>& slots) const {
        std::vector<long long> out{(long long)combines, bad_};
        for (const Traced* t : {&bad_a_, &bad_b_}) {
            out.push_back(t->kind);
            out.push_back(t->lo);
            out.push_back(t->hi);
        }
        out.reserve(out.size() + 4 * slots.size());
        for (const Traced& t : slots) out.push_back(t.kind);
        for (const Traced& t : slots) out.push_back(t.lo);
        for (const Traced& t : slots) out.push_back(t.hi);
        for (const Traced& t : slots) out.push_back(t.depth);
        return out;
    }

private:
    void noteBad(long long why, const Traced& a, const Traced& b) {
        if (bad_ != kNone) return;
        bad_ = why;
        bad_a_ = a;
        bad_b_ = b;
    }

    std::uint64_t n_, total_;
    std::vector<Traced> results_;
    long long bad_ = kNone;
    Traced bad_a_, bad_b_;
};

// One case: its words are trace[at, at + count). Checks the layout against the size
// the grader asked for before anything is allocated from it.
std::vector<long long> judgeCase(const std::vector<std::uint64_t>& trace, std::size_t at, std::uint64_t count,
                                 std::uint64_t n) {
    const std::uint64_t total = n + 2 * kGuard;
    if (count < 4) malformed(text(count) + " words, fewer than the 4 of a header");
    const std::uint64_t* w = trace.data() + at;
    if (w[0] != n) malformed("it is for n = " + text(w[0]) + ", the grader asked for n = " + text(n));
    if (w[1] != total) malformed("total " + text(w[1]) + ", should be n + 2*" + text(kGuard) + " = " + text(total));
    const std::uint64_t combines = w[2], log_len = w[3];
    if (log_len > scanlab_trace::kTraceCap) {
        malformed("a log of " + text(log_len) + " combines, more than the driver keeps (" +
                  text(scanlab_trace::kTraceCap) + ")");
    }
    if (combines >> 62 != 0 || combines < log_len || (log_len < scanlab_trace::kTraceCap && combines != log_len)) {
        malformed(text(combines) + " combines with a log of " + text(log_len) +
                  " (the log holds every combine until it is full)");
    }
    if (count != 4 + log_len + total) {
        malformed(text(count) + " words, should be 4 + " + text(log_len) + " + " + text(total));
    }
    Judge judge(n, log_len);
    const std::uint64_t* log = w + 4;
    for (std::uint64_t j = 0; j < log_len; ++j) judge.combine(log[j] & 0xFFFFFFFFu, log[j] >> 32);
    const std::uint64_t* final_index = log + log_len;
    std::vector<Traced> slots(total);
    for (std::uint64_t k = 0; k < total; ++k) {
        if (final_index[k] > 0xFFFFFFFFu) malformed("slot " + text(k) + " holds " + text(final_index[k]) +
                                                    ", not a 32-bit index");
        slots[k] = judge.lookup(final_index[k]);
    }
    return judge.words(combines, slots);
}

}  // namespace

int main(int argc, char** argv) {
    scanlab_io::installOutOfMemoryHandler();
    if (argc < 4) scanlab_io::fail("usage: drill02_judge TRACE OUTPUT N...; got", argc > 0 ? argv[0] : "");
    const std::vector<std::uint64_t> trace = readTrace(argv[1]);
    scanlab_io::Results results;
    std::size_t at = 0;
    for (int k = 3; k < argc; ++k) {
        const std::uint64_t n = parseSize(argv[k]);
        g_case = k - 3;
        g_n = n;
        if (at >= trace.size()) malformed("the trace ends before this case");
        const std::uint64_t count = trace[at++];
        if (count > trace.size() - at) {
            malformed("it claims " + text(count) + " words; " + text(trace.size() - at) + " are left");
        }
        results.add(judgeCase(trace, at, count, n));
        at += std::size_t(count);
    }
    g_case = -1;
    if (at != trace.size()) malformed(text(trace.size() - at) + " words after the last case");
    results.writeAndExit(argv[2]);
}
