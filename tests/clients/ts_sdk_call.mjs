// The TypeScript SDK client over streamable HTTP: list tools, call one (the SDK validates
// structuredContent against the listed outputSchema), print what it got as JSON on stdout.
// usage: node ts_sdk_call.mjs URL TOOL ARGS_JSON
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, tool, args] = process.argv.slice(2);
const client = new Client({ name: "offload-mcp-test", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const tools = await client.listTools();
const result = await client.callTool({ name: tool, arguments: JSON.parse(args || "{}") });
process.stdout.write(JSON.stringify({ tools: tools.tools.map((t) => t.name), result }));
await client.close();
