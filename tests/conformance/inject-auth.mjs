// Preloaded into the conformance suite (node --import): the suite's client cannot send
// credentials, and HomeHub's /mcp requires a bearer token. Every request the suite makes to
// HOMEHUB_CONFORMANCE_URL's origin gets `Authorization: Bearer $HOMEHUB_CONFORMANCE_TOKEN`
// (unless it already has one), whichever client sends it:
// - fetch and undici, through a global undici dispatcher;
// - node:http (the 0.2 suite's raw header probes), through Node's documented diagnostics
//   channel `http.client.request.created`, published before a request's headers are sent.
import diagnosticsChannel from "node:diagnostics_channel";
import { Agent, setGlobalDispatcher } from "undici";

const token = process.env.HOMEHUB_CONFORMANCE_TOKEN;
const target = new URL(process.env.HOMEHUB_CONFORMANCE_URL);
const origin = target.origin;
if (!token) throw new Error("HOMEHUB_CONFORMANCE_TOKEN is not set");
const credentials = `Bearer ${token}`;

function withAuth(headers) {
  if (headers == null) return { authorization: credentials };
  if (Array.isArray(headers)) {
    const flat = headers.length > 0 && !Array.isArray(headers[0]);
    const names = flat ? headers.filter((_, i) => i % 2 === 0) : headers.map((pair) => pair[0]);
    if (names.some((name) => String(name).toLowerCase() === "authorization")) return headers;
    return flat ? [...headers, "authorization", credentials] : [...headers, ["authorization", credentials]];
  }
  if (typeof headers[Symbol.iterator] === "function") return withAuth(Array.from(headers));
  if (Object.keys(headers).some((name) => name.toLowerCase() === "authorization")) return headers;
  return { ...headers, authorization: credentials };
}

setGlobalDispatcher(
  new Agent().compose((dispatch) => (opts, handler) => {
    const to = typeof opts.origin === "string" ? opts.origin : opts.origin?.origin;
    if (to === origin) opts = { ...opts, headers: withAuth(opts.headers) };
    return dispatch(opts, handler);
  }),
);

diagnosticsChannel.subscribe("http.client.request.created", ({ request }) => {
  const sameOrigin =
    request.protocol === target.protocol &&
    request.host === target.hostname &&
    request.getHeader("host") === target.host;
  if (sameOrigin && !request.hasHeader("authorization")) request.setHeader("authorization", credentials);
});
