// pi-rpc extension host: the connection to pi-rpc (its extension protocol,
// README-extensions.md), through the I/O thread of io-worker.mjs.
//
// `send` writes one message; `request` makes an asynchronous request (a
// promise of its result); `call` makes a synchronous one, blocking this
// thread until pi-rpc answers (for pi's synchronous getters); `tell` sends
// a request without an id (no answer expected).

import { MessageChannel, receiveMessageOnPort, Worker } from "node:worker_threads";

/** Longest wait for the answer to a synchronous call. */
const SYNC_TIMEOUT_MS = 30_000;

export class Channel {
	constructor(onLine, onEnd) {
		this.shared = new SharedArrayBuffer(4);
		this.flag = new Int32Array(this.shared);
		const { port1, port2 } = new MessageChannel();
		this.syncPort = port1;
		this.nextId = 0;
		this.pending = new Map();
		this.closed = false;
		this.worker = new Worker(new URL("./io-worker.mjs", import.meta.url), {
			workerData: { shared: this.shared, syncPort: port2 },
			transferList: [port2],
		});
		this.worker.on("message", (message) => {
			if (typeof message === "string") {
				onLine(message);
			} else if (message.eof) {
				this.closed = true;
				for (const { reject } of this.pending.values()) reject(new Error("pi-rpc closed the connection"));
				this.pending.clear();
				onEnd();
			}
		});
		this.worker.on("error", (error) => {
			process.stderr.write(`pi-rpc extension host: I/O thread failed: ${error?.stack ?? error}\n`);
			process.exit(70);
		});
	}

	/**
	 * End the process once every message sent before is written: the I/O
	 * thread writes in order, so its answer to `flush` comes after them
	 * (a bare process.exit() would drop what it has not written yet).
	 */
	exit(code) {
		this.worker.on("message", (message) => {
			if (message?.flushed) process.exit(code);
		});
		this.worker.postMessage({ flush: true });
		setTimeout(() => process.exit(code), 2000).unref();
	}

	send(message) {
		this.worker.postMessage({ line: JSON.stringify(message) });
	}

	tell(method, params = {}) {
		this.send({ type: "request", method, params });
	}

	request(method, params = {}) {
		if (this.closed) return Promise.reject(new Error("pi-rpc closed the connection"));
		const id = `a${++this.nextId}`;
		return new Promise((resolve, reject) => {
			this.pending.set(id, { resolve, reject });
			this.send({ type: "request", id, method, params });
		});
	}

	/** Id of the last asynchronous request sent (to cancel it). */
	lastRequestId() {
		return `a${this.nextId}`;
	}

	call(method, params = {}) {
		if (this.closed) throw new Error("pi-rpc closed the connection");
		const id = `s${++this.nextId}`;
		Atomics.store(this.flag, 0, 0);
		this.worker.postMessage({ syncId: id, line: JSON.stringify({ type: "request", id, method, params }) });
		Atomics.wait(this.flag, 0, 0, SYNC_TIMEOUT_MS);
		for (;;) {
			const got = receiveMessageOnPort(this.syncPort);
			if (!got) throw new Error(`pi-rpc did not answer "${method}" within ${SYNC_TIMEOUT_MS} ms`);
			if (got.message.eof) throw new Error("pi-rpc closed the connection");
			const response = got.message.response;
			if (String(response.id) !== id) continue;
			if (response.error !== undefined && response.error !== null) {
				throw new Error(typeof response.error === "string" ? response.error : JSON.stringify(response.error));
			}
			return response.result;
		}
	}

	/** An answer to one of our asynchronous requests. */
	resolve(message) {
		const entry = this.pending.get(String(message.id));
		if (!entry) return;
		this.pending.delete(String(message.id));
		if (message.error !== undefined && message.error !== null) {
			entry.reject(new Error(typeof message.error === "string" ? message.error : JSON.stringify(message.error)));
		} else {
			entry.resolve(message.result);
		}
	}
}
