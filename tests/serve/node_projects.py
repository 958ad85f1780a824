"""A Makers project with TypeScript agents and cloud functions, for the Node runtime tests.

Written in the official TS templates' call styles (``export async function
onRequest(context)``, ``context.request.body``, ``context.conversation_id``,
a ``Response`` back, ``ReadableStream`` for SSE, ``abortActiveRun`` used
synchronously), next to Python files doing the same, so both runtimes can
be compared on one server.
"""

from __future__ import annotations

NODE_PROJECT = {
    "agents/notes.ts": """
        // Notes kept in context.store survive every instance; `turns` lives in one only.
        let turns = 0;

        interface NotesBody { note?: string }

        export async function onRequest(context: any): Promise<Response> {
          turns += 1;
          const { store, request, conversation_id: conversationId } = context;
          const body = (request?.body ?? {}) as NotesBody;
          const notes: string[] = (await store.state.get('notes')) ?? [];
          if (body.note) {
            await store.appendMessage({ conversationId, role: 'user', content: body.note });
            notes.push(body.note);
            await store.state.set('notes', notes);
          }
          const payload = { conversation_id: conversationId, run_id: context.run_id, notes, turns };
          return new Response(JSON.stringify(payload), {
            status: 200,
            headers: { 'Content-Type': 'application/json; charset=UTF-8' },
          });
        }
    """,
    "agents/countdown.ts": """
        // Server-sent events from a ReadableStream, stopping when the signal fires.
        const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

        export async function onRequest(context: any): Promise<Response> {
          const { request, tracer } = context;
          const signal = request.signal as AbortSignal;
          const from = Number(request.body?.from ?? 3);
          const pause = Number(request.body?.pause_ms ?? 300);
          tracer.setAttributes({ from });
          const encoder = new TextEncoder();
          const stream = new ReadableStream({
            async start(controller) {
              const span = tracer.startSpan('countdown', { from });
              try {
                for (let n = from; n > 0; n--) {
                  if (signal.aborted) break;
                  controller.enqueue(encoder.encode(`data: ${JSON.stringify({ n })}\\n\\n`));
                  await sleep(pause);
                }
                const last = signal.aborted ? { stopped: true } : { done: true };
                controller.enqueue(encoder.encode(`data: ${JSON.stringify(last)}\\n\\n`));
              } finally {
                span.setAttribute('aborted', signal.aborted);
                span.end();
                controller.close();
              }
            },
          });
          return new Response(stream, {
            status: 200,
            headers: { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' },
          });
        }
    """,
    "agents/stop.ts": """
        // The target conversation comes in the body: the stop request carries no header.
        export async function onRequest(context: any) {
          const body = (context.request?.body ?? {}) as Record<string, unknown>;
          const conversationId = (body.conversation_id as string | undefined)
            ?? context.conversation_id;
          const result = context.utils.abortActiveRun(conversationId);
          const status = result.aborted ? 'stopped' : 'idle';
          return new Response(JSON.stringify({ status, ...result }),
            { status: 200, headers: { 'Content-Type': 'application/json' } });
        }
    """,
    "agents/bad_ts.ts": """
        // Bad input to the store: the error is the Python store's, by name and message.
        export async function onRequest(context: any) {
          const { store, request } = context;
          if (request.body.case === 'limit') {
            await store.getMessages({ conversationId: context.conversation_id, limit: 500 });
          } else {
            await store.state.set('k', 1);  // no makers-conversation-id: the store is unbound
          }
          return new Response('unreachable');
        }
    """,
    "agents/fails.ts": """
        // A stream that breaks after its first frame.
        export async function onRequest(context: any) {
          async function* frames() {
            yield { step: 1 };
            throw new TypeError('the model went away');
          }
          return frames();
        }
    """,
    "agents/fails_py.py": """
        async def handler(ctx):
            yield {"step": 1}
            raise TypeError("the model went away")
    """,
    "agents/countdown_py.py": """
        import asyncio


        async def handler(ctx):
            for n in range(int(ctx.request.body.get("from", 3)), 0, -1):
                if ctx.request.signal.is_set():
                    yield {"stopped": True}
                    return
                yield {"n": n}
                await asyncio.sleep(0.1)
    """,
    "agents/stop_py.py": """
        async def handler(ctx):
            result = ctx.utils.abort_active_run(ctx.request.body["conversation_id"])
            return {"status": "stopped" if result.aborted else "idle", **result.to_dict()}
    """,
    "agents/bad_py.py": """
        async def handler(ctx):
            if ctx.request.body.get("case") == "limit":
                await ctx.store.get_messages(ctx.conversation_id, limit=500)
            else:
                await ctx.store.state.set("k", 1)
            return "unreachable"
    """,
    "agents/toolbox.mjs": """
        // context.kv, context.tools and a caught store error, in plain JavaScript.
        export async function onRequest(context) {
          const { kv, tools, store } = context;
          await kv.set('greeting', JSON.stringify({ hello: 'kv' }));
          const fromKv = await kv.get('greeting', { type: 'json' });
          const keys = await kv.list();
          const written = await tools.get('files_write')
            .execute({ path: '/notes/a.txt', content: 'hi' });
          const read = await tools.files_read.execute({ path: '/notes/a.txt' });
          let kvError = null;
          try {
            await kv.set('bad', 42);
          } catch (error) {
            kvError = `${error.name}: ${error.message}`;
          }
          let missing = null;
          try {
            await store.updateMessage({ conversationId: context.conversation_id,
              messageId: 'msg_0000000099_0000000000', content: 'x' });
          } catch (error) { missing = error.name; }
          const { sandbox } = context;
          const ran = await sandbox.commands.run('cat notes/a.txt; echo " $X"',
            { env: { X: 'there' }, timeout: 10 });
          await sandbox.files.write('/b.txt', 'from the sandbox');
          const listed = (await sandbox.files.list('/')).map((entry) => entry.name).sort();
          let host = null;
          try { sandbox.getHost(3000); } catch (error) { host = error.name; }
          return Response.json({ fromKv, keys, written, read, kvError, missing,
            toolNames: tools.all().map((tool) => tool.name).length, ran, listed, host });
        }
    """,
    "cloud-functions/api/notes/[cid].py": """
        import json
        from http.server import BaseHTTPRequestHandler


        class handler(BaseHTTPRequestHandler):
            def do_GET(self):
                store = self.context.agent.store.bind(self.context.params["cid"])
                messages = store.get_messages(self.context.params["cid"], limit=100)
                body = json.dumps({
                    "notes": store.state.get("notes") or [],
                    "messages": [m.content for m in messages],
                }).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
    """,
    "cloud-functions/api/ts-notes/[cid].ts": """
        // A Node cloud function: context.agent.store, path params, a standard Request.
        export async function onRequestGet(context: any) {
          const { params, agent, request } = context;
          const messages = await agent.store
            .getMessages({ conversationId: params.cid, limit: 100 });
          return Response.json({
            cid: params.cid,
            contents: messages.map((m: any) => m.content),
            hasCheckpointer: agent.store.langgraphCheckpointer !== undefined,
            query: new URL(request.url).searchParams.get('q'),
          });
        }
    """,
    "agents/whoami.ts": """
        // context.conversation_id as the agent sees it: null without the header.
        export async function onRequest(context: any): Promise<Response> {
          const id = context.conversation_id;
          return Response.json({ id, type: id === null ? 'null' : typeof id });
        }
    """,
    "cloud-functions/fn/whoami.ts": """
        export async function onRequest(context: any): Promise<Response> {
          const id = context.agent.conversation_id;
          return Response.json({ id, type: id === null ? 'null' : typeof id });
        }
    """,
    "agents/whoami_py.py": """
        async def handler(ctx):
            return {"id": ctx.conversation_id, "type": type(ctx.conversation_id).__name__}
    """,
    "cloud-functions/fn/whoami_py.py": """
        import json
        from http.server import BaseHTTPRequestHandler


        class handler(BaseHTTPRequestHandler):
            def do_GET(self):
                cid = self.context.agent.conversation_id
                body = json.dumps({"id": cid, "type": type(cid).__name__}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
    """,
    "cloud-functions/lib/format.ts": """
        // No onRequest export: a helper module, not a route.
        export const format = (text: string) => text.trim();
    """,
}

#: Recycling, reload, a crashing Node worker, an app exported by default, a preflight,
#: agents.timeout.
NODE_LIFECYCLE = {
    "edgeone.json": '{"agents": {"timeout": 1}}',
    "agents/slow.ts": """
        // Waits for its signal, which agents.timeout (1 s here) fires.
        export async function onRequest(context: any) {
          const signal = context.request.signal as AbortSignal;
          const started = Date.now();
          await new Promise((done) => signal.addEventListener('abort', done, { once: true }));
          return Response.json({ aborted: signal.aborted, after_ms: Date.now() - started });
        }
    """,
    "agents/counter.ts": """
        let served = 0;  // this Node worker's own count: reset with its instance

        export async function onRequestPost(context: any) {
          served += 1;
          return Response.json({ served, version: 1 });
        }

        export async function onRequestOptions() {
          const headers = { 'Access-Control-Allow-Origin': '*' };
          return new Response(null, { status: 204, headers });
        }
    """,
    "agents/crash.mjs": """
        export async function onRequest() {
          setTimeout(() => process.exit(3), 10);
          await new Promise((done) => setTimeout(done, 1000));
          return new Response('not reached');
        }
    """,
    "cloud-functions/app/[[rest]].js": """
        // An Express-style app: a (req, res) function exported by default.
        export default function app(req, res) {
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ method: req.method, url: req.url }));
        }
    """,
    "cloud-functions/koa/[[rest]].ts": """
        // A Koa-style app (an object with callback()), in TypeScript compiled to CommonJS.
        const app = {
          callback: () => (req: any, res: any) => {
            res.setHeader('content-type', 'text/plain');
            res.end(`koa saw ${req.url}`);
          },
        };
        export default app;
    """,
}
