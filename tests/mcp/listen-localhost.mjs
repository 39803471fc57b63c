// Preload for MCP servers that listen on every interface (`app.listen(PORT)`):
// binds them to 127.0.0.1 instead, on a free port when PORT=0, and prints
// `LISTENING <port>` on stderr once listening, for pi-rpc's HTTP tests.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || (typeof args[0] === "string" && /^\d+$/.test(args[0]))) {
    const port = Number(args[0]);
    const callback = args.find((a) => typeof a === "function");
    this.once("listening", () => process.stderr.write(`LISTENING ${this.address().port}\n`));
    return listen.call(this, port, "127.0.0.1", callback);
  }
  return listen.apply(this, args);
};
