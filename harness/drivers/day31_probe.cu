// The Day 31 grader's GPU probe: a module of the harness's own, built with the
// same nvcc flags as a submission's device code, that gpu_runner --probe
// loads and runs before any submission is touched. If this loads and writes
// its word, the grading machine can run what the grader compiles.
extern "C" __global__ void scanlab_probe(unsigned int* word) {
    if (threadIdx.x == 0) *word = 0x5CA1AB1Eu;
}
