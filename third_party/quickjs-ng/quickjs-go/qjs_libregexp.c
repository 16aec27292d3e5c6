#include "deps/quickjs/libregexp.c"
