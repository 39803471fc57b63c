// pi-rpc extension host: what `import … from "@earendil-works/pi-ai"` gives
// an extension: `StringEnum` (a plain `enum` schema every provider accepts),
// TypeBox's `Type` (which pi's copy still re-exports), and `uuidv7`. Model
// calls need pi's providers and are not available.

"use strict";

const crypto = require("node:crypto");
const { Type } = require("typebox");

function StringEnum(values, options = {}) {
	return Type.Unsafe({ ...options, type: "string", enum: [...values] });
}

/** A UUID version 7: 48 bits of milliseconds, then random bits. */
function uuidv7() {
	const bytes = crypto.randomBytes(16);
	const ms = BigInt(Date.now());
	for (let i = 0; i < 6; i++) bytes[i] = Number((ms >> BigInt(8 * (5 - i))) & 0xffn);
	bytes[6] = (bytes[6] & 0x0f) | 0x70;
	bytes[8] = (bytes[8] & 0x3f) | 0x80;
	const hex = bytes.toString("hex");
	return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function unsupported(name) {
	return () => {
		throw new Error(`${name}() is not available in pi-rpc's extension host (model calls need pi's providers)`);
	};
}

module.exports = {
	Type,
	StringEnum,
	uuidv7,
	complete: unsupported("complete"),
	stream: unsupported("stream"),
	streamSimple: unsupported("streamSimple"),
	completeSimple: unsupported("completeSimple"),
	getModel: unsupported("getModel"),
	registerApiProvider: unsupported("registerApiProvider"),
};
