// otlp-roundtrip.mjs FILE: checks faultline's OTLP/JSON export against OpenTelemetry's own JSON
// encoder (@opentelemetry/otlp-transformer's JsonTraceSerializer, pinned in package.json).
// Each span of FILE is read back into the SDK's ReadableSpan shape and serialized by the
// official encoder; every field faultline writes (ids, name, kind, times, attributes with
// their value types, events, status) must come out identical. Prints one JSON summary line
// (spans, traces, what the test asserts on); exits 1 with the first difference.
import { readFileSync } from "node:fs";
import { JsonTraceSerializer } from "@opentelemetry/otlp-transformer";

const doc = JSON.parse(readFileSync(process.argv[2], "utf8"));
const fail = (msg) => { console.error("otlp-roundtrip: " + msg); process.exit(1); };
const hr = (nanos) => { const n = BigInt(nanos); return [Number(n / 1000000000n), Number(n % 1000000000n)]; };
const value = (v) => {
    if ("stringValue" in v) return v.stringValue;
    if ("intValue" in v) return Number(v.intValue);
    if ("boolValue" in v) return v.boolValue;
    if ("doubleValue" in v) return v.doubleValue;
    fail("an attribute value of an unknown type: " + JSON.stringify(v));
};
const object = (attrs) => Object.fromEntries((attrs || []).map((a) => [a.key, value(a.value)]));

const rs = doc.resourceSpans;
if (!Array.isArray(rs) || rs.length !== 1) fail("expected one resourceSpans entry");
const resource = { attributes: object(rs[0].resource.attributes) };
const scope = rs[0].scopeSpans[0].scope;
const ours = rs[0].scopeSpans[0].spans;
const sdk = ours.map((s) => ({
    spanContext: () => ({ traceId: s.traceId, spanId: s.spanId, traceFlags: 1 }),
    parentSpanContext: s.parentSpanId ? { traceId: s.traceId, spanId: s.parentSpanId } : undefined,
    name: s.name,
    kind: s.kind - 1,
    startTime: hr(s.startTimeUnixNano),
    endTime: hr(s.endTimeUnixNano),
    attributes: object(s.attributes),
    events: (s.events || []).map((e) => ({ name: e.name, time: hr(e.timeUnixNano), attributes: object(e.attributes) })),
    status: s.status ? { code: s.status.code, message: s.status.message } : { code: 0 },
    links: [], resource, instrumentationScope: { name: scope.name },
    droppedAttributesCount: 0, droppedEventsCount: 0, droppedLinksCount: 0,
}));
const official = JSON.parse(new TextDecoder().decode(JsonTraceSerializer.serializeRequest(sdk)));
const theirs = official.resourceSpans[0].scopeSpans[0].spans;
if (theirs.length !== ours.length) fail(`${theirs.length} spans from the encoder, ${ours.length} in the file`);
const project = (s) => JSON.stringify({
    traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId || null, name: s.name, kind: s.kind,
    start: s.startTimeUnixNano, end: s.endTimeUnixNano, attributes: s.attributes,
    events: (s.events || []).map((e) => ({ name: e.name, t: e.timeUnixNano, attributes: e.attributes })),
    status: s.status && s.status.code ? { code: s.status.code, message: s.status.message } : null,
});
for (let i = 0; i < ours.length; i++)
    if (project(ours[i]) !== project(theirs[i]))
        fail(`span ${i} differs:\n ours     ${project(ours[i])}\n official ${project(theirs[i])}`);
if (JSON.stringify(official.resourceSpans[0].resource.attributes) !== JSON.stringify(rs[0].resource.attributes))
    fail("the resource's attributes differ");
const attrs = ours.map((s) => object(s.attributes));
console.log(JSON.stringify({
    spans: ours.length,
    traces: new Set(ours.map((s) => s.traceId)).size,
    roots: ours.filter((s) => !s.parentSpanId).length,
    model: attrs.filter((a) => a["gen_ai.operation.name"] === "chat" && Number.isInteger(a["gen_ai.usage.input_tokens"])).length,
    tools: attrs.filter((a) => a["mcp.method.name"] === "tools/call" && a["gen_ai.tool.name"]).length,
    faults: ours.flatMap((s) => (s.events || []).filter((e) => e.name === "faultline.fault_injected")
        .map((e) => ({ span: s.name, error_type: object(s.attributes)["error.type"] || null, ...object(e.attributes) }))),
}));
