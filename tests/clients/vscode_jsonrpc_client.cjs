// A real editor-side client: vscode-jsonrpc (npm) with its default
// Content-Length framing drives `pi --mode rpc` and prints what it saw as JSON.
const { spawn } = require("node:child_process");
const { createMessageConnection, StreamMessageReader, StreamMessageWriter } = require("vscode-jsonrpc/node");

async function main() {
    const pi = spawn(process.env.PI_BIN, ["--mode", "rpc", "--no-session"], { stdio: ["pipe", "pipe", "inherit"] });
    const exited = new Promise((resolve) => pi.on("exit", (code) => resolve(code)));
    const conn = createMessageConnection(new StreamMessageReader(pi.stdout), new StreamMessageWriter(pi.stdin));
    let text = "";
    let turnEnded;
    const turnEnd = new Promise((resolve) => { turnEnded = resolve; });
    const notifications = [];
    conn.onNotification((method, params) => {
        notifications.push(method);
        if (method === "assistantMessage" && params.type === "delta") text += params.delta;
        if (method === "turnEnd") turnEnded(params);
    });
    conn.listen();
    const init = await conn.sendRequest("initialize", { cwd: process.cwd() });
    const status = await conn.sendRequest("getStatus", {});
    const accepted = await conn.sendRequest("prompt", { content: "hi from vscode-jsonrpc" });
    const end = await turnEnd;
    let methodNotFound = null;
    try {
        await conn.sendRequest("noSuchMethod", {});
    } catch (e) {
        methodNotFound = e.code;
    }
    let invalidParams = null;
    try {
        await conn.sendRequest("prompt", {});
    } catch (e) {
        invalidParams = { code: e.code, data: e.data };
    }
    const shutdown = await conn.sendRequest("shutdown", {});
    const exitCode = await exited;
    conn.dispose();
    console.log(JSON.stringify({ init, status, accepted, end, text, notifications, methodNotFound, invalidParams, shutdown, exitCode }));
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
