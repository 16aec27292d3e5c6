/* run-js-server: the SHA-256 of the engine sources under deps/ as patched.
   Go's build cache hashes only the files of this directory, not the files
   they #include from deps/, so without this line an object compiled from
   other engine sources (the pristine module's, or before a patch) could be
   reused. third_party/quickjs-ng/pin_test.go checks it; its
   -update-cache-key flag rewrites it.
   engine-sources-sha256: e5613276bfc19b41b3af281e62b65282527df4b0d4d05049a7dce0f2a3bc7728 */
#include "deps/quickjs/quickjs.c"

int QuickjsGoPollInterrupt(JSContext *ctx) {
	return __js_poll_interrupts(ctx);
}
