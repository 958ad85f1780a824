"""Cloud functions written as context handlers (``async def handler(context)``).

Our own code in the call style of the official claude-agent-starter-python
template's ``cloud-functions/`` (module-level handler, ``context.request.body``,
``getattr(context, "agent").store`` awaited, relative imports of a shared
logger, dict and ``{"status_code", "body"}`` results).
"""

from __future__ import annotations

#: Seconds the server allows a cloud function (the platform's 120 s, shortened).
SHORT_WALL_CLOCK_S = 1.5

CONTEXT_HANDLERS = {
    "agents/seed.py": '''
        async def handler(ctx):
            body = ctx.request.body
            for text in body["messages"]:
                await ctx.store.append_message(
                    conversation_id=body["conversation_id"], role="user", content=text,
                    user_id=body.get("user_id"),
                )
            return {"seeded": len(body["messages"])}
    ''',
    "cloud-functions/_logger.py": '''
        import sys


        class _Logger:
            def __init__(self, tag):
                self.tag = tag

            def log(self, message):
                print(f"[{self.tag}] {message}", file=sys.stdout, flush=True)


        def create_logger(tag):
            return _Logger(tag)
    ''',
    "cloud-functions/_body.py": '''
        def conversation_of(body):
            if not isinstance(body, dict):
                return ""
            value = body.get("conversation_id") or body.get("conversationId") or ""
            return value if isinstance(value, str) else ""
    ''',
    "cloud-functions/history/index.py": '''
        from .._body import conversation_of
        from .._logger import create_logger

        logger = create_logger("history")


        async def handler(context):
            body = getattr(context.request, "body", None) or {}
            cid = conversation_of(body)
            agent = getattr(context, "agent", None)
            store = getattr(agent, "store", None)
            if not cid or store is None:
                return {"conversation_id": cid, "messages": []}
            history = await store.get_messages(conversation_id=cid, limit=100, order="asc")
            logger.log(f"{cid}: {len(history)} messages")
            rows = [{"role": m.role, "content": m.content} for m in history]
            return {"conversation_id": cid, "messages": rows}
    ''',
    "cloud-functions/conversations/index.py": '''
        from .._logger import create_logger

        logger = create_logger("conversations")


        async def handler(context):
            body = context.request.body or {}
            user_id = str(body.get("user_id") or "").strip()
            if not user_id:
                return {"status_code": 400, "body": {"message": "user_id is required"}}
            store = getattr(context, "agent").store
            page = await store.list_conversations(user_id=user_id, limit=20, order="desc")
            return {
                "conversations": [item.conversation_id for item in page.items],
                "next_cursor": page.next_cursor,
            }
    ''',
    "cloud-functions/clear-history/index.py": '''
        from .._body import conversation_of


        async def handler(context):
            cid = conversation_of(context.request.body)
            if not cid:
                return {"status_code": 400, "body": {"message": "conversation_id is required"}}
            store = context.agent.store
            await store.clear_messages(conversation_id=cid)
            left = await store.get_messages(conversation_id=cid, limit=100, order="asc")
            return {"status": "ok", "conversation_id": cid, "left": len(left)}
    ''',
    "cloud-functions/delete-conversation/index.py": '''
        from .._body import conversation_of


        async def handler(context):
            cid = conversation_of(context.request.body)
            await context.agent.store.delete_conversation(conversation_id=cid)
            return {"status": "ok", "conversation_id": cid}
    ''',
    "cloud-functions/probe/_facts.py": '''
        from .._logger import create_logger  # a helper's own relative import

        logger = create_logger("probe")
    ''',
    "cloud-functions/probe/index.py": '''
        from ._facts import logger


        async def handler(context):
            agent = context.agent
            refused = {}
            for name in ("langgraph_checkpointer", "langgraph_store"):
                try:
                    getattr(agent.store, name)
                    refused[name] = None
                except AttributeError as exc:
                    refused[name] = str(exc)
            state = None
            if agent.conversation_id:
                await agent.store.state.set("seen", True)
                state = await agent.store.state.get("seen")
            logger.log("probed")
            request = context.request
            return {
                "method": request.method,
                "path": request.path,
                "query": request.query,
                "body": request.body,
                "header": request.headers.get("x-probe"),
                "env": context.env.get("PROBE_ENV"),
                "conversation_id": context.conversation_id,
                "agent_conversation_id": agent.conversation_id,
                "store_conversation_id": agent.store.conversation_id,
                "store_run_id": agent.store.run_id,
                "run_id": context.run_id,
                "refused": refused,
                "listed": [n for n in dir(agent.store) if n.startswith("langgraph")],
                "state": state,
                "has_utils": hasattr(context, "utils"),
            }
    ''',
    "cloud-functions/items/[item_id].py": '''
        async def handler(context):
            return ({"item_id": context.params["item_id"]}, 201, {"x-item": "yes"})
    ''',
    "cloud-functions/plain.py": '''
        import threading


        def handler(context):
            return f"plain from {threading.current_thread().name != 'MainThread'}"
    ''',
    "cloud-functions/stream.py": '''
        async def handler(context):
            yield {"chunk": 1}
    ''',
    "cloud-functions/slow.py": '''
        import asyncio


        async def handler(context):
            await asyncio.sleep(float(context.request.body["seconds"]))
            return {"slept": context.request.body["seconds"]}
    ''',
    "cloud-functions/boom.py": '''
        async def handler(context):
            raise TimeoutError("the handler's own timeout 5521")
    ''',
}
