// Hostile drill 01: stub functions, an unguarded main() that forges the driver's
// output files from the answers in its input files (today's driver format), and
// `#define main scanlab_forged_main` at the end, aimed at renaming a driver main
// pasted after this file. Right verdict: FAIL on all three checks ("your main() is not
// used"): macros never reach the driver, and no answer is ever in an input.

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <vector>

void exclusive_to_inclusive(const long long*, const long long*, long long*, std::size_t) {}
void inclusive_to_exclusive(const long long*, long long*, std::size_t) {}
long long total_from_exclusive(const long long*, const long long*, std::size_t) { return 0; }

static std::vector<long long> readAll(const char* path) {
    std::vector<long long> words;
    if (std::FILE* f = std::fopen(path, "rb")) {
        long long w;
        while (std::fread(&w, sizeof w, 1, f) == 1) words.push_back(w);
        std::fclose(f);
    }
    return words;
}

int main(int argc, char** argv) {
    if (argc != 4) return 0;
    // INPUT: n, in[n], incl[n], excl[n]; OUTPUT: six clean header words, then the answer.
    const std::vector<long long> w = readAll(argv[2]);
    if (w.empty()) return 0;
    const std::size_t n = std::size_t(w[0]);
    if (w.size() < 1 + 3 * n) return 0;
    std::vector<long long> out(6, 0);
    if (std::strcmp(argv[1], "e2i") == 0) out.insert(out.end(), w.begin() + 1 + n, w.begin() + 1 + 2 * n);
    if (std::strcmp(argv[1], "i2e") == 0) out.insert(out.end(), w.begin() + 1 + 2 * n, w.begin() + 1 + 3 * n);
    if (std::strcmp(argv[1], "total") == 0) out.push_back(n ? w[2 * n] : 0);
    if (std::FILE* f = std::fopen(argv[3], "wb")) {
        std::fwrite(out.data(), sizeof(long long), out.size(), f);
        std::fclose(f);
    }
    return 0;
}

#define main scanlab_forged_main
