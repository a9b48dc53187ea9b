#include "capi/src/capi_internal.h"
