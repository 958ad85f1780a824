"""POST /history {"conversation_id": ...}: the conversation's messages, for a reloaded page."""


async def handler(context):
    conversation_id = (context.request.body or {}).get("conversation_id")
    if not isinstance(conversation_id, str) or not conversation_id:
        return {"status_code": 400, "body": {"error": "conversation_id is required"}}
    stored = await context.agent.store.get_messages(conversation_id, limit=100, order="asc")
    return {"messages": [{"role": m.role, "content": m.content} for m in stored]}
