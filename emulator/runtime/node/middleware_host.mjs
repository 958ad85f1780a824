// The middleware host of one `makers-store serve`: runs the project's middleware.js / .ts.
//
// Started by the front (emulator/runtime/middleware/host.py), never by hand, as
// `node --import <tsx loader> middleware_host.mjs`, with its settings as JSON in
// MAKERS_MIDDLEWARE_HOST (removed before the middleware is imported) and the
// project's environment (.env, .env.local, the shell) as its own, which becomes
// `context.env`. It imports the middleware, warns once about what the platform's
// edge runtime lacks, listens on 127.0.0.1 and prints
// `MAKERS-SERVE-MIDDLEWARE-READY <port> <matcher list as JSON>`. A file that
// fails to import, or exports no middleware function, prints why and exits 3.
//
// The front tests each request's path against the matcher list and, when it is
// covered, POSTs the request's head to `/run` as JSON: {method, target, host,
// headers: [[name, value]...], clientIp, check}. There is no body: the platform's
// middleware gets a Request without one. The answer carries
// `makers-internal-middleware`:
// - `next` / `rewrite` / `skip`: a JSON body {requestHeaders: {name: value or null},
//   responseHeaders: [[name, value]...], rewrite: {path, sameOrigin, href} or null};
// - `respond`: the middleware's own Response: its status, its headers, its body
//   streamed as the middleware produces it.
// A middleware that throws is logged and the request goes on unchanged (`skip`),
// as the platform's CLI does.

import http from 'node:http';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { covers, normalizeMatcher } from './middleware_matcher.mjs';

const SETTINGS_ENV = 'MAKERS_MIDDLEWARE_HOST';
const READY_MARKER = 'MAKERS-SERVE-MIDDLEWARE-READY';
const TOKEN_HEADER = 'makers-internal-token';
const DECISION_HEADER = 'makers-internal-middleware';
const RUN_PATH = '/run';
const LOAD_FAILED = 3;
// What the edge runtime does not have (the platform's CLI warns about these, and
// refuses nothing): Node's built-in modules and `process` beyond `process.env`.
const NODE_ONLY_MODULES = ['fs', 'path', 'net', 'tls', 'dgram', 'child_process', 'cluster',
  'worker_threads', 'vm', 'v8', 'perf_hooks', 'async_hooks'];
// Headers of a `next()` answer that are the protocol's or the connection's, not the client's.
const NOT_ADDED = new Set(['x-middleware-next', 'x-middleware-rewrite',
  'x-middleware-request-headers', 'x-middleware-override-headers', 'x-middleware-set-cookie',
  'date', 'connection', 'content-length', 'content-encoding', 'transfer-encoding', 'set-cookie']);
const FRAMING = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive']);

const settings = JSON.parse(process.env[SETTINGS_ENV] ?? 'null');
if (settings === null) {
  console.error(`${SETTINGS_ENV} is not set: the middleware host is started by \`makers-store serve\``);
  process.exit(2);
}
delete process.env[SETTINGS_ENV];
const baseEnv = { ...process.env };
const shown = settings.relative;

function fail(message, error) {
  if (error === undefined) console.error(message);
  else console.error(message, error);
  process.exit(LOAD_FAILED);
}

/** The warnings the platform's edge runtime deserves, from the file's text (comments dropped). */
function edgeWarnings(text) {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:])\/\/[^\n]*/g, '$1');
  const warnings = [];
  for (const name of NODE_ONLY_MODULES) {
    const spec = `['"](?:node:)?${name}['"]`;
    const imported = new RegExp(`(?:from\\s*${spec}|import\\s*${spec}|require\\s*\\(\\s*${spec}\\s*\\)|`
      + `import\\s*\\(\\s*${spec}\\s*\\))`);
    if (imported.test(code)) warnings.push(`it imports the Node module '${name}'`);
  }
  const uses = new Set();
  for (const found of code.matchAll(/\bprocess\s*\.\s*([A-Za-z_$][\w$]*)/g)) {
    if (found[1] !== 'env') uses.add(`process.${found[1]}`);
  }
  for (const name of ['__dirname', '__filename']) {
    if (new RegExp(`\\b${name}\\b`).test(code)) uses.add(name);
  }
  for (const use of uses) warnings.push(`it uses ${use}`);
  return warnings;
}

function middlewareOf(namespace) {
  // ESM exports, or a CommonJS module's (TypeScript compiled to CommonJS lands in `default`)
  const levels = [namespace, namespace.default, namespace.default?.default];
  for (const name of ['middleware', 'proxy']) {
    for (const level of levels) {
      if (level && typeof level[name] === 'function') return level[name];
    }
  }
  return null;
}

function configOf(namespace) {
  for (const level of [namespace, namespace.default, namespace.default?.default]) {
    if (level && typeof level.config === 'object' && level.config !== null) return level.config;
  }
  return {};
}

let text;
try {
  text = readFileSync(settings.file, 'utf8');
} catch (error) {
  fail(`middleware: cannot read ${shown}:`, error);
}
const warnings = settings.warn ? edgeWarnings(text) : [];
if (warnings.length) {
  console.warn(`middleware: ${shown} may not run on the platform, whose middleware runs in an `
    + `edge runtime without Node's built-in modules or process (use context.env): `
    + `${warnings.join('; ')}. serve runs it in Node, so it works here.`);
}
let namespace;
try {
  namespace = await import(pathToFileURL(settings.file).href);
} catch (error) {
  fail(`middleware: ${shown} failed to import:`, error);
}
const middleware = middlewareOf(namespace);
if (middleware === null) {
  fail(`middleware: ${shown} exports no function named middleware or proxy `
    + '(export function middleware(context) { ... })');
}
const matchers = normalizeMatcher(configOf(namespace).matcher);

// --- the context's helpers: Responses the host reads back, as the platform's runtime does ---

/** `response.cookies`, as the platform's helpers give it: Set-Cookie headers, written and read. */
function cookieJar(headers) {
  const parsed = () => headers.getSetCookie().map((line) => {
    const [pair] = line.split(';');
    const at = pair.indexOf('=');
    return { name: (at < 0 ? pair : pair.slice(0, at)).trim(),
      value: at < 0 ? '' : decodeURIComponent(pair.slice(at + 1)) };
  });
  const jar = {
    set(name, value, options = {}) {
      let text = value;
      let settings = options;
      if (value !== null && typeof value === 'object' && 'value' in value) {
        ({ value: text, ...settings } = { ...value, ...options });
      }
      const parts = [`${name}=${encodeURIComponent(String(text))}`];
      if (settings.path) parts.push(`Path=${settings.path}`);
      if (settings.domain) parts.push(`Domain=${settings.domain}`);
      if (settings.maxAge !== undefined) parts.push(`Max-Age=${settings.maxAge}`);
      if (settings.expires) parts.push(`Expires=${new Date(settings.expires).toUTCString()}`);
      if (settings.httpOnly) parts.push('HttpOnly');
      if (settings.secure) parts.push('Secure');
      if (settings.sameSite) parts.push(`SameSite=${settings.sameSite}`);
      headers.append('Set-Cookie', parts.join('; '));
      return jar;
    },
    delete: (name, options = {}) => jar.set(name, '', { ...options, maxAge: 0, expires: 0 }),
    get: (name) => parsed().find((cookie) => cookie.name === name),
    getAll: () => parsed(),
    has: (name) => parsed().some((cookie) => cookie.name === name),
    clear() {
      for (const { name } of parsed()) jar.delete(name);
      return jar;
    },
  };
  return jar;
}

function helperResponse(init) {
  const response = new Response(null, init);
  Object.defineProperty(response, 'cookies', { value: cookieJar(response.headers),
    enumerable: true });
  return response;
}

function next(init = {}) {
  const { request: requestInit, headers: headersInit, ...rest } = init ?? {};
  const headers = new Headers(headersInit ?? {});
  headers.set('x-middleware-next', '1');
  // the request's headers: `next({request: {headers}})`, else `next({headers})` (the
  // platform's documented form, whose headers are also added to the response)
  const patch = {};
  for (const source of [requestInit?.headers, headersInit]) {
    if (!source) continue;
    new Headers(source).forEach((value, name) => { patch[name] = value; });
    if (Object.keys(patch).length) break;
  }
  if (Object.keys(patch).length) {
    headers.set('x-middleware-request-headers', encodeURIComponent(JSON.stringify(patch)));
  }
  return helperResponse({ ...rest, headers });
}

function redirect(url, status = 307) {
  return helperResponse({ status, headers: { Location: String(url) } });
}

function rewrite(url) {
  return helperResponse({ headers: { 'x-middleware-rewrite': String(url) } });
}

// --- one request --------------------------------------------------------------------

function answerJson(res, status, value, decision) {
  const body = Buffer.from(JSON.stringify(value));
  const headers = { 'content-type': 'application/json', 'content-length': body.length };
  if (decision) headers[DECISION_HEADER] = decision;
  res.writeHead(status, headers);
  res.end(body);
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** The request headers the answer sets for what follows (null: removed). */
function requestHeaderPatch(headers) {
  const overridden = headers.get('x-middleware-override-headers');
  if (overridden !== null) {  // Next.js's form: the full list, each value beside it
    const patch = {};
    for (const name of overridden.split(',').map((n) => n.trim().toLowerCase())) {
      if (!name || name === 'accept-encoding') continue;
      const value = headers.get(`x-middleware-request-${name}`);
      if (value !== null) patch[name] = value;
    }
    return patch;
  }
  const encoded = headers.get('x-middleware-request-headers');
  if (encoded === null) return {};
  try {
    const patch = {};
    for (const [name, value] of Object.entries(JSON.parse(decodeURIComponent(encoded)))) {
      patch[name.toLowerCase()] = value === null || value === undefined ? null : String(value);
    }
    return patch;
  } catch (error) {
    console.error(`middleware: the request headers of next() cannot be read: ${error}`);
    return {};
  }
}

function addedResponseHeaders(headers) {
  const added = [];
  headers.forEach((value, name) => {
    if (!NOT_ADDED.has(name) && !name.startsWith('x-middleware-request-')) added.push([name, value]);
  });
  for (const cookie of headers.getSetCookie()) added.push(['set-cookie', cookie]);
  return added;
}

function rewriteTarget(location, requestUrl) {
  const target = new URL(location, requestUrl);
  const base = new URL(requestUrl);
  return { path: target.pathname + target.search, href: target.href,
    sameOrigin: target.origin === base.origin };
}

async function sendResponse(res, response) {
  const headers = [];
  response.headers.forEach((value, name) => {
    if (!FRAMING.has(name) && name !== 'set-cookie') headers.push(name, value);
  });
  for (const cookie of response.headers.getSetCookie()) headers.push('set-cookie', cookie);
  headers.push(DECISION_HEADER, 'respond');
  res.writeHead(response.status, headers);
  if (response.body === null) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  res.on('close', () => {  // the front's client left: the middleware's stream is cancelled
    if (!res.writableFinished) reader.cancel().catch(() => {});
  });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      if (!res.write(value)) await new Promise((resolve) => res.once('drain', resolve));
    }
    res.end();
  } catch (error) {
    console.error(`middleware: the body of its Response failed midway: ${error}`);
    res.destroy(error);
  }
}

function waitUntilFor(target) {
  return (promise) => {
    Promise.resolve(promise).catch((error) => {
      console.error(`middleware: a promise given to waitUntil failed (${target}):`, error);
    });
  };
}

async function run(res, head) {
  const url = `http://${head.host || 'localhost'}${head.target}`;
  let request;
  let urlInfo;
  try {
    urlInfo = new URL(url);
    request = new Request(urlInfo, { method: head.method, headers: head.headers });
  } catch (error) {  // a target or header no Request accepts: nothing to run on
    console.error(`middleware: ${head.method} ${head.target} cannot be made a Request: ${error}`);
    answerJson(res, 200, { requestHeaders: {}, responseHeaders: [], rewrite: null }, 'skip');
    return;
  }
  if (head.check && !covers(matchers, urlInfo.pathname)) {
    answerJson(res, 200, { requestHeaders: {}, responseHeaders: [], rewrite: null }, 'skip');
    return;
  }
  const geo = {};
  Object.defineProperty(request, 'eo', { value: { geo, clientIp: head.clientIp } });
  const context = {
    request, urlInfo, env: { ...baseEnv }, waitUntil: waitUntilFor(`${head.method} ${head.target}`),
    next, redirect, rewrite, geo, clientIp: head.clientIp,
  };
  let result;
  try {
    result = await middleware(context);
  } catch (error) {
    if (!settings.errorGoesOn) {
      console.error(`middleware: ${shown} threw on ${head.method} ${head.target}:`, error);
      await sendResponse(res, Response.json({ error: `the middleware threw: ${error}` },
        { status: 500 }));
      return;
    }
    console.error(`middleware: ${shown} threw on ${head.method} ${head.target}; the request goes `
      + 'on without it, as the platform\'s dev server does:', error);
    answerJson(res, 200, { requestHeaders: {}, responseHeaders: [], rewrite: null }, 'skip');
    return;
  }
  if (!(result instanceof Response)) {
    answerJson(res, 200, { requestHeaders: {}, responseHeaders: [], rewrite: null }, 'skip');
    return;
  }
  const goesOn = result.headers.get('x-middleware-next') === '1';
  const location = result.headers.get('x-middleware-rewrite');
  if (!goesOn && location === null) {
    await sendResponse(res, result);
    return;
  }
  let target = null;
  if (location !== null) {
    try {
      target = rewriteTarget(location, url);
    } catch (error) {
      console.error(`middleware: rewrite(${JSON.stringify(location)}) is not a URL: ${error}`);
    }
  }
  answerJson(res, 200, {
    requestHeaders: requestHeaderPatch(result.headers),
    responseHeaders: goesOn ? addedResponseHeaders(result.headers) : [],
    rewrite: target,
  }, target === null ? 'next' : 'rewrite');
}

const server = http.createServer({ maxHeaderSize: 1024 * 1024 }, (req, res) => {
  if (req.headers[TOKEN_HEADER] !== settings.token || req.method !== 'POST' || req.url !== RUN_PATH) {
    answerJson(res, 404, { error: 'not found' });
    return;
  }
  readBody(req)
    .then((raw) => run(res, JSON.parse(raw.toString('utf8'))))
    .catch((error) => {
      console.error('middleware: the host failed on a request:', error);
      if (!res.headersSent) answerJson(res, 500, { error: String(error) });
      else res.destroy(error);
    });
});
server.keepAliveTimeout = 5000;

// A promise the middleware left behind fails: logged, and the host keeps serving.
process.on('unhandledRejection', (reason) => {
  console.error('middleware: an unhandled promise rejection (the host keeps serving):', reason);
});
process.stdin.on('end', () => process.exit(0));  // the front is gone
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
process.on('SIGTERM', () => {  // replaced (--reload) or stopped: requests in flight end first
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 1000).unref();
});

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${READY_MARKER} ${server.address().port} ${JSON.stringify(matchers)}\n`);
});
