// The Day 31 grader's compile-time exports (see harness/scanlab/grade_day31.py).
//
// The grader compiles a wrapper translation unit, device code only: the
// submission first (#include), then this file, which copies the submission's
// two answers into __device__ globals while the COMPILER evaluates them. The
// harness's runner reads them back from the loaded module with
// cuModuleGetGlobal before any kernel runs, so no host code of the submission
// ever runs to produce them.
//
// If kFreeTotalVersion or kFreeTotalSentence is not a constant expression (or
// is missing), this part fails to compile; the grader then compiles the
// submission alone, grades its kernels, and fails the two answer checks with
// "keep them constexpr as in the starter". Every name here starts with
// scanlab_ so it cannot meet a name of the submission; the globals have
// external linkage so the compiler keeps them and cuModuleGetGlobal finds them
// by their plain names, and grade_day31.module_answers relies on ScanlabText's layout.

namespace scanlab_day31 {

constexpr unsigned int scanlab_capacity = 4096;  // bytes of the sentence kept; the rest is cut

struct ScanlabText {
    char bytes[scanlab_capacity];
    unsigned int length;     // bytes kept (at most scanlab_capacity)
    unsigned int truncated;  // 1 when the sentence was longer than scanlab_capacity
};

constexpr ScanlabText scanlab_copy(const char* text) {
    ScanlabText copy{};
    if (text == nullptr) return copy;
    unsigned int i = 0;
    for (; i < scanlab_capacity && text[i] != '\0'; ++i) copy.bytes[i] = text[i];
    copy.length = i;
    copy.truncated = i == scanlab_capacity && text[i] != '\0' ? 1u : 0u;
    return copy;
}

}  // namespace scanlab_day31

__device__ int scanlab_free_total_version = static_cast<int>(kFreeTotalVersion);
__device__ scanlab_day31::ScanlabText scanlab_free_total_sentence = scanlab_day31::scanlab_copy(kFreeTotalSentence);
