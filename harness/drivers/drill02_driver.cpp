// Harness-owned driver for A05 drill 02 (exercises/02_segmented_scan.cpp).
//
// The grader compiles this file on its own (trusted, cached outside the
// repository) and, inside a sandbox, links it with submission.o: the submission
// compiled together with harness/drivers/drill02_shim.cpp, which only marshals
// between the student's Seg and the plain integers of the extern "C" ABI below.
// Everything here but main and scanlab_traced_combine has internal linkage. Each
// mode runs one piece of the submission on inputs the grader wrote and dumps the
// raw results; the grader computes the references and decides. Each case's
// dump goes into OUTPUT as its word count and then the words below, in the
// order of the cases (drill_io.hpp).
//
//   drill02_driver fold|hillis-steele|blelloch OUTPUT CASE...
//       the submission's seg_combine applied through the HARNESS's schedules:
//       a left-to-right fold, a double-buffered Hillis-Steele tree, and a
//       Blelloch up-sweep/down-sweep padded with seg_identity(). A correct,
//       associative operator gives the same inclusive scan through all three.
//       CASE: n, flags[n], values[n].  OUTPUT: flags[n], values[n].
//   drill02_driver tile OUTPUT CASE...
//       the submission's segmented_scan_tile(in, out, n, carry).
//       CASE: n, carry flag, carry value, flags[n], values[n].
//       OUTPUT: the raw storage of in, then of out, kGuard guard pairs either
//       side included, each as flags[n + 2 kGuard] then values[n + 2 kGuard].
//       Every slot of out and every guard starts as (1, -999999999).
//   drill02_driver ops OUTPUT PAIRS
//       seg_combine on the grader's pairs and triples, and seg_identity.
//       PAIRS: p, p x (a.flag a.value b.flag b.value); t, t x (a b c);
//       e, e x (flag value).
//       OUTPUT: identity (flag value); p results; t x ((a+b)+c, a+(b+c));
//       e x (identity+x, x+identity). Each pair is two words.
//   drill02_driver tree OUTPUT N...
//       the submission's tree_scan_inclusive on N elements of the shim's opaque
//       traced type, judged NOWHERE in this process. Each element holds an id by
//       the public rule of drill02_trace.hpp (the inputs and guards by position, the
//       identity, then the results of the combines in the order they were made);
//       the op only logs the two operand indices of every combine. OUTPUT: per case
//       the trace that drill02_trace.hpp lays out (n, total, combines, the log, the
//       index every slot holds at the end, guards included: N + 2 kGuard of them).
//       The grader hands it to harness/drivers/drill02_judge.cpp, a harness-only
//       program run afterwards in a fresh sandbox, which recomputes every range,
//       depth and diagnosis from the log (why that is sound: its header).
//
// Exit status: 0 ran (whatever the results); 90 the driver's own I/O failed;
// 91 out of memory; 92 (tree, several cases) the run's trace budget is spent, so the
// grader runs the cases one by one; anything else (a signal, an exit inside the
// submission) is the submission's.

#include "drill02_trace.hpp"
#include "drill_io.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

// The shim's ABI (drill02_shim.cpp), and the one entry point it calls back.
extern "C" {
void scanlab_seg_identity(long long* flag, long long* value);
void scanlab_seg_combine(long long a_flag, long long a_value, long long b_flag, long long b_value, long long* flag,
                         long long* value);
void scanlab_segmented_scan_tile(long long* in, long long* out, std::size_t total, std::size_t guard, std::size_t n,
                                 long long carry_flag, long long carry_value);
void scanlab_tree_scan_inclusive(unsigned long long* ids, std::size_t total, std::size_t guard, std::size_t n,
                                 unsigned long long identity);
unsigned long long scanlab_traced_combine(unsigned long long a, unsigned long long b);
}

namespace {

using scanlab_io::kGuard;
using scanlab_io::kPoison;

constexpr int kExitTraceFull = 92;

// ---- the submission's operator, as plain pairs ----------------------------------------

struct Pair {
    long long flag;
    long long value;
};

Pair combine(const Pair& a, const Pair& b) {
    Pair r{0, 0};
    ::scanlab_seg_combine(a.flag, a.value, b.flag, b.value, &r.flag, &r.value);
    return r;
}

Pair identity() {
    Pair r{0, 0};
    ::scanlab_seg_identity(&r.flag, &r.value);
    return r;
}

void appendPair(std::vector<long long>& words, const Pair& p) {
    words.push_back(p.flag);
    words.push_back(p.value);
}

void appendPairs(std::vector<long long>& words, const std::vector<Pair>& xs) {
    for (const Pair& p : xs) words.push_back(p.flag);
    for (const Pair& p : xs) words.push_back(p.value);
}

std::vector<Pair> readPairs(scanlab_io::Reader& reader, std::size_t n) {
    std::vector<Pair> xs(n);
    for (Pair& p : xs) p.flag = reader.next() != 0;
    for (Pair& p : xs) p.value = reader.next();
    return xs;
}

// ---- the harness's schedules of the submission's operator ---------------------------

std::vector<Pair> fold(const std::vector<Pair>& x) {
    std::vector<Pair> out(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) out[i] = i == 0 ? x[0] : combine(out[i - 1], x[i]);
    return out;
}

std::vector<Pair> hillisSteele(const std::vector<Pair>& x) {
    std::vector<Pair> src = x, dst(x.size());
    for (std::size_t offset = 1; offset < x.size(); offset *= 2) {
        for (std::size_t i = 0; i < x.size(); ++i) dst[i] = i >= offset ? combine(src[i - offset], src[i]) : src[i];
        src.swap(dst);
    }
    return src;
}

std::vector<Pair> blelloch(const std::vector<Pair>& x) {
    if (x.empty()) return {};
    std::size_t p = 1;
    while (p < x.size()) p *= 2;
    std::vector<Pair> t(p, identity());
    std::copy(x.begin(), x.end(), t.begin());
    for (std::size_t offset = 1; offset < p; offset *= 2) {
        for (std::size_t i = 2 * offset - 1; i < p; i += 2 * offset) t[i] = combine(t[i - offset], t[i]);
    }
    t[p - 1] = identity();
    for (std::size_t offset = p / 2; offset >= 1; offset /= 2) {
        for (std::size_t i = 2 * offset - 1; i < p; i += 2 * offset) {
            const Pair left = t[i - offset];
            t[i - offset] = t[i];
            t[i] = combine(t[i], left);  // everything before the left subtree, then the left subtree
        }
    }
    std::vector<Pair> out(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) out[i] = combine(t[i], x[i]);  // exclusive -> inclusive
    return out;
}

std::vector<long long> runSchedule(const char* mode, const char* case_path) {
    scanlab_io::Reader reader(scanlab_io::readWords(case_path), case_path);
    const std::size_t n = reader.size();
    const std::vector<Pair> in = readPairs(reader, n);
    const std::vector<Pair> out = std::strcmp(mode, "fold") == 0 ? fold(in)
                                  : std::strcmp(mode, "blelloch") == 0 ? blelloch(in) : hillisSteele(in);
    std::vector<long long> words;
    appendPairs(words, out);
    return words;
}

// ---- the traced element for tree_scan_inclusive: a log, judged elsewhere ------------
//
// Nothing in this process decides anything about the tree: the submission shares it,
// so it could rewrite any record kept here, or write a results file of its own and
// exit before main. The op only logs which two indices it combined and hands back
// the next index by drill02_trace.hpp's public rule; drill02_judge.cpp, run later in
// a sandbox of its own, recomputes ranges, depths and the first bad combine from
// the log. A rewritten or forged log is still judged, and to pass it must hold a
// log-depth DAG of combines whose results are every prefix: a tree scan.

using scanlab_trace::decode;
using scanlab_trace::encode;
using scanlab_trace::kTraceCap;

// What the op needs to number and log a combine, reset for every case.
std::vector<std::uint64_t> g_log;  // a | b << 32
std::uint64_t g_combines = 0;
std::uint64_t g_total = 0;
std::uint32_t g_tag = 0;  // the case's place in this run, plus one
std::uint64_t g_cap = kTraceCap;  // what this case may still log
bool g_alone = true;  // the only case of its run

std::vector<long long> runTree(const char* size_text, std::uint64_t logged_before) {
    char* end = nullptr;
    const unsigned long long parsed = std::strtoull(size_text, &end, 10);
    if (end == size_text || *end != '\0' || parsed > (1ull << 24)) scanlab_io::fail("tree wants a size, not", size_text);
    const std::size_t n = std::size_t(parsed);
    const std::size_t total = n + 2 * kGuard;

    g_log.clear();
    g_log.reserve(std::min<std::uint64_t>(std::uint64_t(n) * 20 + 64, kTraceCap));
    g_combines = 0;
    g_total = total;
    ++g_tag;
    g_cap = kTraceCap - logged_before;
    std::vector<unsigned long long> ids(total);
    for (std::size_t k = 0; k < total; ++k) ids[k] = encode(std::uint32_t(k + 1), g_tag);
    const unsigned long long identity_id = encode(std::uint32_t(total + 1), g_tag);

    ::scanlab_tree_scan_inclusive(ids.data(), total, kGuard, n, identity_id);

    std::vector<long long> words{(long long)n, (long long)total, (long long)g_combines, (long long)g_log.size()};
    words.reserve(words.size() + g_log.size() + total);
    for (const std::uint64_t entry : g_log) words.push_back((long long)entry);
    for (std::size_t k = 0; k < total; ++k) words.push_back((long long)decode(ids[k], g_tag));
    return words;
}

// ---- segmented_scan_tile ------------------------------------------------------------

std::vector<long long> runTile(const char* case_path) {
    scanlab_io::Reader reader(scanlab_io::readWords(case_path), case_path);
    const std::size_t n = reader.size();
    const long long carry_flag = reader.next() != 0;
    const long long carry_value = reader.next();
    const std::size_t total = n + 2 * kGuard;
    // flags[total] then values[total]; every guard and output slot is (1, poison).
    std::vector<long long> in(2 * total), out(2 * total);
    for (std::size_t k = 0; k < total; ++k) in[k] = out[k] = 1, in[total + k] = out[total + k] = kPoison;
    for (std::size_t i = 0; i < n; ++i) in[kGuard + i] = reader.next() != 0;
    for (std::size_t i = 0; i < n; ++i) in[total + kGuard + i] = reader.next();

    ::scanlab_segmented_scan_tile(in.data(), out.data(), total, kGuard, n, carry_flag, carry_value);

    std::vector<long long> words;
    scanlab_io::append(words, in);
    scanlab_io::append(words, out);
    return words;
}

// ---- the operator on pairs and triples ----------------------------------------------

std::vector<long long> runOps(const char* pairs_path) {
    scanlab_io::Reader reader(scanlab_io::readWords(pairs_path), pairs_path);
    auto pair = [&reader]() {
        Pair p{0, 0};
        p.flag = reader.next() != 0;
        p.value = reader.next();
        return p;
    };
    std::vector<long long> words;
    appendPair(words, identity());
    const std::size_t pairs = reader.size();
    for (std::size_t k = 0; k < pairs; ++k) {
        const Pair a = pair(), b = pair();
        appendPair(words, combine(a, b));
    }
    const std::size_t triples = reader.size();
    for (std::size_t k = 0; k < triples; ++k) {
        const Pair a = pair(), b = pair(), c = pair();
        appendPair(words, combine(combine(a, b), c));
        appendPair(words, combine(a, combine(b, c)));
    }
    const std::size_t elements = reader.size();
    for (std::size_t k = 0; k < elements; ++k) {
        const Pair a = pair();
        appendPair(words, combine(identity(), a));
        appendPair(words, combine(a, identity()));
    }
    return words;
}

std::vector<long long> run(const char* mode, const char* input) {
    if (std::strcmp(mode, "fold") == 0 || std::strcmp(mode, "hillis-steele") == 0 ||
        std::strcmp(mode, "blelloch") == 0) {
        return runSchedule(mode, input);
    }
    if (std::strcmp(mode, "tile") == 0) return runTile(input);
    if (std::strcmp(mode, "ops") == 0) return runOps(input);
    scanlab_io::fail("unknown mode (fold, hillis-steele, blelloch, tile, ops, tree):", mode);
}

}  // namespace

// The op of the shim's traced type: log the two operands' indices and hand back the
// next result's id. Past the cap a lone case gets "untraced" results, counted but not
// logged (far more work than a scan needs: the judge says so); a run of several cases
// stops instead, and the grader runs each case alone, so no case's verdict depends on
// what the others did.
extern "C" unsigned long long scanlab_traced_combine(unsigned long long a, unsigned long long b) {
    ++g_combines;
    if (g_log.size() >= g_cap) {
        if (!g_alone) {
            std::fflush(stdout);
            std::fputs("drill driver: the trace budget of this run is spent; run the cases one by one\n", stderr);
            std::_Exit(kExitTraceFull);
        }
        return encode(scanlab_trace::kUntraced, g_tag);
    }
    g_log.push_back(std::uint64_t(decode(a, g_tag)) | std::uint64_t(decode(b, g_tag)) << 32);
    return encode(std::uint32_t(g_total + 1 + g_log.size()), g_tag);
}

int main(int argc, char** argv) {
    scanlab_io::installOutOfMemoryHandler();
    if (argc < 4) {
        scanlab_io::fail("usage: drill02_driver fold|hillis-steele|blelloch|tile|ops|tree OUTPUT INPUT...; got",
                         argc > 0 ? argv[0] : "");
    }
    scanlab_io::Results results;
    if (std::strcmp(argv[1], "tree") == 0) {
        g_alone = argc == 4;
        std::uint64_t logged = 0;  // by the earlier cases of this run
        for (int k = 3; k < argc; ++k) {
            results.add(runTree(argv[k], logged));
            logged += g_log.size();
        }
    } else {
        for (int k = 3; k < argc; ++k) results.add(run(argv[1], argv[k]));
    }
    results.writeAndExit(argv[2]);
}
