// `context` of a Node agent (`onRequest(context)`) and of a Node cloud function.
//
// Field for field the platform's (its node-entry doc): `request` (`body`
// parsed JSON, or the raw Buffer of a non-JSON body, `headers` a plain
// object, `query`, `method`, `url`, `signal` an AbortSignal), `env` (a copy
// per request), `conversation_id` and `run_id` (snake_case, as the platform
// spells them), `store`, `utils` (`sse`, `streamSSE`, `abortActiveRun`),
// `tracer`, `kv`, `tools`. Everything that keeps state is the Python worker's
// one implementation, reached over the store RPC socket: the store itself,
// `kv.*` (the route's ctx.kv), `tools.*` (the conversation's workspace),
// `tracer.*` (the run's traces.jsonl record) and `utils.abortActiveRun` (the
// front's abort fan-out).
//
// A cloud function gets the platform's EventContext instead: `request` a
// standard Request whose `body` is already read as an agent's (official
// templates read it so, others call `request.json()`), `params`, `env`,
// `uuid`, `clientIp`, `server`, `geo`, and `agent = { conversation_id, store }`
// with a store that has no LangGraph parts.

import { createContextStore } from './store.mjs';
import { sseFrame } from './sse.mjs';
import { Tracer } from './tracer.mjs';
import { Toolkit, setToolSpecs } from './tools.mjs';

// How long a synchronous call (abortActiveRun, sandbox.getHost) may block (Python: 3 s).
const SYNC_CALL_TIMEOUT_MS = 5000;
const SSE_HEADERS = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-cache',
  'X-Accel-Buffering': 'no',
};
const CLOUD_FUNCTION_DROPPED = ['langgraphCheckpointer', 'langgraphStore'];
const INTERNAL = /^makers-internal-/;

export async function loadToolSpecs(client) {
  setToolSpecs(await client.call('tools.specs', {}));
}

function clientHeaders(req) {
  const headers = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (!INTERNAL.test(name)) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

// `request.body` as the Python side decided it (emulator/runtime/worker/request_body.py,
// one rule for both languages): 'json' parses (the Python side parsed the same
// bytes as JSON.parse does), 'empty' is {}, 'raw' is the Buffer itself.
function requestBody(raw, kind) {
  if (kind === 'raw') return raw;
  if (kind === 'empty') return {};
  return JSON.parse(raw.toString('utf8'));
}

// A copy of a body for a cloned request, so that changing one changes nothing in the other.
function bodyCopy(body) {
  return Buffer.isBuffer(body) ? Buffer.from(body) : structuredClone(body);
}

/**
 * A cloud function's `context.request`: a standard Request (headers, method,
 * url, signal, clone, and `json()` / `text()` / `arrayBuffer()` / `formData()`
 * reading the body once, as any Request), whose `body` is the body already
 * read as the platform's runtime gives it, where a Request has a stream.
 */
class FunctionRequest extends Request {
  #body;

  constructor(input, init, body) {
    super(input, init);
    this.#body = body;
  }

  get body() {
    return this.#body;
  }

  clone() {
    return new FunctionRequest(super.clone(), undefined, bodyCopy(this.#body));
  }
}

function kvFor(client, meta) {
  const call = (method, params) => client.call(`kv.${method}`, { runId: meta.runId, ...params });
  return {
    get: (key, options) => call('get', {
      key, type: typeof options === 'string' ? options : options?.type ?? 'text' }),
    set: (key, value) => call('set', { key, value }),
    delete: (key) => call('delete', { key }),
    list: (options) => call('list', {
      prefix: typeof options === 'string' ? options : options?.prefix ?? null }),
  };
}

/** `context.sandbox`: the Python `ctx.sandbox` (the conversation's workspace) over RPC. */
function sandboxFor(client, syncRpc, runId) {
  const call = (method, ...args) => client.call('sandbox.call', {
    runId, method, args: args.filter((arg) => arg !== undefined) });
  const browser = {};
  for (const [name, method] of [['goto', 'goto'], ['screenshot', 'screenshot'], ['click', 'click'],
    ['type', 'type'], ['evaluate', 'evaluate'], ['getContent', 'get_content'],
    ['close', 'close']]) {
    browser[name] = (...args) => call(`browser.${method}`, ...args);
  }
  // Properties of the platform's client, read synchronously: reading one throws the local
  // "not available" error (Python's, by name). Not enumerable, so logging the object reads none.
  const platformOnly = (target, name, method) => Object.defineProperty(target, name, {
    get: () => syncRpc.call('sandbox.call', { runId, method, args: [] }, SYNC_CALL_TIMEOUT_MS),
  });
  platformOnly(browser, 'cdpUrl', 'browser.cdp_url');
  platformOnly(browser, 'liveUrl', 'browser.live_url');
  const sandbox = {
    commands: { run: (cmd, options) => call('commands.run', cmd, options) },
    files: {
      read: (path) => call('files.read', path),
      write: (path, content) => call('files.write', path, content),
      list: (path) => call('files.list', path),
      exists: (path) => call('files.exists', path),
      remove: (path) => call('files.remove', path),
      makeDir: (path) => call('files.make_dir', path),
    },
    runCode: (code, options) => call('run_code', code, options),
    getInfo: () => call('get_info'),
    extendTimeout: (seconds) => call('extend_timeout', seconds),
    kill: () => call('kill'),
    // synchronous in the platform's client: throws the local "not available" error
    getHost: (port) => syncRpc.call('sandbox.call', { runId, method: 'get_host', args: [port] },
      SYNC_CALL_TIMEOUT_MS),
    browser,
  };
  return platformOnly(sandbox, 'envdAccessToken', 'envd_access_token');
}

function utilsFor(meta, syncRpc, runs) {
  return {
    sse: (data, options) => sseFrame(data, options ?? {}),
    streamSSE(source, init = {}) {
      const encoder = new TextEncoder();
      const iterator = source[Symbol.asyncIterator]?.() ?? source[Symbol.iterator]();
      const body = new ReadableStream({
        async pull(controller) {
          const { value, done } = await iterator.next();
          if (done) controller.close();
          else controller.enqueue(encoder.encode(typeof value === 'string' && value.endsWith('\n\n')
            ? value : sseFrame(value)));
        },
        async cancel() { await iterator.return?.(); },
      });
      return new Response(body, { status: init.status ?? 200,
        headers: { ...SSE_HEADERS, ...(init.headers ?? {}) } });
    },
    abortActiveRun(conversationId) {
      const result = syncRpc.call('utils.abortActiveRun',
        { runId: meta.runId, conversationId }, SYNC_CALL_TIMEOUT_MS);
      for (const runId of result.aborted_here ?? []) runs.get(runId)?.abort();
      return { aborted: result.aborted, conversation_id: result.conversation_id,
        run_id: result.run_id };
    },
  };
}

// `context.conversation_id` is null without a `makers-conversation-id` header, as on the
// platform's Node runtime (templates read `context.conversation_id ?? body.conversation_id`);
// Python's `ctx.conversation_id` stays "" (its docs give a str).
function conversationIdOf(meta) {
  return meta.conversationId || null;
}

export function agentContext({ meta, req, raw, signal, client, syncRpc, runs, baseEnv }) {
  const store = createContextStore(client, {
    conversationId: meta.conversationId || undefined, runId: meta.runId });
  let tools = null;
  let sandbox = null;
  return {
    request: {
      body: requestBody(raw, meta.body),
      headers: clientHeaders(req),
      query: meta.query,
      method: req.method,
      url: meta.url,
      path: meta.path,
      signal,
    },
    env: { ...baseEnv },
    conversation_id: conversationIdOf(meta),
    run_id: meta.runId,
    store,
    utils: utilsFor(meta, syncRpc, runs),
    tracer: new Tracer(client, meta.runId),
    kv: kvFor(client, meta),
    get tools() {
      // shaped by agents.framework, which the Python side sends with the run
      tools ??= new Toolkit(client, meta.runId, { framework: meta.framework ?? null });
      return tools;
    },
    get sandbox() {
      sandbox ??= sandboxFor(client, syncRpc, meta.runId);
      return sandbox;
    },
  };
}

/** `context.agent.store`: the store without the LangGraph parts, as the platform strips them. */
function cloudFunctionStore(store) {
  const view = {};
  for (let level = store; level && level !== Object.prototype;
    level = Object.getPrototypeOf(level)) {
    for (const name of Object.getOwnPropertyNames(level)) {
      if (name === 'constructor' || name in view || CLOUD_FUNCTION_DROPPED.includes(name)) continue;
      const { value } = Object.getOwnPropertyDescriptor(level, name);
      if (typeof value === 'function') view[name] = value.bind(store);
      else Object.defineProperty(view, name, { get: () => store[name], enumerable: true });
    }
  }
  return view;
}

export function functionContext({ meta, req, raw, signal, client, baseEnv }) {
  const hasBody = !['GET', 'HEAD'].includes(req.method) && raw.length > 0;
  const request = new FunctionRequest(meta.url, {
    method: req.method,
    headers: clientHeaders(req),
    body: hasBody ? raw : undefined,
    signal,
  }, requestBody(raw, meta.body));
  const store = createContextStore(client, {
    conversationId: meta.conversationId || undefined, runId: meta.runId });
  return {
    uuid: meta.runId,
    request,
    params: meta.params,
    env: { ...baseEnv },
    clientIp: req.headers['x-forwarded-for'] ?? '127.0.0.1',
    server: { region: 'local', requestId: meta.runId },
    geo: {},
    agent: { conversation_id: conversationIdOf(meta), store: cloudFunctionStore(store) },
  };
}
