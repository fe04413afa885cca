// The TypeScript SDK's client, offering sampling, elicitation (form + URL) and roots, through a stdio command.
// Usage: node ts_relay_client.mjs COMMAND [ARGS...]  — calls the relay fixture's tools, prints one JSON object.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CreateMessageRequestSchema,
  ElicitationCompleteNotificationSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [command, ...args] = process.argv.slice(2);
const client = new Client(
  { name: "ts-relay-client", version: "1.0.0" },
  { capabilities: { sampling: {}, elicitation: { form: {}, url: {} }, roots: { listChanged: true } } },
);
const seen = [];
const logs = [];
client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
  seen.push("sampling");
  const text = request.params.messages[0].content.text;
  return { role: "assistant", content: { type: "text", text: `ts:${text}` }, model: "ts-model" };
});
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  const mode = request.params.mode ?? "form";
  seen.push(`elicitation:${mode}`);
  return mode === "url" ? { action: "accept" } : { action: "accept", content: { name: "Ada-ts" } };
});
client.setRequestHandler(ListRootsRequestSchema, async () => {
  seen.push("roots");
  return { roots: [{ uri: "file:///roots/ts", name: "ts" }] };
});
client.setNotificationHandler(ElicitationCompleteNotificationSchema, async (n) => {
  seen.push(`complete:${n.params.elicitationId}`);
});
client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => {
  logs.push(n.params.logger);
});

const transport = new StdioClientTransport({ command, args, stderr: "ignore" });
await client.connect(transport);
const text = (r) => r.content.map((c) => c.text ?? "").join("");
const out = {};
out.sample = text(await client.callTool({ name: "sample", arguments: { prompt: "hey" } }));
out.ask_name = text(await client.callTool({ name: "ask_name", arguments: {} }));
out.open_url = text(await client.callTool({ name: "open_url", arguments: { url: "https://example.com/ts" } }));
out.roots = text(await client.callTool({ name: "roots", arguments: {} }));
out.chatty = text(await client.callTool({ name: "chatty", arguments: { n: 2 } }));
await new Promise((resolve) => setTimeout(resolve, 300));
out.seen = seen;
out.logs = logs;
console.log(JSON.stringify(out));
await client.close();
