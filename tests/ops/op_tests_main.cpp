// Runs the op conformance tests, then checks that every op x kernel dtype in the registry was
// compared against a reference by some test (MarkCovered). The ledger is only complete when every
// test ran, so the check is skipped under --gtest_filter.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace oneflow::test {
std::vector<std::string> UncoveredOps();
}

int main(int argc, char** argv) {
  bool filtered = false;
  for (int i = 1; i < argc; ++i) filtered |= std::strncmp(argv[i], "--gtest_filter", 14) == 0;
  testing::InitGoogleTest(&argc, argv);
  int rc = RUN_ALL_TESTS();
  if (!filtered) {
    const std::vector<std::string> missing = oneflow::test::UncoveredOps();
    for (const std::string& m : missing) std::fprintf(stderr, "conformance: no reference test for %s\n", m.c_str());
    if (!missing.empty()) {
      std::fprintf(stderr, "conformance: %zu op x dtype pairs are not covered\n", missing.size());
      rc = 1;
    }
  }
  return rc;
}
