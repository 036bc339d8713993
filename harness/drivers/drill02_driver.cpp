// Harness-owned driver for A05 drill 02 (exercises/02_segmented_scan.cpp).
//
// The grader copies a submission to <workdir>/scanlab_submission.cpp and builds
// this file with -I<workdir>: the submission's Seg, seg_identity, seg_combine,
// tree_scan_inclusive and segmented_scan_tile come in through the #include
// below, with SCANLAB_GRADER defined so the submission's own main() drops out.
// Each mode runs one piece of the submission on inputs the grader wrote and
// dumps the raw results; the grader computes the references and decides.
//
//   drill02_driver fold|hillis-steele|blelloch CASE OUTPUT
//       the submission's seg_combine applied through the HARNESS's schedules:
//       a left-to-right fold, a double-buffered Hillis-Steele tree, and a
//       Blelloch up-sweep/down-sweep padded with seg_identity(). A correct,
//       associative operator gives the same inclusive scan through all three.
//       CASE: n, carry flag, carry value (unused here), flags[n], values[n].
//       OUTPUT: flags[n], values[n] of the inclusive scan.
//   drill02_driver tile CASE OUTPUT
//       the submission's segmented_scan_tile(in, out, n, carry).
//       OUTPUT: input_changed, changed_index, guard_changed, guard_index,
//       flags[n], values[n]. Output slots start as (1, -999999999).
//   drill02_driver ops PAIRS OUTPUT
//       seg_combine on the grader's pairs and triples, and seg_identity.
//       PAIRS: p, p x (a.flag a.value b.flag b.value); t, t x (a b c);
//       e, e x (flag value).
//       OUTPUT: identity (flag value); p results; t x ((a+b)+c, a+(b+c));
//       e x (identity+x, x+identity). Each pair is two words.
//   drill02_driver tree N OUTPUT
//       the submission's tree_scan_inclusive on N elements of the harness's
//       Traced type, whose op records the range of inputs each value covers,
//       the depth of its chain of combines, and the first combine of ranges that
//       are not adjacent and in order.
//       OUTPUT: combines, bad_kind, the bad pair (a.kind a.lo a.hi b.kind b.lo
//       b.hi), guard_changed, guard_index, then kind[N], lo[N], hi[N], depth[N].
//
// Exit status: 0 ran (whatever the results); 90 the driver's own I/O failed;
// anything else (a signal, an exit inside the submission) is the submission's.

#define SCANLAB_GRADER 1
#include "scanlab_submission.cpp"

#include "drill_io.hpp"

#include <algorithm>
#include <string>

namespace scanlab_driver {

using scanlab_io::Guarded;
using scanlab_io::kPoison;

// ---- inputs ------------------------------------------------------------------------

struct Case {
    Seg carry;
    std::vector<Seg> in;
};

Case readCase(const char* path) {
    scanlab_io::Reader reader(scanlab_io::readWords(path), path);
    Case c;
    const std::size_t n = reader.size();
    c.carry.flag = reader.next() != 0;
    c.carry.value = reader.next();
    c.in.resize(n);
    for (std::size_t i = 0; i < n; ++i) c.in[i].flag = reader.next() != 0;
    for (std::size_t i = 0; i < n; ++i) c.in[i].value = reader.next();
    return c;
}

void appendPairs(std::vector<long long>& words, const std::vector<Seg>& xs) {
    for (const Seg& s : xs) words.push_back(s.flag ? 1 : 0);
    for (const Seg& s : xs) words.push_back(s.value);
}

void append(std::vector<long long>& words, const Seg& s) {
    words.push_back(s.flag ? 1 : 0);
    words.push_back(s.value);
}

// ---- the harness's schedules of the submission's operator ---------------------------

std::vector<Seg> fold(const std::vector<Seg>& x) {
    std::vector<Seg> out(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) out[i] = i == 0 ? x[0] : seg_combine(out[i - 1], x[i]);
    return out;
}

std::vector<Seg> hillisSteele(const std::vector<Seg>& x) {
    std::vector<Seg> src = x, dst(x.size());
    for (std::size_t offset = 1; offset < x.size(); offset *= 2) {
        for (std::size_t i = 0; i < x.size(); ++i) dst[i] = i >= offset ? seg_combine(src[i - offset], src[i]) : src[i];
        src.swap(dst);
    }
    return src;
}

std::vector<Seg> blelloch(const std::vector<Seg>& x) {
    if (x.empty()) return {};
    std::size_t p = 1;
    while (p < x.size()) p *= 2;
    std::vector<Seg> t(p, seg_identity());
    std::copy(x.begin(), x.end(), t.begin());
    for (std::size_t offset = 1; offset < p; offset *= 2) {
        for (std::size_t i = 2 * offset - 1; i < p; i += 2 * offset) t[i] = seg_combine(t[i - offset], t[i]);
    }
    t[p - 1] = seg_identity();
    for (std::size_t offset = p / 2; offset >= 1; offset /= 2) {
        for (std::size_t i = 2 * offset - 1; i < p; i += 2 * offset) {
            const Seg left = t[i - offset];
            t[i - offset] = t[i];
            t[i] = seg_combine(t[i], left);  // everything before the left subtree, then the left subtree
        }
    }
    std::vector<Seg> out(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) out[i] = seg_combine(t[i], x[i]);  // exclusive -> inclusive
    return out;
}

// ---- the traced element for tree_scan_inclusive ------------------------------------

enum Kind : long long { kUnset = 0, kEmpty = 1, kRange = 2, kBroken = 3, kOutside = 4 };
enum Bad : long long { kNone = 0, kOverlap = 1, kSwapped = 2, kGap = 3, kUnsetOperand = 4, kOutsideOperand = 5 };

// A value of the scan: which inputs it combines (the range lo..hi), how long
// its chain of combines is, and whether it is still a clean range.
struct Traced {
    long long kind = kUnset;  // a default-constructed element has never held an input
    long long lo = 0, hi = 0;
    long long depth = 0;
};

long long g_combines = 0;
long long g_bad = kNone;
Traced g_bad_a, g_bad_b;

void noteBad(long long why, const Traced& a, const Traced& b) {
    if (g_bad != kNone) return;
    g_bad = why;
    g_bad_a = a;
    g_bad_b = b;
}

struct TracedOp {
    Traced operator()(const Traced& a, const Traced& b) const {
        ++g_combines;
        Traced r;
        r.depth = std::max(a.depth, b.depth) + 1;
        if (a.kind == kOutside || b.kind == kOutside) {
            noteBad(kOutsideOperand, a, b);
            r.kind = kBroken;
        } else if (a.kind == kUnset || b.kind == kUnset) {
            noteBad(kUnsetOperand, a, b);
            r.kind = kBroken;
        } else if (a.kind == kBroken || b.kind == kBroken) {
            r.kind = kBroken;
        } else if (a.kind == kEmpty) {
            r.kind = b.kind, r.lo = b.lo, r.hi = b.hi;
        } else if (b.kind == kEmpty) {
            r.kind = a.kind, r.lo = a.lo, r.hi = a.hi;
        } else if (a.hi + 1 == b.lo) {
            r.kind = kRange, r.lo = a.lo, r.hi = b.hi;
        } else {
            noteBad(b.hi < a.lo ? kSwapped : a.hi >= b.lo ? kOverlap : kGap, a, b);
            r.kind = kBroken;
        }
        return r;
    }
};

void appendTraced(std::vector<long long>& words, const Traced& t) {
    words.push_back(t.kind);
    words.push_back(t.lo);
    words.push_back(t.hi);
}

int runTree(std::size_t n, const char* output_path) {
    Traced outside;
    outside.kind = kOutside;
    Guarded<Traced> x(n, outside);
    for (std::size_t k = 0; k < x.storage().size(); ++k) {
        // Guards remember their own position, so a changed guard is found exactly.
        x.storage()[k].lo = Guarded<Traced>::relative(k);
    }
    for (std::size_t i = 0; i < n; ++i) x[i] = Traced{kRange, (long long)i, (long long)i, 0};
    Traced identity;
    identity.kind = kEmpty;

    TracedOp op;  // an lvalue, so a submission may take Op by value, by reference or by forwarding reference
    tree_scan_inclusive(x.data(), n, op, identity);

    std::vector<long long> words{g_combines, g_bad};
    appendTraced(words, g_bad_a);
    appendTraced(words, g_bad_b);
    long long guard_changed = 0, guard_index = 0;
    for (std::size_t k = 0; k < x.storage().size(); ++k) {
        const bool guard = k < scanlab_io::kGuard || k >= scanlab_io::kGuard + n;
        const Traced& t = x.storage()[k];
        if (guard && (t.kind != kOutside || t.lo != Guarded<Traced>::relative(k))) {
            guard_changed = 1;
            guard_index = Guarded<Traced>::relative(k);
            break;
        }
    }
    words.push_back(guard_changed);
    words.push_back(guard_index);
    for (std::size_t i = 0; i < n; ++i) words.push_back(x[i].kind);
    for (std::size_t i = 0; i < n; ++i) words.push_back(x[i].lo);
    for (std::size_t i = 0; i < n; ++i) words.push_back(x[i].hi);
    for (std::size_t i = 0; i < n; ++i) words.push_back(x[i].depth);
    scanlab_io::writeWords(output_path, words);
    return 0;
}

// ---- segmented_scan_tile ------------------------------------------------------------

bool same(const Seg& a, const Seg& b) { return a.flag == b.flag && a.value == b.value; }

int runTile(const char* case_path, const char* output_path) {
    const Case c = readCase(case_path);
    const std::size_t n = c.in.size();
    const Seg poison{true, kPoison};
    Guarded<Seg> in(n, poison), out(n, poison);
    for (std::size_t i = 0; i < n; ++i) in[i] = c.in[i];
    const Guarded<Seg> before = in;

    segmented_scan_tile(in.data(), out.data(), n, c.carry);

    std::vector<long long> words(4, 0);
    for (std::size_t k = 0; k < in.storage().size(); ++k) {
        if (!same(in.storage()[k], before.storage()[k])) {
            words[0] = 1;
            words[1] = Guarded<Seg>::relative(k);
            break;
        }
    }
    for (std::size_t k = 0; k < out.storage().size(); ++k) {
        const bool guard = k < scanlab_io::kGuard || k >= scanlab_io::kGuard + n;
        if (guard && !same(out.storage()[k], poison)) {
            words[2] = 1;
            words[3] = Guarded<Seg>::relative(k);
            break;
        }
    }
    appendPairs(words, std::vector<Seg>(out.data(), out.data() + n));
    scanlab_io::writeWords(output_path, words);
    return 0;
}

// ---- the operator on pairs and triples ----------------------------------------------

int runOps(const char* pairs_path, const char* output_path) {
    scanlab_io::Reader reader(scanlab_io::readWords(pairs_path), pairs_path);
    auto next = [&reader]() { return Seg{reader.next() != 0, 0}; };
    auto pair = [&reader, &next]() {
        Seg s = next();
        s.value = reader.next();
        return s;
    };
    std::vector<long long> words;
    append(words, seg_identity());
    const std::size_t pairs = reader.size();
    for (std::size_t k = 0; k < pairs; ++k) {
        const Seg a = pair(), b = pair();
        append(words, seg_combine(a, b));
    }
    const std::size_t triples = reader.size();
    for (std::size_t k = 0; k < triples; ++k) {
        const Seg a = pair(), b = pair(), c = pair();
        append(words, seg_combine(seg_combine(a, b), c));
        append(words, seg_combine(a, seg_combine(b, c)));
    }
    const std::size_t elements = reader.size();
    for (std::size_t k = 0; k < elements; ++k) {
        const Seg a = pair();
        append(words, seg_combine(seg_identity(), a));
        append(words, seg_combine(a, seg_identity()));
    }
    scanlab_io::writeWords(output_path, words);
    return 0;
}

int run(const std::string& mode, const char* input, const char* output) {
    if (mode == "fold" || mode == "hillis-steele" || mode == "blelloch") {
        const Case c = readCase(input);
        const std::vector<Seg> out = mode == "fold" ? fold(c.in) : mode == "blelloch" ? blelloch(c.in)
                                                                                      : hillisSteele(c.in);
        std::vector<long long> words;
        appendPairs(words, out);
        scanlab_io::writeWords(output, words);
        return 0;
    }
    if (mode == "tile") return runTile(input, output);
    if (mode == "ops") return runOps(input, output);
    if (mode == "tree") {
        char* end = nullptr;
        const unsigned long long n = std::strtoull(input, &end, 10);
        if (end == input || *end != '\0') scanlab_io::fail("tree wants a size, not", input);
        return runTree(std::size_t(n), output);
    }
    std::fprintf(stderr, "drill02_driver: unknown mode '%s'\n", mode.c_str());
    return scanlab_io::kExitDriverError;
}

}  // namespace scanlab_driver

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: drill02_driver fold|hillis-steele|blelloch|tile|ops|tree INPUT OUTPUT\n");
        return scanlab_io::kExitDriverError;
    }
    return scanlab_driver::run(argv[1], argv[2], argv[3]);
}
