"""A project whose routes take request bodies and store options as official templates pass them.

Our own code in the templates' call styles: a TypeScript agent that receives
a multipart upload as the raw ``Buffer`` of ``context.request.body`` and
splits it itself, a Python agent that receives a CSV as ``bytes``, Node cloud
functions that dispatch on the already-parsed ``context.request.body``, call
``await context.request.json()`` (falling back to ``{}`` when it throws) or
``formData()``, and store calls carrying ``userId``, a caller's ``messageId``
and keys no method takes. The ``inspect`` routes report what their body is,
in each language and kind of route, for the Content-Type rule.
"""

from __future__ import annotations

#: What an ``inspect`` route answers: the body's kind and value (raw bodies in base64).
_NODE_INSPECT = """
    export async function onRequest(context: any) {
      const { body } = context.request;
      if (Buffer.isBuffer(body)) {
        return Response.json({ kind: 'raw', base64: body.toString('base64') });
      }
      return Response.json({ kind: 'parsed', body });
    }
"""

_PYTHON_INSPECT = """
    import base64


    async def handler(ctx):
        body = ctx.request.body
        if isinstance(body, bytes):
            assert body == ctx.request.raw_body
            return {"kind": "raw", "base64": base64.b64encode(body).decode("ascii")}
        return {"kind": "parsed", "body": body}
"""

BODY_PROJECT = {
    "agents/upload.ts": """
        // An upload reaches the agent as the raw Buffer of its multipart body,
        // which the agent splits into parts itself.
        interface Part { field: string; filename?: string; type?: string; data: Buffer }

        function boundaryOf(contentType: string): string | null {
          const found = /boundary=(?:"([^"]+)"|([^;\\s]+))/i.exec(contentType);
          return found ? (found[1] ?? found[2]) : null;
        }

        function partsOf(body: Buffer, boundary: string): Part[] {
          const delimiter = Buffer.from(`--${boundary}`);
          const parts: Part[] = [];
          let at = body.indexOf(delimiter);
          while (at !== -1) {
            const next = body.indexOf(delimiter, at + delimiter.length);
            if (next === -1) break;
            // a part sits between the CRLF ending one delimiter line and the CRLF before the next
            const part = body.subarray(at + delimiter.length + 2, next - 2);
            const split = part.indexOf('\\r\\n\\r\\n');
            const head = part.subarray(0, split).toString('utf8');
            parts.push({
              field: /;\\s*name="([^"]*)"/.exec(head)?.[1] ?? '',
              filename: /filename="([^"]*)"/.exec(head)?.[1],
              type: /content-type:\\s*([^\\r\\n]+)/i.exec(head)?.[1],
              data: part.subarray(split + 4),
            });
            at = next;
          }
          return parts;
        }

        export async function onRequest(context: any): Promise<Response> {
          const { request } = context;
          const contentType: string = request.headers['content-type'] ?? '';
          if (!contentType.startsWith('multipart/form-data')) {
            return Response.json({ error: 'send multipart/form-data' }, { status: 415 });
          }
          const body = request.body;
          const boundary = boundaryOf(contentType);
          if (!Buffer.isBuffer(body) || boundary === null) {
            return Response.json({ error: 'no upload received' }, { status: 400 });
          }
          const parts = partsOf(body, boundary);
          const fields: Record<string, string> = {};
          const files = [];
          for (const part of parts) {
            if (part.filename === undefined) {
              fields[part.field] = part.data.toString('utf8');
              continue;
            }
            const lines = part.data.toString('utf8').split('\\n').filter((line) => line.trim());
            files.push({ field: part.field, filename: part.filename, type: part.type,
              size: part.data.length, header: lines[0]?.split(','), rows: lines.length - 1 });
          }
          return Response.json({ size: body.length, fields, files });
        }
    """,
    "agents/ingest.py": """
        # A CSV posted as it is (text/csv, application/octet-stream): ctx.request.body is its bytes.
        async def handler(ctx):
            data = ctx.request.body
            if not isinstance(data, bytes):
                return {"error": "post the CSV itself"}, 400
            lines = [line for line in data.decode("utf-8").splitlines() if line.strip()]
            await ctx.store.state.set("columns", lines[0].split(","))
            return {
                "type": type(data).__name__,
                "content_type": ctx.request.headers.get("content-type"),
                "columns": await ctx.store.state.get("columns"),
                "rows": len(lines) - 1,
            }
    """,
    "agents/inspect.ts": _NODE_INSPECT,
    "agents/inspect_py.py": _PYTHON_INSPECT,
    "cloud-functions/inspect/node.ts": _NODE_INSPECT,
    "cloud-functions/inspect/python.py": _PYTHON_INSPECT,  # a context handler
    "cloud-functions/articles/index.ts": """
        // Articles CRUD on one conversation per article; the action comes in the
        // body, which the runtime has already parsed.
        const conversationOf = (id: string) => `article-${id}`;

        export async function onRequest(context: any) {
          const store = context.agent?.store;
          const body = context.request.body ?? {};
          const { action, id } = body;
          switch (action) {
            case 'save': {
              const messageId = await store.appendMessage({
                conversationId: conversationOf(id), role: 'system',
                content: JSON.stringify({ title: body.title, text: body.text }),
                metadata: { kind: 'article' },
              });
              return Response.json({ saved: id, messageId });
            }
            case 'get': {
              const [latest] = await store.getMessages({
                conversationId: conversationOf(id), limit: 1, order: 'desc' });
              if (!latest) return Response.json({ error: 'no such article' }, { status: 404 });
              return Response.json(JSON.parse(latest.content));
            }
            case 'remove':
              await store.clearMessages({ conversationId: conversationOf(id) });
              return Response.json({ removed: id });
            default:
              return Response.json({ error: `unknown action ${action}` }, { status: 400 });
          }
        }
    """,
    "cloud-functions/chats/history.ts": """
        // History for a UI: the JSON body read with request.json(), {} when that throws.
        async function readJson(request: Request): Promise<Record<string, any>> {
          try {
            const data = await request.json();
            return data && typeof data === 'object' && !Array.isArray(data) ? data : {};
          } catch {
            return {};
          }
        }

        export async function onRequestPost(context: any) {
          const body = await readJson(context.request);
          const conversationId =
            typeof body.conversation_id === 'string' ? body.conversation_id : '';
          if (!conversationId) {
            return Response.json({ error: 'conversation_id is required' }, { status: 400 });
          }
          const args: Record<string, unknown> = { conversationId, limit: 50, order: 'asc' };
          if (body.user_id) args.userId = body.user_id;
          const messages = await context.agent.store.getMessages(args);
          return Response.json({
            conversation_id: conversationId,
            messages: messages.map((m: any) => ({
              id: m.messageId, role: m.role, content: m.content })),
          });
        }
    """,
    "cloud-functions/chats/clear.ts": """
        export async function onRequestPost(context: any) {
          const { conversation_id: conversationId, user_id: userId } = await context.request.json();
          await context.agent.store.clearMessages({ conversationId, userId });
          const left = await context.agent.store.getMessages({ conversationId, userId });
          return Response.json({ cleared: conversationId, left: left.length });
        }
    """,
    "cloud-functions/chats/remove.ts": """
        export async function onRequestPost(context: any) {
          const { conversation_id: conversationId, user_id: userId } = await context.request.json();
          await context.agent.store.deleteConversation({ conversationId, userId });
          const gone = (await context.agent.store.getConversation(conversationId)) === null;
          return Response.json({ removed: conversationId, gone });
        }
    """,
    "cloud-functions/form.ts": """
        // A form post read with the standard Request's formData().
        export async function onRequestPost(context: any) {
          const { request } = context;
          const form = await request.formData();
          const fields: Record<string, string> = {};
          const files = [];
          for (const [name, value] of form.entries()) {
            if (typeof value === 'string') fields[name] = value;
            else files.push({ field: name, filename: value.name, size: value.size,
              text: await value.text() });
          }
          return Response.json({ fields, files, bodyIsBuffer: Buffer.isBuffer(request.body),
            bodyUsed: request.bodyUsed });
        }
    """,
    "cloud-functions/probe.ts": """
        // What a cloud function's context.request is: a Request, with the body already read.
        export async function onRequest(context: any) {
          const { request } = context;
          const parsed = request.body;
          const copy = request.clone();
          const fromCopy = new Uint8Array(await copy.arrayBuffer()).length;
          const text = await request.text();
          let again = null;
          try {
            await request.json();
          } catch (error) {
            again = (error as Error).name;
          }
          return Response.json({
            isRequest: request instanceof Request,
            method: request.method,
            url: request.url,
            header: request.headers.get('x-probe'),
            signal: request.signal instanceof AbortSignal && !request.signal.aborted,
            body: Buffer.isBuffer(parsed) ? { raw: parsed.toString('utf8') } : parsed,
            copyBody: Buffer.isBuffer(copy.body) ? { raw: copy.body.toString('utf8') } : copy.body,
            copyIsSeparate: copy.body !== parsed,
            fromCopy,
            text,
            bodyUsed: request.bodyUsed,
            again,
          });
        }
    """,
    "agents/remember.ts": """
        // One chat turn kept as chat templates keep it: the id the frontend chose,
        // the user's id, and a key a newer frontend adds that no store method takes.
        export async function onRequest(context: any) {
          const { store, conversation_id: conversationId, request } = context;
          const { message, userId, messageId } = request.body;
          const args: Record<string, unknown> = {
            conversationId, role: 'user', content: message, clientVersion: 2 };
          if (userId) args.userId = userId;
          if (messageId) args.messageId = messageId;
          const id = await store.appendMessage(args);
          const history = await store.getMessages({ conversationId, limit: 20, userId,
            clientVersion: 2 });
          return Response.json({ id, history: history.map((m: any) => [m.messageId, m.content]) });
        }
    """,
    "agents/page.ts": """
        // Options straight from the request: a wrong type is the store's named error.
        export async function onRequest(context: any) {
          const { store, conversation_id: conversationId, request } = context;
          try {
            return Response.json(await store.getMessages({ conversationId, ...request.body }));
          } catch (error) {
            const { name, message } = error as Error;
            return Response.json({ name, message }, { status: 422 });
          }
        }
    """,
}
