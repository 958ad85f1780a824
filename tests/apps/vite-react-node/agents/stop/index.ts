// POST /stop {"conversation_id": ...}: aborts the conversation's running /chat, wherever it runs.
// The frontend sends it without the makers-conversation-id header, as the platform asks.
export async function onRequest(context: any): Promise<Response> {
  const conversationId = context.request.body?.conversation_id;
  if (typeof conversationId !== 'string' || !conversationId) {
    return Response.json({ error: 'conversation_id is required' }, { status: 400 });
  }
  const result = context.utils.abortActiveRun(conversationId);
  return Response.json({ stopped: result.aborted, run_id: result.run_id });
}
