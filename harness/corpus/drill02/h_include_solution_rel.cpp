// Hostile drill 02: no code of its own, only an #include of the reference solution by
// a relative path, which resolves against the grader's include directories when they
// lie inside the repository (harness/drivers/../../solutions/).
// Right verdict: FAIL (the build sees nothing of the repository).

#include "../../solutions/02_segmented_scan.cpp"
