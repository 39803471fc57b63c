// Sends pi 1.6.0's requests for hard-coded origins where
// PI_RPC_ORIGIN_OVERRIDES says (`origin=replacement,…`, the test hook pi-rpc
// honours), by wrapping fetch. Loaded with `node --import` before pi's CLI
// (tests/e2e/oauth_vs_pi.rs) or imported by the other scripts here.
//
// pi's CLI installs undici's own fetch at start-up (`undici.install()`
// assigns `globalThis.fetch`), so the wrapper is an accessor: an assignment
// replaces the fetch underneath, and reading `fetch` still gives the wrapper.

const overrides = (process.env.PI_RPC_ORIGIN_OVERRIDES ?? "")
  .split(",")
  .filter(Boolean)
  .map((entry) => entry.split("="));
let underlying = globalThis.fetch;

function routed(input, init) {
  let url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
  for (const [from, to] of overrides) {
    if (url === from || url.startsWith(from + "/") || url.startsWith(from + "?")) {
      url = to + url.slice(from.length);
      break;
    }
  }
  if (typeof input === "object" && !(input instanceof URL)) {
    return underlying(new globalThis.Request(url, input), init);
  }
  return underlying(url, init);
}

Object.defineProperty(globalThis, "fetch", {
  configurable: true,
  enumerable: true,
  get: () => routed,
  set: (fetch) => {
    if (fetch !== routed) underlying = fetch;
  },
});
