// The public header compiles as C++ (in C++11 and later) and declares its functions extern "C".
#include "oneflow/oneflow_c.h"

#include <type_traits>

static_assert(std::is_same<decltype(&of_status_destroy), void (*)(of_status_t*)>::value, "C linkage, plain types");
static_assert(OF_DIM_UNKNOWN < 0, "OF_DIM_UNKNOWN is negative");

int main() { return of_abi_version() == OF_ABI_VERSION ? 0 : 1; }
