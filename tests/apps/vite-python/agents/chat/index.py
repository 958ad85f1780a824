"""POST /chat: a chat agent with no model, for the Vite + Python test app.

It answers deterministically, remembers the conversation through ``ctx.store`` (any
instance can take the next turn) and streams its answer as server-sent events a few
words at a time, so that a stop can be seen: ``{"type": "delta", "text": ...}`` per
piece, then ``{"type": "done"}``, or ``{"type": "stopped"}`` once /stop aborted the
run. "count to N" streams N numbers slowly.
"""

import asyncio
import re

WORD_PAUSE_S = 0.03
COUNT_PAUSE_S = 0.15


def pieces_for(message, earlier):
    counting = re.fullmatch(r"count to (\d+)", message, re.IGNORECASE)
    if counting:
        last = min(int(counting.group(1)), 200)
        return [f"{n} " for n in range(1, last)] + [f"{last}."], COUNT_PAUSE_S
    text = f'Turn {len(earlier) + 1}: you said "{message}".'
    if earlier:
        text += f' Your first message was "{earlier[0]}".'
    return re.findall(r"\S+\s*", text), WORD_PAUSE_S


async def reply(ctx, message):
    history = await ctx.store.get_messages(ctx.conversation_id, limit=100, order="asc")
    earlier = [m.content for m in history if m.role == "user"]
    await ctx.store.append_message(ctx.conversation_id, "user", message)
    pieces, pause = pieces_for(message, earlier)
    said = ""
    try:
        for piece in pieces:
            if ctx.request.signal.is_set():
                break
            said += piece
            yield {"type": "delta", "text": piece}
            await asyncio.sleep(pause)
    finally:
        # kept whether the run finished, was stopped or lost its client: a reload shows it
        await ctx.store.append_message(ctx.conversation_id, "assistant", said)
    yield {"type": "stopped" if ctx.request.signal.is_set() else "done"}


async def handler(ctx):
    message = str(ctx.request.body.get("message", "")).strip()
    if not ctx.conversation_id or not message:
        return {"error": 'send {"message": ...} with a makers-conversation-id header'}, 400
    return ctx.utils.stream_sse(reply(ctx, message))
