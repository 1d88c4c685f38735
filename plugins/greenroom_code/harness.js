// The code-mode harness: runs one script in this Deno process, which was started with no
// permissions at all, and talks with greenroom over stdin and stdout, one JSON object a line.
//
//   harness   -> greenroom  {"t":"ready"}                                   (before any script)
//   greenroom -> harness    {"code":"...","token":"...","console_chars":N}
//   harness   -> greenroom  {"k":TOKEN,"t":"call","id":N,"name":"...","args":{...}}
//   greenroom -> harness    {"id":N,"ok":true,"value":...} or {"id":N,"ok":false,"error":"..."}
//   harness   -> greenroom  {"k":TOKEN,"t":"done","ok":true,"value":...,"console":"..."}
//                        or {"k":TOKEN,"t":"done","ok":false,"error":"...","console":"..."}
//
// Before the script runs, everything it could use to write lines of its own (Deno, console,
// alert and prompt) is taken from the global scope; the harness keeps its own references.
// Each line the harness writes carries a token the script never sees, so greenroom can tell
// a forged line from the harness's. The harness writes its lines by string concatenation of
// JSON texts, so no object of the script is ever asked to serialise the token.
"use strict";

const stdout = Deno.stdout.writable.getWriter(); // locked: no other writer can take the stream
const stdin = Deno.stdin.readable.getReader();
const exit = Deno.exit;
const inspect = Deno.inspect;
const stringify = JSON.stringify;
const parse = JSON.parse;
const encoder = new TextEncoder();
const encode = encoder.encode.bind(encoder);
const decoder = new TextDecoder();
const decode = decoder.decode.bind(decoder);
const AsyncFunction = (async function () {}).constructor;
const NEWLINE = 10;

let pending = new Uint8Array(0);

async function readLine() {
  // the next line of stdin, or null at its end
  for (;;) {
    const at = pending.indexOf(NEWLINE);
    if (at >= 0) {
      const line = pending.subarray(0, at);
      pending = pending.slice(at + 1);
      return decode(line);
    }
    const { value, done } = await stdin.read();
    if (done) return null;
    const joined = new Uint8Array(pending.length + value.length);
    joined.set(pending);
    joined.set(value, pending.length);
    pending = joined;
  }
}

function json(value) {
  // JSON text of a value of the script's, or null for what JSON cannot hold (undefined)
  const text = stringify(value);
  return text === undefined ? "null" : text;
}

await stdout.write(encode('{"t":"ready"}\n'));
const start = parse(await readLine());
const token = stringify(String(start.token));
const room = Number(start.console_chars) || 0;

let logged = "";
let dropped = 0;

function log(...args) {
  const line = args.map((a) => (typeof a === "string" ? a : inspect(a, { depth: 4, colors: false }))).join(" ");
  const left = room - logged.length;
  if (left <= 0) {
    dropped += line.length + 1;
    return;
  }
  const kept = line.length + 1 <= left ? line + "\n" : line.slice(0, left);
  dropped += line.length + 1 - kept.length;
  logged += kept;
}

function consoleText() {
  return dropped ? logged + `\n... ${dropped} more characters of console output left out` : logged;
}

const console = Object.freeze({
  log,
  info: log,
  warn: log,
  error: log,
  debug: log,
  trace: log,
  dir: log,
  table: log,
});

for (const name of ["Deno", "console", "alert", "prompt", "confirm", "close", "Worker", "localStorage",
                    "sessionStorage", "caches"]) {
  delete globalThis[name];
}
globalThis.console = console;
// a promise the script leaves rejected, or an error thrown later in a timer, is its own
// business: it must not end the process before the script's answer is sent
globalThis.addEventListener("unhandledrejection", (event) => event.preventDefault());
globalThis.addEventListener("error", (event) => event.preventDefault());

const waiting = new Map();
let nextId = 0;

function send(text) {
  return stdout.write(encode(text + "\n"));
}

function call(name, args) {
  const id = ++nextId;
  let body;
  try {
    body = json(args === undefined ? {} : args);
  } catch (error) {
    return Promise.reject(new TypeError(`the arguments for ${name} cannot be sent as JSON: ${error.message}`));
  }
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    send(`{"k":${token},"t":"call","id":${id},"name":${stringify(name)},"args":${body}}`);
  });
}

const tools = new Proxy(Object.create(null), {
  get(_, name) {
    // ``then`` undefined: awaiting ``tools`` itself does not call a tool named then
    if (typeof name !== "string" || name === "then") return undefined;
    return (args) => call(name, args);
  },
});

async function answers() {
  for (;;) {
    const line = await readLine();
    if (line === null) exit(1); // greenroom is gone: nobody will answer, and nobody reads the result
    let answer;
    try {
      answer = parse(line);
    } catch {
      continue;
    }
    if (answer === null || typeof answer !== "object") continue;
    const waiter = waiting.get(answer.id);
    if (waiter === undefined) continue;
    waiting.delete(answer.id);
    if (answer.ok) waiter.resolve(answer.value);
    else waiter.reject(new Error(String(answer.error)));
  }
}

function describe(error) {
  if (!(error instanceof Error)) return `the script threw ${inspect(error, { depth: 2, colors: false })}`;
  const where = /<anonymous>:(\d+):(\d+)/.exec(String(error.stack || ""));
  // the constructed function's first two lines are its own header, not the script's
  const at = where ? ` (line ${Number(where[1]) - 2})` : "";
  return `${error.name}: ${error.message}${at}`;
}

answers();
let result;
try {
  const script = new AsyncFunction("tools", "console", String(start.code));
  const value = await script(tools, console);
  let text;
  try {
    text = json(value);
  } catch (error) {
    throw new TypeError(`the return value cannot be sent as JSON: ${error.message}`);
  }
  result = `{"k":${token},"t":"done","ok":true,"value":${text},"console":${stringify(consoleText())}}`;
} catch (error) {
  result = `{"k":${token},"t":"done","ok":false,"error":${stringify(describe(error))},"console":${stringify(consoleText())}}`;
}
await send(result);
exit(0);
