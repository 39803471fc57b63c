// pi-rpc extension host: `pi.exec(command, args, options)`, run here (a
// child of the host, without a shell), with pi's documented semantics:
// `signal` and `timeout` terminate it (SIGTERM, SIGKILL 5 s later),
// `maxBuffer` (default 256 MiB) limits stdout and stderr together, and a
// command ended by a signal reports 128 + the signal number as `code`.

import { spawn } from "node:child_process";
import os from "node:os";

const DEFAULT_MAX_BUFFER = 256 * 1024 * 1024;
const KILL_AFTER_MS = 5000;

export function exec(command, args = [], options = {}, cwd = process.cwd()) {
	return new Promise((resolve) => {
		const maxBuffer = options.maxBuffer ?? DEFAULT_MAX_BUFFER;
		let stdout = "";
		let stderr = "";
		let size = 0;
		let killed = false;
		let truncated = false;
		let settled = false;
		let child;
		try {
			child = spawn(command, args, { cwd: options.cwd ?? cwd, stdio: ["ignore", "pipe", "pipe"], env: options.env ?? process.env });
		} catch (error) {
			resolve({ stdout: "", stderr: String(error?.message ?? error), code: 127, killed: false, truncated: false });
			return;
		}
		let killTimer;
		const terminate = () => {
			if (killed || child.exitCode !== null) return;
			killed = true;
			child.kill("SIGTERM");
			killTimer = setTimeout(() => child.kill("SIGKILL"), KILL_AFTER_MS);
			killTimer.unref?.();
		};
		const take = (chunk, append) => {
			if (truncated) return;
			const text = chunk.toString("utf8");
			if (size + chunk.length > maxBuffer) {
				append(text.slice(0, Math.max(0, maxBuffer - size)));
				size = maxBuffer;
				truncated = true;
				terminate();
				return;
			}
			size += chunk.length;
			append(text);
		};
		child.stdout.on("data", (c) => take(c, (t) => (stdout += t)));
		child.stderr.on("data", (c) => take(c, (t) => (stderr += t)));
		const timer = options.timeout > 0 ? setTimeout(terminate, options.timeout) : undefined;
		const onAbort = () => terminate();
		if (options.signal) {
			if (options.signal.aborted) terminate();
			else options.signal.addEventListener("abort", onAbort, { once: true });
		}
		const finish = (code, signal, spawnError) => {
			if (settled) return;
			settled = true;
			clearTimeout(timer);
			clearTimeout(killTimer);
			options.signal?.removeEventListener("abort", onAbort);
			let exitCode = code;
			if (spawnError) {
				exitCode = spawnError.code === "ENOENT" ? 127 : 126;
				stderr += String(spawnError.message);
			} else if (signal) {
				exitCode = 128 + (os.constants.signals[signal] ?? 0);
			}
			if (truncated && !exitCode) exitCode = 1;
			resolve({ stdout, stderr, code: exitCode ?? 0, killed, truncated });
		};
		child.on("error", (error) => finish(null, null, error));
		child.on("close", (code, signal) => finish(code, signal));
	});
}
