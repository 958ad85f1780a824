"""POST /stop {"conversation_id": ...}: aborts the conversation's running /chat, on any
instance. The page sends it without the makers-conversation-id header."""


async def handler(ctx):
    conversation_id = ctx.request.body.get("conversation_id")
    if not isinstance(conversation_id, str) or not conversation_id:
        return {"error": "conversation_id is required"}, 400
    result = ctx.utils.abort_active_run(conversation_id)
    return {"stopped": result.aborted, "run_id": result.run_id}
