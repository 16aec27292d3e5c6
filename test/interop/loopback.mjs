// Preloaded with `node --import ./loopback.mjs ...` in front of
// server-everything's own entry point: its HTTP and SSE servers call
// app.listen(PORT) with no host, which listens on every interface. This binds
// a listen call that gives a port and no host to 127.0.0.1 instead, so the
// test servers are reachable from this host only. Nothing else changes.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  if ((typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port))) && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
