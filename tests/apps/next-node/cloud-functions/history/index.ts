// POST /history {"conversation_id": ...}: what the conversation holds, for a reloaded page.
// The body is read as the platform's runtime gives it, already parsed.
export async function onRequestPost(context: any) {
  const conversationId = context.request.body?.conversation_id;
  if (typeof conversationId !== 'string' || conversationId === '') {
    return Response.json({ error: 'conversation_id is required' }, { status: 400 });
  }
  const stored = await context.agent.store.getMessages({ conversationId, limit: 100, order: 'asc' });
  const messages = stored.map(({ role, content }: { role: string; content: string }) =>
    ({ role, content }));
  return Response.json({ messages });
}
