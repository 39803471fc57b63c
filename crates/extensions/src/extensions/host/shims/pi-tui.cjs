// pi-rpc extension host: `import … from "@earendil-works/pi-tui"` gives an
// extension pi's own TUI library (installed with the host, one copy shared
// by every extension module and the other shims). RPC mode has no terminal:
// its components are built and rendered only if an extension renders them
// itself, and nothing shows them.

"use strict";

module.exports = require("./host-services.cjs").services().tui();
