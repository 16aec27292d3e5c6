#include "deps/quickjs/dtoa.c"
