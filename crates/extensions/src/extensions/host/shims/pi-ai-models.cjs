// pi-rpc extension host: `@earendil-works/pi-ai/models`.

"use strict";

module.exports = require("./ai/index.cjs").models();
