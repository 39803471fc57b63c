// pi-rpc extension host: `@earendil-works/pi-ai/oauth` (pi 1.6.0's module
// exports no values at run time).

"use strict";

module.exports = {};
