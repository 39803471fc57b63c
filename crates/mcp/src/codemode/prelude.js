// The globals of a codemode script (pi-rpc's own implementation). The host
// provides __pi_call(id, name, argsJson) (starts a tool call, answered later
// through __pi_settle) and __pi_sync(op, argJson) (catalog and store reads,
// answered at once); both are hidden from the script.
(() => {
  const call = globalThis.__pi_call;
  const sync = globalThis.__pi_sync;
  const model = globalThis.__pi_model;
  delete globalThis.__pi_call;
  delete globalThis.__pi_sync;
  delete globalThis.__pi_model;
  const ask = (op, arg) => {
    const answer = sync(op, JSON.stringify(arg === undefined ? null : arg));
    return answer === "" ? undefined : JSON.parse(answer);
  };

  const MAX_CHARS = 16777216;
  const MAX_CALLS = 100000;
  const out = [];
  const consoleLines = [];
  const writes = {};
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

  globalThis.store = (key, value) => {
    if (typeof key !== "string") throw new TypeError("store(key, value): key must be a string");
    if (value === undefined) {
      writes[key] = { deleted: true };
      return;
    }
    const json = JSON.stringify(value);
    if (json === undefined) throw new TypeError("store(): the value must be JSON");
    if (json.length > 262144) throw new RangeError("store(): a value may have at most 262144 characters of JSON");
    writes[key] = { json };
  };
  globalThis.load = (key) => {
    if (Object.prototype.hasOwnProperty.call(writes, key)) {
      const w = writes[key];
      return w.deleted ? undefined : JSON.parse(w.json);
    }
    return ask("load", key);
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
  globalThis.__pi_result = () => JSON.stringify({ out, console: consoleLines, writes });
})();
