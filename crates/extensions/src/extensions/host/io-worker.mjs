// pi-rpc extension host: the I/O thread. It alone reads the protocol from
// fd 0 and writes it to fd 1, so that the main thread (running the
// extension) can block in a synchronous call (pi's API has synchronous
// getters such as `ctx.sessionManager.getEntries()`) while lines keep
// flowing: the answer to the pending synchronous request is handed over on
// `syncPort` and the main thread woken through the shared flag; every
// other line is posted to the main thread's event loop.

import fs from "node:fs";
import net from "node:net";
import { parentPort, workerData } from "node:worker_threads";

const flag = new Int32Array(workerData.shared);
const syncPort = workerData.syncPort;
const pause = new Int32Array(new SharedArrayBuffer(4));
/** Id of the synchronous request the main thread waits on, if any. */
let syncId = null;

function writeLine(line) {
	const buf = Buffer.from(`${line}\n`, "utf8");
	let offset = 0;
	while (offset < buf.length) {
		try {
			offset += fs.writeSync(1, buf, offset);
		} catch (error) {
			if (error.code === "EAGAIN") {
				Atomics.wait(pause, 0, 0, 5);
				continue;
			}
			// pi-rpc is gone: nothing can be delivered any more.
			process.exit(0);
		}
	}
}

function wake(message) {
	syncId = null;
	syncPort.postMessage(message);
	Atomics.store(flag, 0, 1);
	Atomics.notify(flag, 0);
}

parentPort.on("message", (message) => {
	if (message.flush) {
		parentPort.postMessage({ flushed: true });
		return;
	}
	if (message.syncId !== undefined) syncId = message.syncId;
	writeLine(message.line);
});

function route(line) {
	if (syncId !== null && line.includes('"response"')) {
		try {
			const parsed = JSON.parse(line);
			if (parsed.type === "response" && String(parsed.id) === syncId) {
				wake({ response: parsed });
				return;
			}
		} catch {
			// not for us: the main thread reports unreadable lines
		}
	}
	parentPort.postMessage(line);
}

let pending = "";
// A socket on the pipe, not an fs stream: a pending fs read of stdin would
// hold the thread pool, and with it process.exit(), until pi-rpc writes.
let input;
try {
	input = new net.Socket({ fd: 0, readable: true, writable: false });
	input.setEncoding("utf8");
} catch {
	input = fs.createReadStream(null, { fd: 0, encoding: "utf8", autoClose: false });
}
input.on("data", (chunk) => {
	pending += chunk;
	let newline = pending.indexOf("\n");
	while (newline >= 0) {
		let line = pending.slice(0, newline);
		pending = pending.slice(newline + 1);
		if (line.endsWith("\r")) line = line.slice(0, -1);
		if (line.trim() !== "") route(line);
		newline = pending.indexOf("\n");
	}
});
const ended = () => {
	if (pending.trim() !== "") route(pending);
	pending = "";
	if (syncId !== null) wake({ eof: true });
	parentPort.postMessage({ eof: true });
};
input.on("end", ended);
input.on("error", ended);
