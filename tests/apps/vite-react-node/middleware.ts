// middleware.ts: the agents answer a signed-in page only, as an auth template guards its
// routes. /chat, /stop and /history answer 401 without the `session` cookie; with it the
// request goes on, carrying the session in a header the agents and cloud functions read.
// The page itself (everything the frontend serves) is not matched: it loads signed out.
export const config = { matcher: ['/chat/:path*', '/stop/:path*', '/history/:path*'] };

export function middleware(context: any) {
  const cookies: string = context.request.headers.get('cookie') ?? '';
  const session = /(?:^|;\s*)session=([^;]+)/.exec(cookies)?.[1];
  if (!session) {
    return new Response(JSON.stringify({ error: 'sign in first' }), {
      status: 401,
      headers: { 'Content-Type': 'application/json' },
    });
  }
  return context.next({ headers: { 'x-session': session } });
}
