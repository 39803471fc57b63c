// pi-rpc extension host: pi's `RpcClient`, a client of `pi --mode rpc` run as
// a child process. Without `cliPath` it runs pi-rpc's own binary (the path
// pi-rpc gives its extension host in `PI_RPC_EXECUTABLE`); with `cliPath` it
// runs that script with node, as pi does. Commands are JSON lines on the
// child's stdin, answered by `response` lines carrying the same id; every
// other line is an event for the `onEvent` listeners.

"use strict";

const { spawn } = require("node:child_process");
const { StringDecoder } = require("node:string_decoder");

/** Calls `onLine` for each `\n`-ended line of `stream` (a trailing `\r` dropped); returns the detach function. */
function readLines(stream, onLine) {
	const decoder = new StringDecoder("utf8");
	let pending = "";
	const onData = (chunk) => {
		pending += typeof chunk === "string" ? chunk : decoder.write(chunk);
		let newline = pending.indexOf("\n");
		while (newline !== -1) {
			const line = pending.slice(0, newline).replace(/\r$/, "");
			pending = pending.slice(newline + 1);
			if (line.length > 0) onLine(line);
			newline = pending.indexOf("\n");
		}
	};
	stream.on("data", onData);
	return () => stream.off("data", onData);
}

/** The program and arguments that start the agent: pi-rpc itself, or node with the given script. */
function agentCommand(options) {
	const args = ["--mode", "rpc"];
	if (options.provider) args.push("--provider", options.provider);
	if (options.model) args.push("--model", options.model);
	if (options.args) args.push(...options.args);
	const own = process.env.PI_RPC_EXECUTABLE;
	if (!options.cliPath && own) return { program: own, args };
	return { program: process.execPath, args: [options.cliPath ?? "dist/cli.js", ...args] };
}

class RpcClient {
	constructor(options = {}) {
		this.options = options;
		this.process = null;
		this.detachStdout = null;
		this.listeners = [];
		this.pending = new Map();
		this.nextId = 0;
		this.stderr = "";
		this.exitError = null;
	}

	async start() {
		if (this.process) throw new Error("Client already started");
		this.exitError = null;
		const { program, args } = agentCommand(this.options);
		const child = spawn(program, args, {
			cwd: this.options.cwd,
			env: { ...process.env, ...this.options.env },
			stdio: ["pipe", "pipe", "pipe"],
		});
		this.process = child;
		const fail = (error) => {
			if (this.process !== child) return;
			this.exitError = this.exitError ?? error;
			this.failPending(this.exitError);
		};
		child.stderr.on("data", (data) => {
			this.stderr += data.toString();
			process.stderr.write(data);
		});
		child.once("exit", (code, signal) => {
			if (this.process !== child) return;
			this.exitError = this.exitedError(code, signal);
			this.failPending(this.exitError);
		});
		child.once("error", (error) => fail(new Error(`Agent process error: ${error.message}. Stderr: ${this.stderr}`)));
		child.stdin.on("error", (error) =>
			fail(new Error(`Agent process stdin error: ${error.message}. Stderr: ${this.stderr}`)),
		);
		this.detachStdout = readLines(child.stdout, (line) => this.receive(line));
		// As pi: give the process a moment, then report an immediate exit.
		await new Promise((resolve) => setTimeout(resolve, 100));
		if (child.exitCode !== null) {
			this.exitError = this.exitError ?? this.exitedError(child.exitCode, child.signalCode);
			throw this.exitError;
		}
	}

	async stop() {
		const child = this.process;
		if (!child) return;
		this.detachStdout?.();
		this.detachStdout = null;
		if (child.exitCode === null && child.signalCode === null) {
			await new Promise((resolve) => {
				const force = setTimeout(() => {
					child.kill("SIGKILL");
					resolve();
				}, 1000);
				child.once("exit", () => {
					clearTimeout(force);
					resolve();
				});
				child.kill("SIGTERM");
			});
		}
		this.process = null;
		this.pending.clear();
	}

	onEvent(listener) {
		this.listeners.push(listener);
		return () => {
			const at = this.listeners.indexOf(listener);
			if (at !== -1) this.listeners.splice(at, 1);
		};
	}

	getStderr() {
		return this.stderr;
	}

	async prompt(message, images, streamingBehavior) {
		return (await this.call({ type: "prompt", message, images, streamingBehavior })).disposition;
	}
	async steer(message, images) {
		return (await this.call({ type: "steer", message, images })).disposition;
	}
	async followUp(message, images) {
		return (await this.call({ type: "follow_up", message, images })).disposition;
	}
	async abort() {
		await this.call({ type: "abort" });
	}
	clearQueue() {
		return this.call({ type: "clear_queue" });
	}
	newSession(parentSession) {
		return this.call({ type: "new_session", parentSession });
	}
	getState() {
		return this.call({ type: "get_state" });
	}
	setModel(provider, modelId) {
		return this.call({ type: "set_model", provider, modelId });
	}
	cycleModel() {
		return this.call({ type: "cycle_model" });
	}
	async getAvailableModels() {
		return (await this.call({ type: "get_available_models" })).models;
	}
	async setThinkingLevel(level) {
		await this.call({ type: "set_thinking_level", level });
	}
	cycleThinkingLevel() {
		return this.call({ type: "cycle_thinking_level" });
	}
	async getAvailableThinkingLevels() {
		return (await this.call({ type: "get_available_thinking_levels" })).levels;
	}
	async setSteeringMode(mode) {
		await this.call({ type: "set_steering_mode", mode });
	}
	async setFollowUpMode(mode) {
		await this.call({ type: "set_follow_up_mode", mode });
	}
	compact(customInstructions) {
		return this.call({ type: "compact", customInstructions });
	}
	async setAutoCompaction(enabled) {
		await this.call({ type: "set_auto_compaction", enabled });
	}
	async setAutoRetry(enabled) {
		await this.call({ type: "set_auto_retry", enabled });
	}
	async abortRetry() {
		await this.call({ type: "abort_retry" });
	}
	bash(command) {
		return this.call({ type: "bash", command });
	}
	async abortBash() {
		await this.call({ type: "abort_bash" });
	}
	getSessionStats() {
		return this.call({ type: "get_session_stats" });
	}
	exportHtml(outputPath) {
		return this.call({ type: "export_html", outputPath });
	}
	switchSession(sessionPath) {
		return this.call({ type: "switch_session", sessionPath });
	}
	fork(entryId) {
		return this.call({ type: "fork", entryId });
	}
	clone() {
		return this.call({ type: "clone" });
	}
	async getForkMessages() {
		return (await this.call({ type: "get_fork_messages" })).messages;
	}
	getEntries(since) {
		return this.call({ type: "get_entries", since });
	}
	getTree() {
		return this.call({ type: "get_tree" });
	}
	async getLastAssistantText() {
		return (await this.call({ type: "get_last_assistant_text" })).text;
	}
	async setSessionName(name) {
		await this.call({ type: "set_session_name", name });
	}
	async getMessages() {
		return (await this.call({ type: "get_messages" })).messages;
	}
	async getCommands() {
		return (await this.call({ type: "get_commands" })).commands;
	}

	/** Resolves at the next `agent_settled` event (rejects after `timeout` ms, as pi's). */
	waitForIdle(timeout = 60000) {
		return this.collectEvents(timeout, "Timeout waiting for agent to become idle").then(() => undefined);
	}

	/** The events up to and including the next `agent_settled`. */
	collectEvents(timeout = 60000, what = "Timeout collecting events") {
		return new Promise((resolve, reject) => {
			const events = [];
			const timer = setTimeout(() => {
				stop();
				reject(new Error(`${what}. Stderr: ${this.stderr}`));
			}, timeout);
			const stop = this.onEvent((event) => {
				events.push(event);
				if (event.type !== "agent_settled") return;
				clearTimeout(timer);
				stop();
				resolve(events);
			});
		});
	}

	async promptAndWait(message, images, timeout = 60000) {
		const events = this.collectEvents(timeout);
		await this.prompt(message, images);
		return events;
	}

	receive(line) {
		let data;
		try {
			data = JSON.parse(line);
		} catch {
			return;
		}
		const waiting = data?.type === "response" && data.id ? this.pending.get(data.id) : undefined;
		if (waiting) {
			this.pending.delete(data.id);
			waiting.resolve(data);
			return;
		}
		for (const listener of [...this.listeners]) {
			try {
				listener(data);
			} catch {
				// A listener's failure is its own; the others still hear the event.
			}
		}
	}

	exitedError(code, signal) {
		return new Error(`Agent process exited (code=${code} signal=${signal}). Stderr: ${this.stderr}`);
	}

	failPending(error) {
		for (const waiting of this.pending.values()) waiting.reject(error);
		this.pending.clear();
	}

	/** Sends one command; resolves with the response (pi's `send`). */
	send(command) {
		const child = this.process;
		if (!child || !child.stdin) return Promise.reject(new Error("Client not started"));
		if (this.exitError) return Promise.reject(this.exitError);
		if (child.exitCode !== null) {
			this.exitError = this.exitedError(child.exitCode, child.signalCode);
			return Promise.reject(this.exitError);
		}
		if (child.stdin.destroyed || !child.stdin.writable) {
			this.exitError = new Error(`Agent process stdin is not writable. Stderr: ${this.stderr}`);
			return Promise.reject(this.exitError);
		}
		const id = `req_${++this.nextId}`;
		return new Promise((resolve, reject) => {
			const timer = setTimeout(() => {
				this.pending.delete(id);
				reject(new Error(`Timeout waiting for response to ${command.type}. Stderr: ${this.stderr}`));
			}, 30000);
			const settle = (fn) => (value) => {
				clearTimeout(timer);
				fn(value);
			};
			this.pending.set(id, { resolve: settle(resolve), reject: settle(reject) });
			try {
				child.stdin.write(`${JSON.stringify({ ...command, id })}\n`);
			} catch (error) {
				this.pending.get(id)?.reject(error instanceof Error ? error : new Error(String(error)));
				this.pending.delete(id);
			}
		});
	}

	/** The response's data, or its error thrown. */
	async call(command) {
		const response = await this.send(command);
		if (!response.success) throw new Error(response.error);
		return response.data;
	}

	getData(response) {
		if (!response.success) throw new Error(response.error);
		return response.data;
	}
}

module.exports = { RpcClient };
