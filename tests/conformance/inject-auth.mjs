// Preloaded into the conformance suite (node --import): the suite's client cannot send
// credentials, and HomeHub's /mcp requires a bearer token. Every request the suite makes,
// through fetch or undici, to HOMEHUB_CONFORMANCE_URL's origin gets
// `Authorization: Bearer $HOMEHUB_CONFORMANCE_TOKEN` (unless it already has one).
import { Agent, setGlobalDispatcher } from "undici";

const token = process.env.HOMEHUB_CONFORMANCE_TOKEN;
const origin = new URL(process.env.HOMEHUB_CONFORMANCE_URL).origin;
if (!token) throw new Error("HOMEHUB_CONFORMANCE_TOKEN is not set");

function withAuth(headers) {
  const value = `Bearer ${token}`;
  if (headers == null) return { authorization: value };
  if (Array.isArray(headers)) {
    const flat = headers.length > 0 && !Array.isArray(headers[0]);
    const names = flat ? headers.filter((_, i) => i % 2 === 0) : headers.map((pair) => pair[0]);
    if (names.some((name) => String(name).toLowerCase() === "authorization")) return headers;
    return flat ? [...headers, "authorization", value] : [...headers, ["authorization", value]];
  }
  if (typeof headers[Symbol.iterator] === "function") return withAuth(Array.from(headers));
  if (Object.keys(headers).some((name) => name.toLowerCase() === "authorization")) return headers;
  return { ...headers, authorization: value };
}

setGlobalDispatcher(
  new Agent().compose((dispatch) => (opts, handler) => {
    const target = typeof opts.origin === "string" ? opts.origin : opts.origin?.origin;
    if (target === origin) opts = { ...opts, headers: withAuth(opts.headers) };
    return dispatch(opts, handler);
  }),
);
