#!/usr/bin/env node
// Independent OTLP/HTTP trace receiver for Kingfisher tests.
//
// Decodes every POST /v1/traces body with protobufjs and the OTLP .proto files shipped by
// @elastic/mockotlpserver (NOT the ones in proto/ that our exporter is generated from), so a
// wrong field number or type on our side shows up as a wrong decoded value.
//
//   node receiver.js <port|0> <output.jsonl>
//
// Prints "ready <port>" once listening. For every span it appends one JSON line:
//   {traceId, spanId, parentSpanId (hex, "" for roots), name, kind, flags, startTimeUnixNano,
//    endTimeUnixNano, attributes: {key: AnyValue-as-OTLP-JSON}, events: [{name, timeUnixNano,
//    attributes}], status: {code, message}, scope, serviceName}
// and then answers 200 with an empty ExportTraceServiceResponse (so the lines are on disk
// before the exporter sees success).
'use strict';

const fs = require('fs');
const http = require('http');
const path = require('path');
const protobuf = require('protobufjs');

const port = Number(process.argv[2] || 0);
const outFile = process.argv[3];
if (!outFile) {
  console.error('usage: receiver.js <port> <output.jsonl>');
  process.exit(2);
}

const protoDir = path.join(__dirname, 'node_modules', '@elastic', 'mockotlpserver');
const root = new protobuf.Root();
root.resolvePath = (origin, target) => (path.isAbsolute(target) ? target : path.join(protoDir, target));
root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
const Request = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
const Response = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse');

const hex = (b) => Buffer.from(b || []).toString('hex');
const int64 = (v) => (v === null || v === undefined ? '0' : protobuf.util.Long ? protobuf.util.Long.fromValue(v).toString() : String(v));

function anyValue(v) {
  if (!v) return {};
  switch (v.value) {  // the oneof's virtual field: name of the member that is set
    case 'stringValue': return { stringValue: v.stringValue };
    case 'boolValue': return { boolValue: v.boolValue };
    case 'intValue': return { intValue: int64(v.intValue) };
    case 'doubleValue': return { doubleValue: v.doubleValue };
    case 'arrayValue': return { arrayValue: { values: (v.arrayValue.values || []).map(anyValue) } };
    case 'bytesValue': return { bytesValue: hex(v.bytesValue) };
    case 'kvlistValue': return { kvlistValue: attributes(v.kvlistValue.values) };
    default: return {};
  }
}

function attributes(kvs) {
  const out = {};
  for (const kv of kvs || []) out[kv.key] = anyValue(kv.value);
  return out;
}

function spanLines(req) {
  const lines = [];
  for (const rs of req.resourceSpans || []) {
    const resource = attributes(rs.resource && rs.resource.attributes);
    const serviceName = resource['service.name'] ? resource['service.name'].stringValue : '';
    for (const ss of rs.scopeSpans || []) {
      const scope = ss.scope ? ss.scope.name : '';
      for (const s of ss.spans || []) {
        lines.push(JSON.stringify({
          traceId: hex(s.traceId),
          spanId: hex(s.spanId),
          parentSpanId: hex(s.parentSpanId),
          name: s.name,
          kind: s.kind,
          flags: s.flags,
          startTimeUnixNano: int64(s.startTimeUnixNano),
          endTimeUnixNano: int64(s.endTimeUnixNano),
          attributes: attributes(s.attributes),
          events: (s.events || []).map((e) => ({
            name: e.name, timeUnixNano: int64(e.timeUnixNano), attributes: attributes(e.attributes),
          })),
          status: { code: s.status ? s.status.code : 0, message: s.status ? s.status.message : '' },
          scope,
          serviceName,
          resource,
        }));
      }
    }
  }
  return lines;
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    if (req.method !== 'POST' || req.url !== '/v1/traces') {
      res.writeHead(404).end();
      return;
    }
    let lines;
    try {
      lines = spanLines(Request.decode(Buffer.concat(chunks)));
    } catch (err) {
      console.error('receiver: cannot decode request: ' + err.message);
      res.writeHead(400).end();
      return;
    }
    if (lines.length) fs.appendFileSync(outFile, lines.join('\n') + '\n');
    const body = Buffer.from(Response.encode(Response.create({})).finish());
    res.writeHead(200, { 'Content-Type': 'application/x-protobuf', 'Content-Length': body.length });
    res.end(body);
  });
});

server.listen(port, '127.0.0.1', () => {
  process.stdout.write('ready ' + server.address().port + '\n');
});
process.on('SIGTERM', () => process.exit(0));
// The test owning us died: do not linger.
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
