// pi-rpc extension host: what `import … from "@earendil-works/pi-ai"` gives an
// extension: pi-ai's exports (ai/index.cjs), plus TypeBox's `Type`, which
// pi maps into this module for extensions (its docs say so).

"use strict";

const { Type } = require("typebox");

module.exports = { ...require("./ai/index.cjs").main(), Type };
