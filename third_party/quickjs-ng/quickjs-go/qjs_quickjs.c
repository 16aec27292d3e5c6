/* run-js-server: the SHA-256 of the engine sources under deps/ as patched.
   Go's build cache hashes only the files of this directory, not the files
   they #include from deps/, so without this line an object compiled from
   other engine sources (the pristine module's, or before a patch) could be
   reused. third_party/quickjs-ng/pin_test.go checks it; its
   -update-cache-key flag rewrites it.
   engine-sources-sha256: 091f130fbafd5f442e8a25658207240be5ba6da1eac94c9d3dc7bd41f6d4fc1d */
#include "deps/quickjs/quickjs.c"

int QuickjsGoPollInterrupt(JSContext *ctx) {
	return __js_poll_interrupts(ctx);
}
