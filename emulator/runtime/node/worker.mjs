// The Node worker of one `makers-store serve` instance.
//
// Started by that instance's Python worker (emulator/runtime/node/worker.py),
// never by hand, with `node [--import <tsx loader>] worker.mjs`. Its settings
// come in MAKERS_NODE_WORKER (JSON), removed before any project code runs; the
// store is reached over MAKERS_STORE_RPC (the Python worker's store RPC socket).
// It listens on 127.0.0.1, imports every Node route, and prints
// `MAKERS-SERVE-NODE-READY <port>` on stdout. The Python worker sends it each
// request of a Node route (its run already registered there, so abort,
// disconnect, timeout, grace and the trace record are the Python side's) with
// a `makers-internal-node` header saying which route and run; it answers with
// what the handler returned. It exits when its stdin closes (its Python
// worker is gone) or on SIGTERM.

import http from 'node:http';
import { pathToFileURL } from 'node:url';
import { connect } from './store.mjs';
import { agentContext, functionContext, loadToolSpecs } from './context.mjs';
import { errorText, sendResult } from './respond.mjs';
import { SyncRpc } from './sync_rpc.mjs';

const SETTINGS_ENV = 'MAKERS_NODE_WORKER';
const READY_MARKER = 'MAKERS-SERVE-NODE-READY';
const META_HEADER = 'makers-internal-node';
const TOKEN_HEADER = 'makers-internal-token';
const OUTCOME_HEADER = 'makers-internal-outcome';
const ABORT_PATH = '/__makers/abort';
const METHOD_HANDLERS = {
  GET: 'onRequestGet', POST: 'onRequestPost', PUT: 'onRequestPut', PATCH: 'onRequestPatch',
  DELETE: 'onRequestDelete', HEAD: 'onRequestHead', OPTIONS: 'onRequestOptions',
};

const settings = JSON.parse(process.env[SETTINGS_ENV] ?? 'null');
if (settings === null) {
  console.error(`${SETTINGS_ENV} is not set: Node workers are started by \`makers-store serve\``);
  process.exit(2);
}
delete process.env[SETTINGS_ENV];
const rpcPath = process.env.MAKERS_STORE_RPC;
delete process.env.MAKERS_STORE_RPC;
// context.env: the instance's environment (.env, .env.local, the shell), a copy per request
const baseEnv = { ...process.env };

const client = connect(rpcPath);
const syncRpc = new SyncRpc(rpcPath);
/** runId -> AbortController of a run in progress here */
const runs = new Map();
/** absolute file -> Promise of its module namespace (imported once, like Python's) */
const modules = new Map();

function loadModule(file) {
  let loading = modules.get(file);
  if (loading === undefined) {
    loading = import(pathToFileURL(file).href);
    modules.set(file, loading);
  }
  return loading;
}

/** The handler functions of a module, whether it is ESM or CommonJS compiled by tsx. */
function exportsOf(namespace) {
  const names = Object.keys(namespace);
  if (names.length === 1 && names[0] === 'default' && namespace.default
      && typeof namespace.default === 'object') {
    return namespace.default;
  }
  return namespace;
}

function entryOf(namespace, method) {
  const exported = exportsOf(namespace);
  const own = exported[METHOD_HANDLERS[method]];
  if (typeof own === 'function') return { kind: 'handler', fn: own };
  if (typeof exported.onRequest === 'function') return { kind: 'handler', fn: exported.onRequest };
  // `export default app`: ESM's default, or `exports.default` of TypeScript compiled to CommonJS
  const app = exported.default ?? namespace.default;
  if (app && typeof app.callback === 'function') return { kind: 'app', fn: app.callback() };
  if (typeof app === 'function') return { kind: 'app', fn: app };
  return null;
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function answerJson(res, status, value, outcome) {
  const body = Buffer.from(JSON.stringify(value));
  const headers = { 'content-type': 'application/json', 'content-length': body.length };
  if (outcome) headers[OUTCOME_HEADER] = outcome;
  res.writeHead(status, headers);
  res.end(body);
}

/** Runs one request; the meta header names the route, run and conversation. */
async function serveRun(req, res, meta) {
  let namespace;
  try {
    namespace = await loadModule(meta.file);
  } catch (error) {
    console.error(`${meta.relative} failed to import:`, error);
    const message = `${meta.relative} failed to import: ${errorText(error)}`;
    answerJson(res, 500, { error: message, run_id: meta.runId }, 'error');
    return;
  }
  const entry = entryOf(namespace, req.method);
  const allowed = Object.entries(METHOD_HANDLERS)
    .filter(([, name]) => typeof exportsOf(namespace)[name] === 'function')
    .map(([method]) => method);
  if (entry === null && allowed.length) {  // only other methods' handlers
    const body = Buffer.from(JSON.stringify({
      error: `${req.method} is not allowed: ${meta.relative} handles ${allowed.join(', ')}` }));
    res.writeHead(settings.methodNotAllowedStatus, { 'content-type': 'application/json',
      'content-length': body.length, allow: allowed.join(', ') });
    res.end(body);
    return;
  }
  if (entry === null) {
    const message = `${meta.relative} exports no onRequest (or onRequest${
      req.method[0]}${req.method.slice(1).toLowerCase()}) function`;
    answerJson(res, 500, { error: message, run_id: meta.runId }, 'error');
    return;
  }
  if (entry.kind === 'app') {
    for (const name of [META_HEADER, TOKEN_HEADER]) delete req.headers[name];
    req.url = meta.appUrl;  // the path below the function's folder, as the platform mounts it
    entry.fn(req, res);
    return;
  }
  const controller = new AbortController();
  runs.set(meta.runId, controller);
  res.on('close', () => {  // the Python side closed the connection: the run is cancelled
    if (!res.writableFinished) controller.abort();
  });
  try {
    const raw = await readBody(req);
    const shared = { meta, req, raw, signal: controller.signal, client, syncRpc, runs, baseEnv };
    const context = meta.kind === 'agent'
      ? agentContext(shared, settings) : functionContext(shared);
    let result;
    try {
      result = await entry.fn(context);
    } catch (error) {
      await context.tracer?.flush();
      if (!(meta.kind === 'agent' && controller.signal.aborted)) {
        console.error(`run ${meta.runId}: ${meta.relative} threw:`, error);
      }
      answerJson(res, 500, { error: errorText(error), run_id: meta.runId }, 'error');
      return;
    }
    await sendResult(res, result, {
      streamedTypes: settings.streamedTypes,
      signal: controller.signal,
      runId: meta.runId,
      beforeEnd: () => context.tracer?.flush(),
      onStreamError: (text) => client.call('run.streamFailed', { runId: meta.runId, error: text })
        .catch(() => {}),
    });
  } finally {
    runs.delete(meta.runId);
  }
}

function abortRun(req, res) {
  readBody(req).then((raw) => {
    const { runId } = JSON.parse(raw.toString('utf8'));
    const controller = runs.get(runId);
    if (controller !== undefined) controller.abort();
    answerJson(res, 200, { aborted: controller !== undefined });
  }, () => answerJson(res, 400, { error: 'bad abort request' }));
}

const server = http.createServer({ maxHeaderSize: 1024 * 1024 }, (req, res) => {
  if (req.headers[TOKEN_HEADER] !== settings.token) {
    answerJson(res, 404, { error: 'not found' });
    return;
  }
  if (req.url === ABORT_PATH && req.method === 'POST') {
    abortRun(req, res);
    return;
  }
  let meta;
  try {
    meta = JSON.parse(req.headers[META_HEADER]);
  } catch {
    answerJson(res, 400, { error: `the ${META_HEADER} header is missing or not JSON` });
    return;
  }
  serveRun(req, res, meta).catch((error) => {
    console.error(`run ${meta.runId}: ${meta.relative}:`, error);
    if (!res.headersSent) answerJson(res, 500, { error: errorText(error), run_id: meta.runId }, 'error');
    else res.destroy(error);
  });
});
server.keepAliveTimeout = 5000;

async function importRoutes() {
  for (const route of settings.routes) {
    try {
      await loadModule(route.file);
    } catch (error) {
      console.error(`ERROR ${route.relative} failed to import; requests to ${route.path} `
        + 'will answer 500:\n', error);
    }
  }
}

// A promise a handler left behind fails: logged, and the instance keeps serving its
// other runs (as a Python worker does when a background task raises).
process.on('unhandledRejection', (reason) => {
  console.error('an unhandled promise rejection (the worker keeps serving):', reason);
});
process.stdin.on('end', () => process.exit(0));  // the Python worker is gone
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
process.on('SIGTERM', () => {
  server.close();
  setTimeout(() => process.exit(0), 2000).unref();
});

await loadToolSpecs(client);
await importRoutes();
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${READY_MARKER} ${server.address().port}\n`);
});
