// world-sdk.mjs: the official MCP TypeScript SDK client against `faultline world` ($FAULTLINE)
// serving examples/worlds/payments.yaml: tools listed with their schemas, a refund, the dedupe
// key's no-op, an IDEMPOTENCY_CONFLICT, a schema error, a lost response (the SDK's McpError
// -32001 with the canary) and the report closing the world; then the ledger.
// Prints "ok - ..." / "FAIL - ..." per check and a final "N passed, N failed".
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const FAULTLINE = process.env.FAULTLINE || "faultline";
const PAY = path.join(here, "../../examples/worlds/payments.yaml");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "faultline-world-sdk-"));
let passed = 0, failed = 0;

async function check(name, fn) {
  try { await fn(); passed++; console.log(`ok - ${name}`); }
  catch (e) { failed++; console.log(`FAIL - ${name}\n    ${String(e && e.stack || e).split("\n").slice(0, 4).join("\n    ")}`); }
}
function assert(c, msg) { if (!c) throw new Error(msg); }

const plan = path.join(tmp, "plan.json");
fs.writeFileSync(plan, execFileSync(FAULTLINE, ["plan", PAY, "--rep", "1"]));
const canary = JSON.parse(fs.readFileSync(plan, "utf8")).canary;
const ledger = path.join(tmp, "ledger.json");
const env = { ...process.env };
delete env.FAULTLINE_CONTROL_URL;
const transport = new StdioClientTransport({
  command: FAULTLINE, stderr: "pipe", env,
  args: ["world", PAY, "--plan", plan, "--ledger", ledger, "--i-have-a-sandbox"],
});
const client = new Client({ name: "faultline-world-sdk", version: "1.0.0" }, { capabilities: {} });
await client.connect(transport);
const refund = (key, extra = {}) => client.callTool({ name: "create_refund",
  arguments: { charge_id: "ch_2", amount: 1999, idempotency_key: key, ...extra } });

await check("tools/list through the SDK: the world's tools with their schemas, context, report", async () => {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  assert(JSON.stringify(names) === JSON.stringify(["list_charges", "list_refunds", "create_refund", "payments_context", "payments_report"]), names);
  const cr = tools.find((t) => t.name === "create_refund");
  assert(cr.inputSchema.required.includes("idempotency_key"), JSON.stringify(cr.inputSchema));
});

await check("the first refund's response is lost: McpError -32001 with the canary", async () => {
  let err = null;
  try { await refund("k1"); } catch (e) { err = e; }
  assert(err && err.code === -32001 && err.message.includes(canary), String(err));
});

await check("the retry with the same key returns the refund that happened; a new key is a second refund", async () => {
  const r = await refund("k1");
  assert(!r.isError && r.structuredContent.effect_id === "refunds-1", JSON.stringify(r));
  const r2 = await refund("k2");
  assert(!r2.isError && r2.structuredContent.effect_id === "refunds-2", JSON.stringify(r2));
});

await check("an idempotency conflict and a schema error are isError results", async () => {
  const c = await refund("k1", { amount: 5 });
  assert(c.isError && c.content[0].text.startsWith("IDEMPOTENCY_CONFLICT"), JSON.stringify(c));
  const s = await client.callTool({ name: "create_refund", arguments: { charge_id: 7 } });
  assert(s.isError && s.content[0].text.startsWith("INVALID_ARGUMENTS"), JSON.stringify(s));
});

await check("the report closes the world; the ledger holds both refunds", async () => {
  const r = await client.callTool({ name: "payments_report", arguments: { summary: "sdk" } });
  assert(r.structuredContent.status === "closed", JSON.stringify(r));
  const late = await refund("k3");
  assert(late.isError && late.content[0].text.startsWith("WORLD_CLOSED"), JSON.stringify(late));
  const l = JSON.parse(fs.readFileSync(ledger, "utf8"));
  const real = l.effects.filter((e) => !e.deduplicated).map((e) => e.effect_id);
  assert(JSON.stringify(real) === JSON.stringify(["refunds-1", "refunds-2"]), JSON.stringify(l.effects));
  assert(l.effects[0].fault === "effect.timeout_after_effect", JSON.stringify(l.effects[0]));
});

await client.close();
fs.rmSync(tmp, { recursive: true, force: true });
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
