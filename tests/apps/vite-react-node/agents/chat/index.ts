// POST /chat: a chat agent with no model. It answers deterministically, remembers the
// conversation through context.store (so any instance can take the next turn), and streams
// its answer as server-sent events a few words at a time, so that a stop can be seen.
//
// Frames: `data: {"type":"delta","text":...}` per piece, then `{"type":"done"}`, or
// `{"type":"stopped"}` when /stop aborted the run. "count to N" streams N numbers slowly.

interface ChatBody {
  message?: unknown;
}

const WORD_PAUSE_MS = 30;
const COUNT_PAUSE_MS = 150;

/** Waits `ms`, or less if the run is stopped meanwhile. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const stopped = () => { clearTimeout(timer); resolve(); };
    const timer = setTimeout(() => { signal.removeEventListener('abort', stopped); resolve(); }, ms);
    signal.addEventListener('abort', stopped, { once: true });
  });
}

/** The answer in the pieces it is streamed in, and the pause after each. */
function answer(message: string, earlier: string[]): { pieces: string[]; pauseMs: number } {
  const counting = /^count to (\d+)$/i.exec(message);
  if (counting) {
    const upTo = Math.min(Number(counting[1]), 200);
    return {
      pieces: Array.from({ length: upTo }, (_, i) => `${i + 1}${i + 1 < upTo ? ' ' : '.'}`),
      pauseMs: COUNT_PAUSE_MS,
    };
  }
  const turn = earlier.length + 1;
  const recalled = earlier.length ? ` Your first message was "${earlier[0]}".` : '';
  const text = `Turn ${turn}: you said "${message}".${recalled}`;
  return { pieces: text.split(/(?<= )/), pauseMs: WORD_PAUSE_MS };
}

export async function onRequest(context: any): Promise<Response> {
  const { store, request } = context;
  const conversationId: string | null = context.conversation_id;
  const message = String((request.body as ChatBody).message ?? '').trim();
  if (!conversationId || !message) {
    return Response.json(
      { error: 'send {"message": ...} with a makers-conversation-id header' }, { status: 400 });
  }
  const history = await store.getMessages({ conversationId, limit: 100, order: 'asc' });
  const earlier = history
    .filter((m: { role: string }) => m.role === 'user')
    .map((m: { content: string }) => m.content);
  await store.appendMessage({ conversationId, role: 'user', content: message });

  const signal: AbortSignal = request.signal;
  const { pieces, pauseMs } = answer(message, earlier);
  const encoder = new TextEncoder();
  const frame = (data: object) => encoder.encode(`data: ${JSON.stringify(data)}\n\n`);
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      let said = '';
      for (const piece of pieces) {
        if (signal.aborted) break;
        controller.enqueue(frame({ type: 'delta', text: piece }));
        said += piece;
        await pause(pauseMs, signal);
      }
      // what was said is kept, stopped or not, so that a reload shows it
      await store.appendMessage({ conversationId, role: 'assistant', content: said });
      try {
        controller.enqueue(frame({ type: signal.aborted ? 'stopped' : 'done' }));
        controller.close();
      } catch {
        // the client left: nobody reads the last frame
      }
    },
  });
  return new Response(body, {
    headers: { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache' },
  });
}
