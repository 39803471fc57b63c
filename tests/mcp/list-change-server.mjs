// A small MCP server on the official TypeScript SDK whose tool list changes,
// for pi-rpc's tests of `notifications/tools/list_changed`: it offers `grow`
// and `titled` (a tool with a title and no description); a call of `grow`
// adds the tool `grown` and tells the client the list changed. Each process
// appends `start <pid>` to $LIST_CHANGE_PID_FILE when it starts and
// `grow <pid>` when `grow` is called, so a test knows which process is whose.
// The SDK is loaded from $MCP_SDK_DIR (target/tools/mcp/node_modules/@modelcontextprotocol/sdk).
import { appendFileSync } from "node:fs";

const sdk = process.env.MCP_SDK_DIR;
const { Server } = await import(`${sdk}/dist/esm/server/index.js`);
const { StdioServerTransport } = await import(`${sdk}/dist/esm/server/stdio.js`);
const { ListToolsRequestSchema, CallToolRequestSchema } = await import(`${sdk}/dist/esm/types.js`);

const note = (what) => {
  if (process.env.LIST_CHANGE_PID_FILE) appendFileSync(process.env.LIST_CHANGE_PID_FILE, `${what} ${process.pid}\n`);
};
note("start");

const server = new Server(
  { name: "list-change-server", version: "1.0.0" },
  { capabilities: { tools: { listChanged: true } } },
);
const object = (properties = {}) => ({ type: "object", properties });
let grown = false;
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    { name: "grow", description: "Add the tool grown", inputSchema: object() },
    { name: "titled", title: "A tool with a title only", inputSchema: object() },
    ...(grown ? [{ name: "grown", description: "Added by grow", inputSchema: object() }] : []),
  ],
}));
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  switch (request.params.name) {
    case "grow":
      grown = true;
      note("grow");
      await server.sendToolListChanged();
      return { content: [{ type: "text", text: "grew" }] };
    case "grown":
      return { content: [{ type: "text", text: `grown in ${grown ? "this" : "another"} process` }] };
    default:
      return { content: [{ type: "text", text: request.params.name }] };
  }
});
await server.connect(new StdioServerTransport());
