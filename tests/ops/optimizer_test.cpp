#include "tests/ops/op_test_util.h"
