/* run-js-server: the SHA-256 of the engine sources under deps/ as patched.
   Go's build cache hashes only the files of this directory, not the files
   they #include from deps/, so without this line an object compiled from
   other engine sources (the pristine module's, or before a patch) could be
   reused. third_party/quickjs-ng/pin_test.go checks it; its
   -update-cache-key flag rewrites it.
   engine-sources-sha256: e1bd0bbae305135d9b44f895cb0e84ef6e629b65eff8ee95fbf0db663a28583c */
#include "deps/quickjs/quickjs.c"

int QuickjsGoPollInterrupt(JSContext *ctx) {
	return __js_poll_interrupts(ctx);
}
