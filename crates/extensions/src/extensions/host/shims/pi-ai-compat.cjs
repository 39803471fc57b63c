// pi-rpc extension host: `@earendil-works/pi-ai/compat`: pi-ai's provider
// construction, model calls and built-in wire APIs (run by pi-rpc).

"use strict";

module.exports = require("./ai/index.cjs").compat();
