#include "deps/quickjs/libunicode.c"
