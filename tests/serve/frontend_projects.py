"""Makers projects with a frontend, for tests/serve/test_frontend.py.

``DEV_SERVER_PROJECT`` names a small Node HTTP server as its ``scripts.dev``
(no npm packages: Node's own ``http`` and ``crypto``), which honours the
``--port`` serve appends, as ``vite`` and ``next dev`` do. It serves a page,
echoes requests, streams a slow chunked answer, redirects to its own origin,
exits on request (a crash), fails its first start as when its port is taken
(``DEV_TAKEN_ONCE``), listens late (``DEV_LISTEN_DELAY_MS``), and answers a
WebSocket upgrade at ``/ws`` with an echo, written against RFC 6455 by hand,
beside a Python agent.
"""

from __future__ import annotations

DEV_SERVER = r"""
import http from 'node:http';
import crypto from 'node:crypto';
import fs from 'node:fs';

// DEV_TAKEN_ONCE=FILE: the first start fails as when another program took the port
const once = process.env.DEV_TAKEN_ONCE;
if (once && !fs.existsSync(once)) {
  fs.writeFileSync(once, 'taken');
  console.error('Error: listen EADDRINUSE: address already in use');
  process.exit(1);
}

const at = process.argv.indexOf('--port');
const port = Number(process.argv[at + 1]);
const extra = process.argv.slice(2, at);

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://x');
  if (url.pathname === '/slow') {
    res.on('close', () => { if (!res.writableEnded) console.log('slow answer abandoned'); });
    res.writeHead(200, { 'content-type': 'text/plain' });
    const pieces = Number(url.searchParams.get('pieces') || 4);
    for (let n = 0; n < pieces && !res.destroyed; n++) {
      res.write(`piece ${n}\n`);
      await new Promise((done) => setTimeout(done, 300));
    }
    res.end('end\n');
  } else if (url.pathname === '/echo') {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({
      method: req.method, url: req.url, headers: req.headers, args: extra,
      body: Buffer.concat(chunks).toString('utf8'), pid: process.pid,
    }));
  } else if (url.pathname === '/redirect') {
    res.writeHead(302, { location: `http://localhost:${port}/landing?from=redirect` });
    res.end();
  } else if (url.pathname === '/crash') {
    res.end('bye');
    setTimeout(() => process.exit(3), 50);
  } else {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><title>dev</title><h1 id="t">dev page ${req.method} ${req.url}</h1>`);
  }
});

// a WebSocket echo: the handshake, then each (small, masked) text frame sent back
server.on('upgrade', (req, socket) => {
  if (!req.url.startsWith('/ws')) { socket.destroy(); return; }
  const accept = crypto.createHash('sha1')
    .update(req.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11')
    .digest('base64');
  const protocol = req.headers['sec-websocket-protocol'];
  socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n'
    + `Sec-WebSocket-Accept: ${accept}\r\n`
    + (protocol ? `Sec-WebSocket-Protocol: ${protocol.split(',')[0].trim()}\r\n` : '') + '\r\n');
  const hello = Buffer.from(`hello ${req.headers.origin || '-'} ${req.headers.host}`);
  socket.write(Buffer.concat([Buffer.from([0x81, hello.length]), hello]));
  let held = Buffer.alloc(0);
  socket.on('data', (data) => {
    held = Buffer.concat([held, data]);
    while (held.length >= 6) {
      const opcode = held[0] & 0x0f;
      const length = held[1] & 0x7f;
      if (held.length < 6 + length) return;
      const mask = held.subarray(2, 6);
      const payload = Buffer.from(held.subarray(6, 6 + length).map((b, i) => b ^ mask[i % 4]));
      held = held.subarray(6 + length);
      if (opcode === 8) { socket.end(Buffer.from([0x88, 0])); return; }
      const reply = Buffer.from('echo ' + payload.toString('utf8'));
      socket.write(Buffer.concat([Buffer.from([0x81, reply.length]), reply]));
    }
  });
  socket.on('error', () => {});
});

const listen = () => server.listen(
  port, '127.0.0.1', () => console.log(`dev server listening on http://localhost:${port}/`));
setTimeout(listen, Number(process.env.DEV_LISTEN_DELAY_MS || 0));
"""

AGENT = """
    async def handler(ctx):
        return {"agent": "chat", "conversation_id": ctx.conversation_id}
"""

FUNCTION = """
    from http.server import BaseHTTPRequestHandler

    class handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("content-type", "text/plain")
            self.end_headers()
            self.wfile.write(b"function answered")
"""

DEV_SERVER_PROJECT = {
    "package.json": """
        {
          "name": "frontend-dev-server-test",
          "private": true,
          "type": "module",
          "scripts": {"dev": "node dev-server.mjs --mode test", "build": "true"}
        }
    """,
    "dev-server.mjs": DEV_SERVER,
    "agents/chat.py": AGENT,
    "cloud-functions/api/hello.py": FUNCTION,
}

STATIC_PROJECT = {
    "edgeone.json": '{"outputDirectory": "dist"}',
    "dist/index.html": "<!doctype html><title>site</title><p>the index</p>",
    "dist/assets/app.js": "console.log('app');",
    "dist/about.html": "<p>about</p>",
    "agents/chat.py": AGENT,
}
