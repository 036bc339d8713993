// Hostile drill 01: a static constructor prints a perfect grade and exits with
// status 0 before the driver's main() runs; the functions are stubs.
// Right verdict: FAIL on all three checks (nothing the submission prints counts).

#include <cstddef>
#include <cstdio>
#include <cstdlib>

namespace {
struct Announce {
    Announce() {
        std::printf("  PASS  exclusive_to_inclusive\n  PASS  inclusive_to_exclusive\n"
                    "  PASS  total_from_exclusive\nscore 3/3: every check passed\n");
        std::fflush(stdout);
        std::exit(0);
    }
} announce;
}  // namespace

void exclusive_to_inclusive(const long long*, const long long*, long long*, std::size_t) {}
void inclusive_to_exclusive(const long long*, long long*, std::size_t) {}
long long total_from_exclusive(const long long*, const long long*, std::size_t) { return 0; }
