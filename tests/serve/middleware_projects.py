"""Projects with a platform middleware (``middleware.js`` / ``.ts``), for test_middleware.py.

Our own code, in the shape the platform's docs give: ``export function
middleware(context)`` with ``context.request``, ``next({headers})``,
``redirect``, ``rewrite``, ``clientIp``, ``env``, and ``export const config =
{ matcher }``; the auth guard is the makers-agents-auth template's idea (a
``jwt_token`` cookie on ``/chat/:path*``-style matchers), written anew.
"""

from __future__ import annotations

#: Milliseconds between the two pieces of the streamed Response.
STREAM_PAUSE_MS = 800

#: One middleware that does a different thing per path, in front of a Python
#: agent, a Node agent and Node cloud functions.
GUARDED = {
    "middleware.js": """
        import path from 'path';  // the platform's edge runtime has no 'path': a warning

        export const config = {
          matcher: [
            '/chat/:path*',
            '/nodechat/:path*',
            '/redirect/:code',
            '/rewrite/:kind',
            '/stream',
            '/throw',
            '/pass',
            '/crash',
            '^/re/\\\\d+$',
            '/app/:path*',
            '^/look(?<=/lo+k)/\\\\d+$',  // a lookbehind only JavaScript reads: the host tests
          ],
        };

        const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

        export function middleware(context) {
          const { request, next, redirect, rewrite } = context;
          const url = new URL(request.url);
          const cookies = request.headers.get('cookie') ?? '';
          if (url.pathname.startsWith('/chat') || url.pathname.startsWith('/nodechat')) {
            if (!/(^|;\\s*)jwt_token=/.test(cookies)) {
              return new Response(JSON.stringify({ error: 'sign in first' }), {
                status: 401, headers: { 'content-type': 'application/json' } });
            }
            return next({ headers: { 'x-user-id': 'user-42', 'x-client-ip': context.clientIp,
              'x-greeting': context.env.GREETING ?? 'unset' } });
          }
          if (url.pathname.startsWith('/app')) {
            if (!/(^|;\\s*)jwt_token=/.test(cookies)) return redirect('/login');
            return next();
          }
          if (url.pathname.startsWith('/redirect/')) {
            const code = url.pathname.split('/')[2];
            return code === 'default' ? redirect('/elsewhere')
              : redirect(new URL('/elsewhere', request.url), Number(code));
          }
          if (url.pathname === '/rewrite/agent') return rewrite('/echo');
          if (url.pathname === '/rewrite/function') {
            return rewrite(new URL('/api/where?from=rewrite', request.url));
          }
          if (url.pathname === '/rewrite/away') return rewrite('https://example.com/x');
          if (url.pathname === '/stream') {
            const encoder = new TextEncoder();
            return new Response(new ReadableStream({
              async start(controller) {
                controller.enqueue(encoder.encode('first\\n'));
                await sleep(PAUSE_MS);
                controller.enqueue(encoder.encode('second\\n'));
                controller.close();
              },
            }), { headers: { 'content-type': 'text/plain' } });
          }
          if (url.pathname === '/throw') throw new Error('the middleware broke');
          if (url.pathname === '/crash') process.exit(7);  // the host dies (and a warning)
          if (url.pathname.startsWith('/re/') || url.pathname.startsWith('/look/')) {
            return new Response('regex matched', { status: 418 });
          }
          if (path.sep !== '/') return new Response('unexpected', { status: 500 });
          context.waitUntil(Promise.reject(new Error('a task after the answer failed')));
          const response = next({ request: { headers: { 'x-user-id': 'passed',
            'x-geo': JSON.stringify(context.geo), 'x-url-info': context.urlInfo.pathname } } });
          response.headers.set('x-middleware-saw', request.method);
          response.cookies.set('seen', '1', { path: '/' });
          return response;
        }
    """.replace("PAUSE_MS", str(STREAM_PAUSE_MS)),
    ".env": "GREETING=hello from .env\n",
    "agents/chat.py": """
        async def handler(ctx):
            headers = ctx.request.headers
            return {"agent": "python", "user": headers.get("x-user-id"),
                    "client_ip": headers.get("x-client-ip"), "greeting": headers.get("x-greeting")}
    """,
    "agents/echo.py": """
        async def handler(ctx):
            return {"agent": "echo", "path": ctx.request.path,
                    "user": ctx.request.headers.get("x-user-id")}
    """,
    "agents/nodechat.mjs": """
        export async function onRequest(context) {
          return { agent: 'node', user: context.request.headers['x-user-id'] ?? null };
        }
    """,
    "cloud-functions/api/where.mjs": """
        export function onRequestGet(context) {
          const url = new URL(context.request.url);
          return Response.json({ path: url.pathname, from: url.searchParams.get('from'),
            user: context.request.headers.get('x-user-id') });
        }
    """,
    "cloud-functions/pass.mjs": """
        export function onRequest(context) {
          const { headers } = context.request;
          return Response.json({ user: headers.get('x-user-id'), geo: headers.get('x-geo'),
            urlInfo: headers.get('x-url-info') });
        }
    """,
    "cloud-functions/throw.mjs": """
        export function onRequest() {
          return new Response('the route ran');
        }
    """,
    "cloud-functions/login.mjs": """
        // the sign-in page: sets the cookie the middleware wants, then opens the app
        export function onRequestGet() {
          return new Response(`<!doctype html><title>Sign in</title>
            <button id="sign-in" onclick="document.cookie = 'jwt_token=t0k3n; path=/';
              location.href = '/app'">Sign in</button>`,
            { headers: { 'content-type': 'text/html; charset=utf-8' } });
        }
    """,
    "cloud-functions/app.mjs": """
        // the guarded page: asks the guarded agent who the user is
        export function onRequestGet() {
          return new Response(`<!doctype html><title>App</title><p id="who">...</p>
            <script>
              fetch('/chat', { method: 'POST', headers: { 'content-type': 'application/json' },
                body: '{}' }).then((r) => r.json()).then((data) => {
                  document.getElementById('who').textContent = 'signed in as ' + data.user;
                });
            </script>`, { headers: { 'content-type': 'text/html; charset=utf-8' } });
        }
    """,
}

#: A TypeScript middleware with one string matcher (rewritten by the reload test).
TYPESCRIPT = {
    "src/middleware.ts": """
        interface Context { request: Request; next: () => Response }

        export const config = { matcher: '/only' };

        export function middleware({ request }: Context): Response {
          const where: string = new URL(request.url).pathname;
          return new Response(`typescript saw ${where}`, { status: 203 });
        }
    """,
    "agents/echo.py": """
        async def handler(ctx):
            return {"agent": "echo", "path": ctx.request.path}
    """,
}

#: What the reload test writes over TYPESCRIPT's middleware: no matcher, so every path.
TYPESCRIPT_EVERYWHERE = """
    export default {
      middleware(context: { request: Request }): Response {
        return new Response('everywhere now', { status: 202 });
      },
    };
"""

#: A Next.js app (as the platform recognises one): its middleware.ts is Next's own.
NEXTJS = {
    "package.json": '{"name": "next-app", "dependencies": {"next": "15.0.0"}}\n',
    "app/page.tsx": "export default function Page() { return null; }\n",
    "middleware.ts": """
        export function middleware() {
          return new Response('the platform middleware ran', { status: 401 });
        }
    """,
    "agents/echo.py": """
        async def handler(ctx):
            return {"agent": "echo"}
    """,
}
