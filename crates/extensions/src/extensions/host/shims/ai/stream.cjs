// pi-rpc extension host: pi-ai's event streams. `EventStream` is an async
// iterable fed with `push()` and closed with `end()`, whose `result()` is the
// final value; an `AssistantMessageEventStream` ends with its `done` or
// `error` event and times the response (`durationMs`).

"use strict";

class EventStream {
	#queue = [];
	#waiting = [];
	#settle;
	#result;

	constructor(isComplete, extractResult) {
		this.isComplete = isComplete;
		this.extractResult = extractResult;
		this.done = false;
		this.#result = new Promise((resolve) => {
			this.#settle = resolve;
		});
	}

	push(event) {
		if (this.done) return;
		if (this.isComplete(event)) {
			this.done = true;
			this.#settle(this.extractResult(event));
		}
		const waiter = this.#waiting.shift();
		if (waiter) waiter({ value: event, done: false });
		else this.#queue.push(event);
	}

	end(result) {
		this.done = true;
		if (result !== undefined) this.#settle(result);
		for (const waiter of this.#waiting.splice(0)) waiter({ value: undefined, done: true });
	}

	async *[Symbol.asyncIterator]() {
		for (;;) {
			if (this.#queue.length > 0) {
				yield this.#queue.shift();
			} else if (this.done) {
				return;
			} else {
				const next = await new Promise((resolve) => this.#waiting.push(resolve));
				if (next.done) return;
				yield next.value;
			}
		}
	}

	result() {
		return this.#result;
	}
}

class AssistantMessageEventStream extends EventStream {
	#wallStart = Date.now();
	#clockStart = performance.now();

	constructor() {
		super(
			(event) => event.type === "done" || event.type === "error",
			(event) => {
				if (event.type === "done") return event.message;
				if (event.type === "error") return event.error;
				throw new Error("Unexpected event type for final result");
			},
		);
	}

	push(event) {
		if (event?.type === "done") this.#time(event.message);
		else if (event?.type === "error") this.#time(event.error);
		super.push(event);
	}

	end(result) {
		if (result !== undefined) this.#time(result);
		super.end(result);
	}

	/** A message of this response gets its duration, unless it has one or started before the stream. */
	#time(message) {
		if (!message || this.done || message.durationMs !== undefined || message.timestamp < this.#wallStart) return;
		message.durationMs = Math.max(0, Math.round(performance.now() - this.#clockStart));
	}
}

module.exports = {
	EventStream,
	AssistantMessageEventStream,
	createAssistantMessageEventStream: () => new AssistantMessageEventStream(),
};
