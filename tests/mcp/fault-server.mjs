// A small MCP server on the official TypeScript SDK whose tools misbehave on
// purpose, for pi-rpc's fault tests: `echo` answers, `crash` kills the
// process mid-call, `garbage` writes a line that is not JSON-RPC mid-call,
// `hang` never answers, `token_length` reports the length of $FAULT_TOKEN
// (never its value). Writes its pid to $FAULT_PID_FILE.
// The SDK is loaded from $MCP_SDK_DIR (target/tools/mcp/node_modules/@modelcontextprotocol/sdk).
import { appendFileSync } from "node:fs";

const sdk = process.env.MCP_SDK_DIR;
const { Server } = await import(`${sdk}/dist/esm/server/index.js`);
const { StdioServerTransport } = await import(`${sdk}/dist/esm/server/stdio.js`);
const { ListToolsRequestSchema, CallToolRequestSchema } = await import(`${sdk}/dist/esm/types.js`);

if (process.env.FAULT_PID_FILE) appendFileSync(process.env.FAULT_PID_FILE, `${process.pid}\n`);

const server = new Server(
  { name: "fault-server", version: "1.0.0" },
  { capabilities: { tools: {} }, instructions: "Tools that fail on purpose." },
);
const object = (properties = {}) => ({ type: "object", properties });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    { name: "echo", description: "Echo the text back", inputSchema: object({ text: { type: "string" } }) },
    { name: "crash", description: "Exit the server process in the middle of the call", inputSchema: object() },
    { name: "garbage", description: "Write a line that is not JSON-RPC in the middle of the call", inputSchema: object() },
    { name: "hang", description: "Never answer", inputSchema: object() },
    { name: "token_length", description: "Length of the configured token", inputSchema: object() },
  ],
}));
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  switch (request.params.name) {
    case "echo":
      return { content: [{ type: "text", text: `echo: ${request.params.arguments?.text ?? ""}` }] };
    case "crash":
      process.exit(3);
    case "garbage":
      process.stdout.write("Traceback: something went wrong\n");
      return new Promise(() => {});
    case "hang":
      return new Promise(() => {});
    case "token_length":
      return { content: [{ type: "text", text: `token length ${(process.env.FAULT_TOKEN ?? "").length}` }] };
    default:
      return { content: [{ type: "text", text: "unknown tool" }], isError: true };
  }
});
await server.connect(new StdioServerTransport());
