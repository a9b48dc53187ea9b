// Runs the op conformance tests, then checks that every op x dtype of the registry's CPU kernels was
// compared against a reference by some test (MarkCovered; the CUDA kernels' ledger is
// tests/device/cuda_ops_test.cpp's). The ledger is only complete when every test ran, so the check is
// skipped under --gtest_filter.
#include "tests/ops/op_test_util.h"

int main(int argc, char** argv) { return oneflow::test::RunConformanceTests(argc, argv, oneflow::DeviceType::kCPU); }
