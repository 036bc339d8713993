// Hostile drill 01: no code of its own, only an #include of the reference solution
// by its absolute path (the test replaces @REPO@ with the real repository path).
// Right verdict: FAIL (the include path and the file system give the build nothing
// of the repository, so it does not compile).

#include "@REPO@/solutions/01_exclusive_to_inclusive.cpp"
