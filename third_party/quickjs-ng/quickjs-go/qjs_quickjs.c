/* run-js-server: the SHA-256 of the engine sources under deps/ as patched.
   Go's build cache hashes only the files of this directory, not the files
   they #include from deps/, so without this line an object compiled from
   other engine sources (the pristine module's, or before a patch) could be
   reused. third_party/quickjs-ng/pin_test.go checks it; its
   -update-cache-key flag rewrites it.
   engine-sources-sha256: 81bf351b9bddb39a11108d05fc545996ba72aca08591e0dc17402d83c4de0aa0 */
#include "deps/quickjs/quickjs.c"

int QuickjsGoPollInterrupt(JSContext *ctx) {
	return __js_poll_interrupts(ctx);
}
