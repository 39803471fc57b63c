// pi-rpc extension host: pi's streaming assistant message in the
// `message_start` / `message_update` events extensions get while the agent
// streams a reply. pi-rpc sends the events of each read of the provider
// together, with the message's fields as they stand after it
// (`message_stream`). They are applied as they arrive, as pi-ai reads its
// stream ahead of the handlers, to one message object kept as pi-ai keeps
// it (`shims/ai/partial.cjs`: `stopReason: "pending"` until the provider
// says one, tool calls typed); each handler then gets, as pi's agent loop
// hands them over, `message`, a copy of that object made when its turn
// comes, and, in `assistantMessageEvent.partial`, the object itself.

import { createRequire } from "node:module";

const { PartialMessage } = createRequire(import.meta.url)("./shims/ai/partial.cjs");

export class StreamingMessage {
	/** The reply streaming now, kept by pi-ai's rules. */
	#partial;
	/** The events the reply's message pushed while a read is applied. */
	#pushed = [];

	/**
	 * One `message_stream` of pi-rpc's: the events for the handlers, each a
	 * function that makes it when its turn comes.
	 */
	receive(stream) {
		const events = Array.isArray(stream?.events) ? stream.events : [];
		const start = events.find((event) => event.type === "message_start");
		// A reply that failed before it began comes whole (its thinking level,
		// which pi records once a reply is over, said): pi-ai streamed nothing.
		const whole = start?.message?.thinkingLevel !== undefined;
		if (start) this.#partial = whole ? undefined : new PartialMessage({ push: (event) => this.#pushed.push(event), end() {} });
		// Updates of a reply this host did not see start go on as they came.
		if (!this.#partial) return events.map((event) => () => event);
		const batch = events.map((event) =>
			event.type === "message_start" ? { kind: "start", message: event.message } : { event: event.assistantMessageEvent },
		);
		this.#partial.receive({ batch, fields: stream.fields });
		const pushed = this.#pushed.splice(0);
		return pushed.map((event) =>
			event.type === "start"
				? () => ({ type: "message_start", message: { ...event.partial } })
				: () => ({ type: "message_update", message: { ...event.partial }, assistantMessageEvent: event }),
		);
	}
}
