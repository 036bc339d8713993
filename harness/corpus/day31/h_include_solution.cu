// Hostile Day 31: no code of its own, only an #include of the reference solution by
// its absolute path (the test replaces @REPO@ with the repository's path).
// Right verdict: FAIL (the device build sees nothing of the repository).

#include "@REPO@/solutions/day31_shift_then_scan.cu"
