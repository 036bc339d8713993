// A05 drill 03 (reference counts): work, depth and thread utilisation of the two
// tile scans, counted by running them.
//
// Simulates one block scanning one tile: Hillis-Steele (double-buffered, one
// thread per element) and Blelloch (up-sweep + down-sweep in place, one thread
// per pair, padded to a power of two with the identity), plus the bonus
// warp-shuffle block scan. Every number comes from an instrumented run on real
// data: each add goes through a counter that also marks its thread active for
// the current level, and each barrier closes a level. Both scans are checked
// against the sequential one, so the counts belong to scans that work. The
// grader of exercises/03_scan_analysis.md counts the same way in Python
// (harness/scanlab/scan_counts.py, so grading never needs solutions/), and a
// harness test checks that its `name = value` lines equal this program's.
//
// Build and run (from solutions/; `make run` does both):
//   g++ -std=c++17 -O2 -Wall -Wextra -o ../build/solutions/03_scan_analysis 03_scan_analysis.cpp
//   ../build/solutions/03_scan_analysis                 n = 512, 1024 and 300, per-level tables for 512
//   ../build/solutions/03_scan_analysis --n 4096,1025   other tile sizes
//   ../build/solutions/03_scan_analysis --slots         only the `name = value` lines
//
// What is counted (exercises/03_scan_analysis.md states the same model):
//   add          one application of + (Blelloch's down-sweep swap is a copy, not an add)
//   level        the work between two barriers; every level ends with exactly one barrier
//   barrier      one per level (the load barrier before the first level is not counted)
//   threads      Hillis-Steele: n; Blelloch: P/2, where P is n rounded up to a power of two
//   active       threads that do an add in that level (idle lanes that only copy are not active)
//   utilisation  active / threads; "under 25 %" means strictly below a quarter
//   non-power-of-two n: Hillis-Steele runs ceil(log2 n) levels on n threads, no padding;
//   Blelloch pads to P with the identity 0 and executes every add of the P-tree.
//
// Exit status: 0 every simulated scan matched the sequential one; 1 one did not;
// 2 bad command line.

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

constexpr std::size_t kMaxN = std::size_t(1) << 24;
constexpr std::size_t kBytesPerElement = 4;  // float tiles: the page's adds-per-byte figures
constexpr std::size_t kShuffleBlock = 1024;  // the bonus question's block

// ---- CPU reference -------------------------------------------------------------

static std::vector<long long> inclusiveReference(const std::vector<long long>& in) {
    std::vector<long long> out(in.size());
    long long running = 0;
    for (std::size_t i = 0; i < in.size(); ++i) out[i] = running += in[i];
    return out;
}

static std::vector<long long> exclusiveReference(const std::vector<long long>& in) {
    std::vector<long long> out(in.size());
    long long running = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
        out[i] = running;
        running += in[i];
    }
    return out;
}

static uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static std::vector<long long> makeInput(std::size_t n) {
    std::vector<long long> in(n);
    uint64_t state = n;
    for (long long& v : in) v = static_cast<long long>(splitmix64(state) % 16);
    return in;
}

// ---- the instrumented block ----------------------------------------------------
//
// Threads run one after another inside a level, which is exactly what a
// barrier-separated level permits: no thread reads what another writes in the
// same level (Hillis-Steele reads one buffer and writes the other; Blelloch's
// active threads touch disjoint pairs).

struct Level {
    std::string phase;
    std::size_t stride;
    std::size_t active;
    std::size_t adds;
};

class Block {
public:
    explicit Block(std::size_t threads) : threads_(threads), active_(threads, false) {}

    long long add(std::size_t tid, long long a, long long b) {
        ++adds_;
        ++level_adds_;
        if (!active_[tid]) {
            active_[tid] = true;
            ++level_active_;
        }
        return a + b;
    }

    // Closes the current level.
    void barrier(const std::string& phase, std::size_t stride) {
        levels_.push_back({phase, stride, level_active_, level_adds_});
        ++barriers_;
        level_active_ = level_adds_ = 0;
        active_.assign(threads_, false);
    }

    std::size_t threads() const { return threads_; }
    std::size_t adds() const { return adds_; }
    std::size_t barriers() const { return barriers_; }
    const std::vector<Level>& levels() const { return levels_; }

private:
    std::size_t threads_;
    std::vector<bool> active_;
    std::size_t adds_ = 0, barriers_ = 0, level_adds_ = 0, level_active_ = 0;
    std::vector<Level> levels_;
};

// ---- the two tile scans, simulated -----------------------------------------------

// Hillis-Steele, double-buffered: level k adds the element 2^k to the left.
static Block hillisSteele(const std::vector<long long>& in, std::vector<long long>& out) {
    const std::size_t n = in.size();
    Block block(n);
    std::vector<long long> src = in, dst(n);
    for (std::size_t offset = 1; offset < n; offset *= 2) {
        for (std::size_t tid = 0; tid < n; ++tid) {
            dst[tid] = tid >= offset ? block.add(tid, src[tid - offset], src[tid]) : src[tid];
        }
        block.barrier("-", offset);
        src.swap(dst);
    }
    out = src;
    return block;
}

static std::size_t paddedSize(std::size_t n) {
    std::size_t p = 1;
    while (p < n) p *= 2;
    return p;
}

// Blelloch: up-sweep (reduce), identity at the root, down-sweep; exclusive.
static Block blelloch(const std::vector<long long>& in, std::vector<long long>& out) {
    const std::size_t p = paddedSize(in.size());
    Block block(p / 2 > 0 ? p / 2 : 1);
    std::vector<long long> x(p, 0);  // padding with the identity 0
    for (std::size_t i = 0; i < in.size(); ++i) x[i] = in[i];

    std::size_t offset = 1;
    for (std::size_t active = p / 2; active > 0; active /= 2) {
        for (std::size_t tid = 0; tid < block.threads(); ++tid) {
            if (tid < active) {
                const std::size_t left = offset * (2 * tid + 1) - 1, right = offset * (2 * tid + 2) - 1;
                x[right] = block.add(tid, x[left], x[right]);
            }
        }
        block.barrier("up", offset);
        offset *= 2;
    }
    x[p - 1] = 0;  // the identity at the root: nothing precedes the whole tile
    for (std::size_t active = 1; active < p; active *= 2) {
        offset /= 2;
        for (std::size_t tid = 0; tid < block.threads(); ++tid) {
            if (tid < active) {
                const std::size_t left = offset * (2 * tid + 1) - 1, right = offset * (2 * tid + 2) - 1;
                const long long left_sum = x[left];
                x[left] = x[right];
                x[right] = block.add(tid, x[right], left_sum);
            }
        }
        block.barrier("down", offset);
    }
    out.assign(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(in.size()));
    return block;
}

// ---- the bonus: a warp-shuffle block scan ------------------------------------------
//
// Each warp scans its lanes with shfl_up (Hillis-Steele in lockstep: no shared
// memory, no barrier); lane warp-1 writes the warp total to shared memory;
// barrier; warp 0 scans the totals the same way; barrier; every warp but the
// first adds the total of the warps before it.

struct Shuffle {
    std::size_t steps_per_warp = 0, barriers = 0, adds = 0;
    bool correct = false;
};

static std::size_t warpScan(std::vector<long long>& lanes, std::size_t first, std::size_t width,
                            std::size_t& adds) {
    std::size_t steps = 0;
    for (std::size_t d = 1; d < width; d *= 2) {
        // shfl_up reads every lane's value from before this step: lockstep.
        const std::vector<long long> before(lanes.begin() + static_cast<std::ptrdiff_t>(first),
                                            lanes.begin() + static_cast<std::ptrdiff_t>(first + width));
        for (std::size_t lane = d; lane < width; ++lane) {
            lanes[first + lane] = before[lane - d] + before[lane];
            ++adds;
        }
        ++steps;
    }
    return steps;
}

static Shuffle shuffleBlock(std::size_t block, std::size_t warp) {
    Shuffle s;
    const std::vector<long long> in = makeInput(block);
    std::vector<long long> x = in;
    const std::size_t warps = block / warp;
    for (std::size_t w = 0; w < warps; ++w) s.steps_per_warp = warpScan(x, w * warp, warp, s.adds);
    std::vector<long long> totals(warps);
    for (std::size_t w = 0; w < warps; ++w) totals[w] = x[w * warp + warp - 1];
    ++s.barriers;  // the totals are in shared memory before warp 0 reads them
    warpScan(totals, 0, warps, s.adds);
    ++s.barriers;  // the scanned totals are back before the other warps read them
    for (std::size_t w = 1; w < warps; ++w) {
        for (std::size_t lane = 0; lane < warp; ++lane) {
            x[w * warp + lane] += totals[w - 1];
            ++s.adds;
        }
    }
    s.correct = x == inclusiveReference(in);
    return s;
}

static std::size_t warpSteps(std::size_t warp) {
    std::vector<long long> lanes = makeInput(warp);
    std::size_t adds = 0;
    return warpScan(lanes, 0, warp, adds);
}

// ---- host side -------------------------------------------------------------------

struct Analysis {
    std::size_t n = 0;
    Block hs{1}, bl{1};
    bool correct = false;
};

static Analysis analyse(std::size_t n) {
    Analysis a;
    a.n = n;
    const std::vector<long long> in = makeInput(n);
    std::vector<long long> inclusive, exclusive;
    a.hs = hillisSteele(in, inclusive);
    a.bl = blelloch(in, exclusive);
    a.correct = inclusive == inclusiveReference(in) && exclusive == exclusiveReference(in);
    return a;
}

static std::size_t levelsUnderQuarter(const Block& b) {
    std::size_t count = 0;
    for (const Level& level : b.levels()) count += 4 * level.active < b.threads();
    return count;
}

static std::string percent(std::size_t part, std::size_t whole) {
    if (whole == 0) return "-";
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", 100.0 * double(part) / double(whole));
    return text;
}

static std::string ratio(std::size_t a, std::size_t b) {
    if (b == 0) return "-";
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", double(a) / double(b));
    return text;
}

static std::string averageUtilisation(const Block& b) {
    return percent(b.adds(), b.levels().size() * b.threads());
}

static void printLevels(const char* title, const Block& b, bool with_phase) {
    std::printf("%s\n", title);
    std::printf("level  %sstride  active  utilisation   adds\n", with_phase ? "phase  " : "");
    std::printf("-----  %s------  ------  -----------  -----\n", with_phase ? "-----  " : "");
    std::size_t k = 0;
    for (const Level& level : b.levels()) {
        std::printf("%5zu  ", ++k);
        if (with_phase) std::printf("%-5s  ", level.phase.c_str());
        std::printf("%6zu  %6zu  %10s%%  %5zu\n", level.stride, level.active,
                    percent(level.active, b.threads()).c_str(), level.adds);
    }
    std::printf("\n");
}

static void printSlots(const Analysis& a) {
    const std::size_t n = a.n;
    std::printf("serial_adds_%zu = %zu\n", n, n - 1);
    std::printf("hs_threads_%zu = %zu\n", n, a.hs.threads());
    std::printf("hs_levels_%zu = %zu\n", n, a.hs.levels().size());
    std::printf("hs_adds_%zu = %zu\n", n, a.hs.adds());
    std::printf("hs_barriers_%zu = %zu\n", n, a.hs.barriers());
    std::printf("hs_avg_utilisation_pct_%zu = %s\n", n, averageUtilisation(a.hs).c_str());
    std::printf("hs_levels_under_25pct_%zu = %zu\n", n, levelsUnderQuarter(a.hs));
    std::printf("bl_padded_n_%zu = %zu\n", n, paddedSize(n));
    std::printf("bl_threads_%zu = %zu\n", n, a.bl.threads());
    std::printf("bl_levels_%zu = %zu\n", n, a.bl.levels().size());
    std::printf("bl_adds_%zu = %zu\n", n, a.bl.adds());
    std::printf("bl_barriers_%zu = %zu\n", n, a.bl.barriers());
    std::printf("bl_avg_utilisation_pct_%zu = %s\n", n, averageUtilisation(a.bl).c_str());
    std::printf("bl_levels_under_25pct_%zu = %zu\n", n, levelsUnderQuarter(a.bl));
    std::printf("extra_work_factor_%zu = %s\n", n, ratio(a.hs.adds(), a.bl.adds()).c_str());
    std::printf("hs_adds_per_byte_%zu = %s\n", n, ratio(a.hs.adds(), 2 * kBytesPerElement * n).c_str());
    std::printf("bl_adds_per_byte_%zu = %s\n", n, ratio(a.bl.adds(), 2 * kBytesPerElement * n).c_str());
}

static void printUsage(FILE* to) {
    std::fprintf(to,
                 "usage: 03_scan_analysis [--n N[,N...]] [--slots] [--help]\n"
                 "\n"
                 "  --n N,...   tile sizes to analyse, each 1..%zu (default 512,1024,300); the per-level\n"
                 "              tables are printed for the first\n"
                 "  --slots     print only the `name = value` lines the drill's grader reads\n"
                 "  --help      this text\n"
                 "\n"
                 "exit status: 0 every simulated scan matched the sequential one, 1 one did not,\n"
                 "2 bad command line\n",
                 kMaxN);
}

[[noreturn]] static void usageError(const std::string& why) {
    std::fprintf(stderr, "03_scan_analysis: %s\n\n", why.c_str());
    printUsage(stderr);
    std::exit(2);
}

static std::size_t parseSize(const std::string& text) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
        usageError("--n wants whole numbers from 1 to 16777216, not '" + text + "'");
    }
    errno = 0;
    const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
    if (errno == ERANGE || v < 1 || v > kMaxN) usageError("--n wants whole numbers from 1 to 16777216, not '" + text + "'");
    return std::size_t(v);
}

int main(int argc, char** argv) {
    std::vector<std::size_t> sizes{512, 1024, 300};  // the drill's sizes, as scan_counts.py
    bool slots_only = false;
    for (int a = 1; a < argc; ++a) {
        const std::string arg = argv[a];
        if (arg == "--help" || arg == "-h") {
            printUsage(stdout);
            return 0;
        } else if (arg == "--slots") {
            slots_only = true;
        } else if (arg == "--n" || arg.rfind("--n=", 0) == 0) {
            std::string value;
            if (arg == "--n") {
                if (a + 1 >= argc) usageError("--n needs a value");
                value = argv[++a];
            } else {
                value = arg.substr(4);
            }
            sizes.clear();
            std::size_t start = 0;
            while (true) {
                const std::size_t comma = value.find(',', start);
                sizes.push_back(parseSize(value.substr(start, comma - start)));
                if (comma == std::string::npos) break;
                start = comma + 1;
            }
        } else {
            usageError("unknown argument '" + arg + "'");
        }
    }

    std::vector<Analysis> analyses;
    bool correct = true;
    for (std::size_t n : sizes) {
        analyses.push_back(analyse(n));
        correct = correct && analyses.back().correct;
    }
    const Shuffle shuffle = shuffleBlock(kShuffleBlock, 32);
    correct = correct && shuffle.correct;

    if (slots_only) {
        for (const Analysis& a : analyses) printSlots(a);
        std::printf("warp_scan_steps_32 = %zu\n", warpSteps(32));
        std::printf("warp_scan_steps_64 = %zu\n", warpSteps(64));
        std::printf("shfl_block_barriers_%zu = %zu\n", kShuffleBlock, shuffle.barriers);
        std::printf("shfl_block_adds_%zu = %zu\n", kShuffleBlock, shuffle.adds);
        return correct ? 0 : 1;
    }

    std::printf("Drill 03: work, depth and utilisation, counted by simulating one block per tile\n");
    std::printf("input: integers 0..15 (splitmix64, seed n); a level ends at a barrier; utilisation =\n");
    std::printf("threads that add in the level / threads in the block\n\n");

    const Analysis& first = analyses.front();
    char title[160];
    std::snprintf(title, sizeof title, "Hillis-Steele, double-buffered, n = %zu: %zu threads, one per element",
                  first.n, first.hs.threads());
    printLevels(title, first.hs, false);
    std::snprintf(title, sizeof title, "Blelloch, n = %zu padded to %zu: %zu threads, one per pair", first.n,
                  paddedSize(first.n), first.bl.threads());
    printLevels(title, first.bl, true);

    std::printf("Summary\n");
    std::printf("algorithm            n  threads  levels   adds  barriers  avg utilisation  levels under 25%%  scan\n");
    std::printf("-------------  -------  -------  ------  -----  --------  ---------------  ----------------  -----\n");
    for (const Analysis& a : analyses) {
        const char* verdict = a.correct ? "ok" : "WRONG";
        std::printf("%-13s  %7zu  %7zu  %6zu  %5zu  %8zu  %14s%%  %16zu  %5s\n", "Hillis-Steele", a.n,
                    a.hs.threads(), a.hs.levels().size(), a.hs.adds(), a.hs.barriers(),
                    averageUtilisation(a.hs).c_str(), levelsUnderQuarter(a.hs), verdict);
        std::printf("%-13s  %7zu  %7zu  %6zu  %5zu  %8zu  %14s%%  %16zu  %5s\n", "Blelloch", a.n, a.bl.threads(),
                    a.bl.levels().size(), a.bl.adds(), a.bl.barriers(), averageUtilisation(a.bl).c_str(),
                    levelsUnderQuarter(a.bl), verdict);
    }
    std::printf("\n");

    std::printf("Bonus: warp-shuffle block scan, %zu elements, 32-lane warps\n", kShuffleBlock);
    std::printf("shuffle steps per warp: %zu with 32 lanes, %zu with 64; barriers: %zu; adds: %zu; scan: %s\n\n",
                warpSteps(32), warpSteps(64), shuffle.barriers, shuffle.adds, shuffle.correct ? "ok" : "WRONG");

    std::printf("Answer slots (exercises/03_scan_analysis.md asks for a subset)\n");
    for (const Analysis& a : analyses) printSlots(a);
    std::printf("warp_scan_steps_32 = %zu\n", warpSteps(32));
    std::printf("warp_scan_steps_64 = %zu\n", warpSteps(64));
    std::printf("shfl_block_barriers_%zu = %zu\n", kShuffleBlock, shuffle.barriers);
    std::printf("shfl_block_adds_%zu = %zu\n", kShuffleBlock, shuffle.adds);
    std::printf("\n");

    if (!correct) {
        std::printf("FAILED: a simulated scan did not match the sequential reference\n");
        return 1;
    }
    std::printf("PASS: every simulated scan matched the sequential reference; every count above was counted\n");
    return 0;
}
