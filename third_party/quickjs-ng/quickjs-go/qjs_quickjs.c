/* run-js-server: the SHA-256 of the engine sources under deps/ as patched.
   Go's build cache hashes only the files of this directory, not the files
   they #include from deps/, so without this line an object compiled from
   other engine sources (the pristine module's, or before a patch) could be
   reused. third_party/quickjs-ng/pin_test.go checks it; its
   -update-cache-key flag rewrites it.
   engine-sources-sha256: c7273f4e182425c08ab9e5b42d915a3ee24c80bc278500caf9e531147c7077ca */
#include "deps/quickjs/quickjs.c"

int QuickjsGoPollInterrupt(JSContext *ctx) {
	return __js_poll_interrupts(ctx);
}
