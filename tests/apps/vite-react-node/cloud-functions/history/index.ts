// POST /history {"conversation_id": ...}: the conversation's messages, for a reloaded page.
export async function onRequestPost(context: any): Promise<Response> {
  const body = await context.request.json().catch(() => ({}));
  const conversationId = body?.conversation_id;
  if (typeof conversationId !== 'string' || !conversationId) {
    return Response.json({ error: 'conversation_id is required' }, { status: 400 });
  }
  const messages = await context.agent.store.getMessages({ conversationId, limit: 100, order: 'asc' });
  return Response.json({
    messages: messages.map((m: { role: string; content: string }) => ({ role: m.role, content: m.content })),
    // set by middleware.ts from the session cookie
    session: context.request.headers.get('x-session'),
  });
}
