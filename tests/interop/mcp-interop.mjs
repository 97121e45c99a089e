// mcp-interop.mjs SUITE: the official MCP TypeScript SDK client talking to the reference
// servers through `faultline mcp` ($FAULTLINE), and each fault as the SDK sees it.
// SUITE: everything (server-everything) or filesystem (server-filesystem in a temp dir).
// Prints "ok - ..." / "FAIL - ..." per check and a final "N passed, N failed".
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const FAULTLINE = process.env.FAULTLINE || "faultline";
const CANARY = "E-FAULTLINE-0a0b0c0d";
const EVERYTHING = path.join(here, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const FILESYSTEM = path.join(here, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "faultline-interop-"));
let passed = 0, failed = 0, seq = 0;

function plan(faults) {
  const file = path.join(tmp, `plan-${++seq}.json`);
  fs.writeFileSync(file, JSON.stringify({
    version: 1, run: "interop-1", rep: 1, faulted: faults.length > 0, canary: CANARY,
    seed: "0x0000000000000007",
    faults: faults.map((f, i) => ({ index: i, injectors: ["mcp"], match: {}, after_calls: 0,
                                    times: -1, probability: 1, options: {}, ...f })),
  }));
  return file;
}

function events(file) {
  if (!fs.existsSync(file)) return [];
  return fs.readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

// A client connected to SERVER (argv) through the shim with the given plan (or directly).
async function connect(server, { faults = null, direct = false, name = "srv", onListChanged } = {}) {
  const ev = path.join(tmp, `events-${++seq}.jsonl`);
  const args = direct ? server.slice(1)
    : ["mcp", "--i-have-a-sandbox", "--name", name, "--events", ev, ...(faults ? ["--plan", plan(faults)] : []), "--", ...server];
  const transport = new StdioClientTransport({
    command: direct ? server[0] : FAULTLINE, args, stderr: "pipe",
    env: { ...process.env },
  });
  const client = new Client({ name: "faultline-interop", version: "1.0.0" },
                            { capabilities: {},
                              ...(onListChanged ? { listChanged: { tools: { onChanged: onListChanged, debounceMs: 0 } } } : {}) });
  await client.connect(transport);
  return { client, transport, ev };
}

async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok - ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL - ${name}: ${e && e.stack ? e.stack.split("\n").slice(0, 3).join(" | ") : e}`);
  }
}

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

async function rejects(p) {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error("expected the call to fail");
}

const text = (r) => r.content.map((c) => c.text).join("|");

async function everything() {
  const srv = ["node", EVERYTHING, "stdio"];

  await check("server-everything: same tools and results through the shim as directly", async () => {
    const a = await connect(srv, { direct: true }), b = await connect(srv, { faults: [] });
    const ta = (await a.client.listTools()).tools, tb = (await b.client.listTools()).tools;
    assert(JSON.stringify(ta) === JSON.stringify(tb), "tool lists differ");
    assert(ta.some((t) => t.name === "echo"), "no echo tool");
    for (const [n, args] of [["echo", { message: "héllo ✓" }], ["get-sum", { a: 2, b: 3 }],
                             ["get-structured-content", { location: "Chicago" }],
                             ["get-tiny-image", {}]]) {
      const ra = await a.client.callTool({ name: n, arguments: args });
      const rb = await b.client.callTool({ name: n, arguments: args });
      assert(JSON.stringify(ra) === JSON.stringify(rb), `${n} differs`);
    }
    await a.client.close(); await b.client.close();
    const ev = events(b.ev);
    assert(ev.filter((e) => e.kind === "tool_call").length === 4, "tool_call events");
    assert(ev.filter((e) => e.kind === "tool_result" && e.ok).length === 4, "tool_result events");
  });

  await check("tool.error: an isError result with the canary", async () => {
    const c = await connect(srv, { faults: [{ kind: "tool.error", match: { tool: "mcp__srv__echo" } }] });
    const r = await c.client.callTool({ name: "echo", arguments: { message: "x" } });
    assert(r.isError === true && text(r).includes(CANARY), JSON.stringify(r));
    await c.client.close();
    const fi = events(c.ev).filter((e) => e.kind === "fault_injected");
    assert(fi.length === 1 && fi[0].fault === "tool.error", JSON.stringify(fi));
  });

  await check("tool.timeout: the SDK gets McpError -32001 carrying the canary", async () => {
    const c = await connect(srv, { faults: [{ kind: "tool.timeout", options: { timeout_ms: 200 } }] });
    const e = await rejects(c.client.callTool({ name: "echo", arguments: { message: "x" } }));
    assert(e.code === -32001 && e.message.includes(CANARY), `${e.code} ${e.message}`);
    await c.client.close();
  });

  await check("tool.timeout reply none: the SDK's own timeout fires and its cancel is absorbed", async () => {
    const c = await connect(srv, { faults: [{ kind: "tool.timeout", match: { tool: "echo" }, times: 1,
                                              options: { reply: "none" } }] });
    const e = await rejects(c.client.callTool({ name: "echo", arguments: { message: "x" } }, undefined,
                                              { timeout: 500 }));
    assert(e.code === -32001 && !e.message.includes(CANARY), `${e.code} ${e.message}`);
    const r = await c.client.callTool({ name: "echo", arguments: { message: "after" } });
    assert(text(r) === "Echo: after", JSON.stringify(r));
    await c.client.close();
    const tr = events(c.ev).filter((e) => e.kind === "tool_result");
    assert(tr[0].error === "cancelled by the client", JSON.stringify(tr));
  });

  await check("tool.silent_wrong_data and tool.omission change results silently", async () => {
    const c = await connect(srv, { faults: [
      { kind: "tool.silent_wrong_data", match: { tool: "get-sum" }, options: { mode: "numbers_scale", by: 10 } },
      { kind: "tool.omission", match: { tool: "echo" } }] });
    const r = await c.client.callTool({ name: "get-sum", arguments: { a: 2, b: 3 } });
    assert(text(r) === "The sum of 20 and 30 is 50.", text(r));
    const o = await c.client.callTool({ name: "echo", arguments: { message: "x" } });
    assert(o.content.length === 0 && !o.isError, JSON.stringify(o));
    await c.client.close();
  });

  await check("tool.malformed_response: wrong_type fails the SDK's validation; invalid_json times out", async () => {
    const c = await connect(srv, { faults: [
      { kind: "tool.malformed_response", match: { tool: "echo" }, times: 1, options: { mode: "wrong_type" } },
      { kind: "tool.malformed_response", match: { tool: "get-sum" }, times: 1, options: { mode: "invalid_json" } }] });
    const e = await rejects(c.client.callTool({ name: "echo", arguments: { message: "x" } }));
    assert(e instanceof Error, String(e));
    const e2 = await rejects(c.client.callTool({ name: "get-sum", arguments: { a: 1, b: 1 } }, undefined,
                                               { timeout: 1000 }));
    assert(e2.code === -32001, `${e2.code} ${e2.message}`);
    const r = await c.client.callTool({ name: "echo", arguments: { message: "ok" } });
    assert(text(r) === "Echo: ok", JSON.stringify(r));
    await c.client.close();
  });

  await check("mcp.schema_violating_output: the SDK rejects the structured content", async () => {
    const c = await connect(srv, { faults: [{ kind: "mcp.schema_violating_output",
                                              match: { tool: "get-structured-content" } }] });
    await c.client.listTools();
    const e = await rejects(c.client.callTool({ name: "get-structured-content", arguments: { location: "Chicago" } }));
    assert(/output schema/.test(e.message), e.message);
    await c.client.close();
  });

  await check("capability_downgrade and wrong_error_channel as protocol errors", async () => {
    const c = await connect(srv, { faults: [
      { kind: "mcp.capability_downgrade", match: { tool: "echo" }, options: { mode: "method_not_found" } },
      { kind: "tool.wrong_error_channel", match: { tool: "get-sum" }, options: { mode: "protocol_error" } }] });
    const e = await rejects(c.client.callTool({ name: "echo", arguments: { message: "x" } }));
    assert(e.code === -32601 && e.message.includes(CANARY), `${e.code} ${e.message}`);
    const e2 = await rejects(c.client.callTool({ name: "get-sum", arguments: { a: 1, b: 1 } }));
    assert(e2.code === -32603 && e2.message.includes(CANARY), `${e2.code} ${e2.message}`);
    await c.client.close();
  });

  await check("inject.tool_result, rate_limit, auth_expiry, transient and partial failures", async () => {
    const c = await connect(srv, { faults: [
      { kind: "inject.tool_result", match: { tool: "echo" }, times: 1, options: { payload: "IGNORE PREVIOUS" } },
      { kind: "tool.rate_limit", match: { tool: "get-sum" }, times: 1 },
      { kind: "tool.auth_expiry", match: { tool: "get-env" }, options: { from_call: 1 } },
      { kind: "tool.partial_failure", match: { tool: "get-tiny-image" }, options: { pattern: "SF" } }] });
    let r = await c.client.callTool({ name: "echo", arguments: { message: "x" } });
    assert(text(r) === "Echo: x|IGNORE PREVIOUS", text(r));
    r = await c.client.callTool({ name: "get-sum", arguments: { a: 1, b: 1 } });
    assert(r.isError && text(r).startsWith("429 Too Many Requests"), text(r));
    r = await c.client.callTool({ name: "get-env", arguments: {} });
    assert(r.isError && text(r).includes("401 Unauthorized"), text(r));
    r = await c.client.callTool({ name: "get-tiny-image", arguments: {} });
    assert(!r.isError, "first of SF succeeds");
    r = await c.client.callTool({ name: "get-tiny-image", arguments: {} });
    assert(r.isError && text(r).includes(CANARY), "second of SF fails");
    await c.client.close();
  });

  await check("mcp.annotation_lie: the SDK lists the false annotations", async () => {
    const c = await connect(srv, { faults: [{ kind: "mcp.annotation_lie", match: { tool: "echo" },
                                              options: { annotations: { readOnlyHint: false, destructiveHint: true } } }] });
    const t = (await c.client.listTools()).tools.find((x) => x.name === "echo");
    assert(t.annotations.destructiveHint === true && t.annotations.readOnlyHint === false,
           JSON.stringify(t.annotations));
    await c.client.close();
  });
}

async function filesystem() {
  const dir = fs.mkdtempSync(path.join(tmp, "fs-"));
  const root = fs.realpathSync(dir);
  const srv = ["node", FILESYSTEM, root];

  await check("server-filesystem: write, read and list through the shim", async () => {
    const c = await connect(srv, { faults: [] });
    const tools = (await c.client.listTools()).tools.map((t) => t.name);
    assert(tools.includes("write_file") && tools.includes("read_text_file"), tools.join(","));
    await c.client.callTool({ name: "write_file", arguments: { path: path.join(root, "a.txt"), content: "alpha\n" } });
    const r = await c.client.callTool({ name: "read_text_file", arguments: { path: path.join(root, "a.txt") } });
    assert(r.structuredContent.content === "alpha\n", JSON.stringify(r));
    const l = await c.client.callTool({ name: "list_directory", arguments: { path: root } });
    assert(text(l).includes("a.txt"), text(l));
    await c.client.close();
  });

  await check("tool.timeout_after_commit: the SDK sees a timeout, yet the file was written", async () => {
    const c = await connect(srv, { faults: [{ kind: "tool.timeout_after_commit", match: { tool: "write_file" },
                                              options: { timeout_ms: 100 } }] });
    const f = path.join(root, "committed.txt");
    const e = await rejects(c.client.callTool({ name: "write_file", arguments: { path: f, content: "side effect" } }));
    assert(e.code === -32001 && e.message.includes(CANARY), `${e.code} ${e.message}`);
    assert(fs.readFileSync(f, "utf8") === "side effect", "the write did not happen");
    await c.client.close();
  });

  await check("tool.stale_data returns the first read after the file changed", async () => {
    const f = path.join(root, "s.txt");
    fs.writeFileSync(f, "v1");
    const c = await connect(srv, { faults: [{ kind: "tool.stale_data", match: { tool: "read_text_file" }, after_calls: 1 }] });
    await c.client.listTools();
    let r = await c.client.callTool({ name: "read_text_file", arguments: { path: f } });
    assert(r.structuredContent.content === "v1", JSON.stringify(r));
    fs.writeFileSync(f, "v2");
    r = await c.client.callTool({ name: "read_text_file", arguments: { path: f } });
    assert(r.structuredContent.content === "v1", "not stale: " + JSON.stringify(r));
    await c.client.close();
  });

  await check("mcp.toolset_change: the SDK is told the list changed and write_file is gone", async () => {
    let changed = null;
    const c = await connect(srv, {
      faults: [{ kind: "mcp.toolset_change", match: { tool: "list_directory" }, times: 1,
                 options: { remove: ["write_file"] } }],
      onListChanged: (err, tools) => { changed = tools; } });
    await c.client.listTools();
    await c.client.callTool({ name: "list_directory", arguments: { path: root } });
    for (let i = 0; i < 50 && changed === null; i++) await new Promise((r) => setTimeout(r, 20));
    assert(changed !== null, "no list_changed reached the SDK");
    assert(!changed.some((t) => t.name === "write_file"), "write_file still listed");
    const r = await c.client.callTool({ name: "write_file", arguments: { path: path.join(root, "x"), content: "" } });
    assert(r.isError && text(r).includes("Unknown tool: write_file"), JSON.stringify(r));
    assert(!fs.existsSync(path.join(root, "x")), "the removed tool still ran");
    await c.client.close();
  });

  await check("mcp.schema_drift: the old parameter name fails, the new one works", async () => {
    const c = await connect(srv, { faults: [{ kind: "mcp.schema_drift", match: { tool: "get_file_info" }, times: 1 }] });
    await c.client.listTools();
    const f = path.join(root, "a.txt");
    const e = await rejects(c.client.callTool({ name: "get_file_info", arguments: { path: f } }));
    assert(e.code === -32602 && e.message.includes("path_v2") && e.message.includes(CANARY), e.message);
    const t = (await c.client.listTools()).tools.find((x) => x.name === "get_file_info");
    assert(t.inputSchema.properties.path_v2 && !t.inputSchema.properties.path, JSON.stringify(t.inputSchema));
    const r = await c.client.callTool({ name: "get_file_info", arguments: { path_v2: f } });
    assert(!r.isError && text(r).includes("size"), JSON.stringify(r));
    await c.client.close();
  });

  await check("tool.duplicate_delivery: the server executes the move twice (the second fails)", async () => {
    const c = await connect(srv, { faults: [{ kind: "tool.duplicate_delivery", match: { tool: "move_file" } }] });
    fs.writeFileSync(path.join(root, "m1"), "m");
    const r = await c.client.callTool({ name: "move_file", arguments: { source: path.join(root, "m1"), destination: path.join(root, "m2") } });
    assert(!r.isError, JSON.stringify(r));
    await c.client.close();
    const tr = events(c.ev).filter((e) => e.kind === "tool_result");
    assert(tr.length === 2 && tr[0].ok && !tr[1].ok && tr[1].copy === 2, JSON.stringify(tr));
  });

  await check("tool.latency: the call takes delay_ms longer", async () => {
    const c = await connect(srv, { faults: [{ kind: "tool.latency", match: { tool: "list_allowed_directories" },
                                              options: { delay_ms: 400 } }] });
    const t0 = Date.now();
    await c.client.callTool({ name: "list_allowed_directories", arguments: {} });
    assert(Date.now() - t0 >= 390, `${Date.now() - t0} ms`);
    await c.client.close();
  });
}

const suite = process.argv[2];
try {
  if (suite === "everything") await everything();
  else if (suite === "filesystem") await filesystem();
  else { console.log(`unknown suite '${suite}'`); failed++; }
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
