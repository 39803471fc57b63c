// Stands in for pi's `dist/cli.js` where a client spawns `node <cliPath>`
// (pi's own RpcClient does): runs the pi-rpc binary named by $PI_BIN with
// the same arguments and stdio, passes SIGTERM/SIGINT on, and exits with its
// exit code.
const { spawn } = require("node:child_process");

const bin = process.env.PI_BIN;
if (!bin) {
  process.stderr.write("pi_rpc_shim: set PI_BIN to the pi-rpc binary\n");
  process.exit(2);
}
const child = spawn(bin, process.argv.slice(2), { stdio: "inherit" });
for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("error", (e) => {
  process.stderr.write(`pi_rpc_shim: ${e.message}\n`);
  process.exit(127);
});
child.on("exit", (code, signal) => process.exit(code ?? (signal === "SIGTERM" ? 143 : 130)));
