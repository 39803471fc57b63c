// The globals of a codemode script (pi-rpc's own implementation). The host
// provides __pi_call(id, name, argsJson) (starts a tool call, answered later
// through __pi_settle) and __pi_sync(op, argJson) (catalog questions and the
// stored values, answered at once); both are hidden from the script.
(() => {
  const call = globalThis.__pi_call;
  const sync = globalThis.__pi_sync;
  const model = globalThis.__pi_model;
  delete globalThis.__pi_call;
  delete globalThis.__pi_sync;
  delete globalThis.__pi_model;
  // Kept before the script runs: it may replace the globals.
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const entriesOf = Object.entries;
  const ask = (op, arg) => {
    const answer = sync(op, stringify(arg === undefined ? null : arg));
    return answer === "" ? undefined : parse(answer);
  };

  const MAX_CHARS = 16777216;
  const MAX_CALLS = 100000;
  const out = [];
  const consoleLines = [];
  let chars = 0;
  let calls = 0;
  const count = (n) => {
    calls += 1;
    chars += n;
    if (calls > MAX_CALLS) throw new Error("Output limit reached: more than 100000 text(), image() and console calls");
    if (chars > MAX_CHARS) throw new Error("Output limit reached: more than 16777216 characters of text and image data");
  };
  const show = (value) => {
    if (typeof value === "string") return value;
    if (value === undefined) return "undefined";
    try {
      const json = JSON.stringify(value);
      return json === undefined ? String(value) : json;
    } catch (e) {
      return String(value);
    }
  };

  globalThis.text = (value) => {
    const s = show(value);
    count(s.length);
    out.push({ type: "text", text: s });
  };
  const imageError = "image() takes a base64 data: URL, an { image_url } object or an image block { type: \"image\", data, mimeType }";
  globalThis.image = (value) => {
    let block;
    if (typeof value === "string") {
      const m = /^data:([^;,]+);base64,([\s\S]*)$/.exec(value);
      if (!m) throw new TypeError(value.startsWith("http") ? "image(): remote URLs are not supported" : imageError);
      block = { mimeType: m[1], data: m[2] };
    } else if (value && typeof value === "object" && value.image_url !== undefined) {
      const url = typeof value.image_url === "string" ? value.image_url : value.image_url && value.image_url.url;
      return globalThis.image(url);
    } else if (value && typeof value === "object" && value.type === "image" && typeof value.data === "string") {
      block = { mimeType: value.mimeType || "image/png", data: value.data };
    } else {
      throw new TypeError(imageError);
    }
    if (!/^image\/(png|jpeg|gif|webp)$/.test(block.mimeType)) throw new TypeError("image(): only PNG, JPEG, GIF and WebP are accepted, got " + block.mimeType);
    count(block.data.length);
    out.push({ type: "image", data: block.data, mimeType: block.mimeType });
  };
  const log = (...args) => {
    const line = args.map(show).join(" ");
    count(line.length);
    consoleLines.push(line);
  };
  globalThis.console = { log, info: log, warn: log, error: log, debug: log };

  const EXIT = { exit: true };
  globalThis.exit = () => {
    throw EXIT;
  };

  // store() / load(): JSON text by key, from the session's values on this
  // branch when the script started (asked for at the first use); the
  // script's writes, one per key in
  // order (undefined: deleted), are kept only when it succeeds. Sizes count
  // the characters of each key and its JSON.
  const MAX_VALUE_CHARS = 262144;
  const MAX_STORE_CHARS = 1048576;
  const STORE_HINT =
    "store() is for small state such as IDs or summaries. Show images with image(), keep large data in variables, or write it to a file with a tool.";
  const writes = new Map();
  let stored;
  let storedChars = 0;
  const storedValues = () => {
    if (stored === undefined) {
      stored = new Map();
      for (const [key, value] of entriesOf(ask("store") || {})) {
        const json = stringify(value);
        if (json === undefined) continue;
        stored.set(key, json);
        storedChars += key.length + json.length;
      }
    }
    return stored;
  };
  const checkKey = (name, key) => {
    if (typeof key !== "string") throw new TypeError(name + "() key must be a string");
  };
  globalThis.store = (key, value) => {
    checkKey("store", key);
    const values = storedValues();
    const previous = values.has(key) ? key.length + values.get(key).length : 0;
    if (value === undefined) {
      values.delete(key);
      storedChars -= previous;
      writes.set(key, undefined);
      return;
    }
    let json;
    try {
      json = stringify(value);
    } catch (e) {
      throw new TypeError("store(" + stringify(key) + ") value is not JSON-serializable: " + (e && e.message !== undefined ? e.message : String(e)));
    }
    if (json === undefined) throw new TypeError("store(" + stringify(key) + ") value is not JSON-serializable");
    if (json.length > MAX_VALUE_CHARS) {
      throw new RangeError("store(" + stringify(key) + ") value has " + json.length + " characters of JSON, more than the limit of " + MAX_VALUE_CHARS + ". " + STORE_HINT);
    }
    const next = storedChars - previous + key.length + json.length;
    if (next > MAX_STORE_CHARS) {
      throw new RangeError("store is full: stored values would exceed " + MAX_STORE_CHARS + " characters of JSON. Delete keys with store(key, undefined). " + STORE_HINT);
    }
    values.set(key, json);
    storedChars = next;
    writes.set(key, json);
  };
  globalThis.load = (key) => {
    checkKey("load", key);
    const json = storedValues().get(key);
    return json === undefined ? undefined : parse(json);
  };

  Object.defineProperty(globalThis, "ALL_TOOLS", { get: () => ask("all_tools"), enumerable: true });
  globalThis.searchTools = async (query, options) => ask("search", { query: String(query), ...(options || {}) });
  globalThis.describeTool = async (name) => ask("describe", String(name));
  globalThis.describeNamespace = async (name) => ask("namespace", String(name));
  const pending = new Map();
  let nextId = 0;
  // models.*: each call goes to the host with its arguments as a JSON array
  // (undefined becomes null), answered with { v } (v absent: undefined).
  const modelCall = (op) => (...args) =>
    new Promise((resolve, reject) => {
      nextId += 1;
      pending.set(nextId, { resolve: (answer) => resolve(answer.v), reject });
      model(nextId, op, JSON.stringify(args.map((a) => (a === undefined ? null : a))));
    });
  // Reading a member that does not exist throws at once, naming the close
  // matches (same letters and digits, or one name inside the other), else
  // every member when there are at most 20.
  const comparable = (name) => name.toLowerCase().replace(/[^a-z0-9]/g, "");
  const passesThrough = (prop) => typeof prop !== "string" || prop in Object.prototype || prop === "then" || prop === "toJSON";
  const missing = (label, prop, names, hint) => {
    const wanted = comparable(prop);
    const same = names.filter((name) => comparable(name) === wanted);
    const close = same.length > 0
      ? same
      : names.filter((name) => wanted && (comparable(name).includes(wanted) || wanted.includes(comparable(name))));
    let message = `${label}.${prop} does not exist.`;
    if (close.length > 0) message += ` Did you mean ${close.slice(0, 5).map((name) => `${label}.${name}`).join(", ")}?`;
    else if (names.length <= 20) message += ` Available: ${names.join(", ")}.`;
    if (hint) message += ` ${hint}`;
    return new TypeError(`${message} Check for a member with "${prop}" in ${label}.`);
  };
  const modelMembers = {};
  for (const op of ["getModelsOfType", "getAvailableOfType", "getModelOfType", "classify", "generateImages"]) {
    modelMembers[op] = modelCall(op);
  }
  Object.freeze(modelMembers);
  globalThis.models = new Proxy(modelMembers, {
    get(target, prop, receiver) {
      if (passesThrough(prop) || prop in target) return Reflect.get(target, prop, receiver);
      throw missing("models", prop, Object.keys(target));
    },
  });
  globalThis.tools = new Proxy(
    {},
    {
      get(target, prop, receiver) {
        if (passesThrough(prop)) return Reflect.get(target, prop, receiver);
        const name = ask("resolve", prop);
        if (name === undefined) {
          throw missing("tools", prop, ask("identifiers"), "ALL_TOOLS lists every tool; searchTools(query) finds tools by topic.");
        }
        return (args) =>
          new Promise((resolve, reject) => {
            nextId += 1;
            pending.set(nextId, { resolve, reject });
            call(nextId, name, JSON.stringify(args === undefined ? {} : args));
          });
      },
      has(_target, prop) {
        return typeof prop === "string" && ask("resolve", prop) !== undefined;
      },
    },
  );
  globalThis.__pi_settle = (id, ok, json) => {
    const p = pending.get(id);
    if (!p) return;
    pending.delete(id);
    const value = JSON.parse(json);
    if (ok) p.resolve(value);
    else p.reject(new Error(value));
  };
  globalThis.__pi_finish = (value) => {
    try {
      if (value !== undefined) globalThis.text(value);
      globalThis.__pi_done = { ok: true };
    } catch (e) {
      globalThis.__pi_fail(e);
    }
  };
  globalThis.__pi_fail = (e) => {
    if (e === EXIT) {
      globalThis.__pi_done = { ok: true };
      return;
    }
    const stack = e && typeof e.stack === "string" ? e.stack.trimEnd() : "";
    globalThis.__pi_done = { ok: false, error: stack ? `${String(e)}\n${stack}` : String(e) };
  };
  globalThis.__pi_result = () => {
    const written = [];
    for (const [key, json] of writes) written.push(json === undefined ? [key] : [key, json]);
    return stringify({ out, console: consoleLines, writes: written });
  };
})();
