// POST /chat: a chat agent with no model, for the Next.js test app. Its answer is
// deterministic, it remembers the conversation through context.store, and it streams the
// answer through context.utils.streamSSE a few words at a time, so that a stop can be seen.
//
// Frames: {"type":"delta","text":...} per piece, then {"type":"done"}, or {"type":"stopped"}
// when /stop aborted the run. "count to N" streams N numbers slowly.

type Frame = { type: 'delta'; text: string } | { type: 'done' | 'stopped' };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function piecesFor(message: string, earlierUserMessages: string[]): [string[], number] {
  const counting = message.match(/^count to (\d+)$/i);
  if (counting) {
    const last = Math.min(Number(counting[1]), 200);
    const numbers = Array.from({ length: last }, (_, i) => String(i + 1));
    return [numbers.map((n, i) => (i + 1 < last ? `${n} ` : `${n}.`)), 150];
  }
  const turn = earlierUserMessages.length + 1;
  let text = `Turn ${turn}: you said "${message}".`;
  if (earlierUserMessages.length > 0) text += ` Your first message was "${earlierUserMessages[0]}".`;
  return [text.split(/(?<= )/), 30];
}

async function* reply(context: any, conversationId: string, message: string):
  AsyncGenerator<Frame> {
  const { store } = context;
  const signal: AbortSignal = context.request.signal;
  const earlier = (await store.getMessages({ conversationId, limit: 100, order: 'asc' }))
    .filter((m: { role: string }) => m.role === 'user')
    .map((m: { content: string }) => m.content);
  await store.appendMessage({ conversationId, role: 'user', content: message });
  const [pieces, pauseMs] = piecesFor(message, earlier);
  let said = '';
  try {
    for (const text of pieces) {
      if (signal.aborted) break;
      said += text;
      yield { type: 'delta', text };
      await sleep(pauseMs);
    }
  } finally {
    // kept whether the run finished, was stopped or lost its client: a reload shows it
    await store.appendMessage({ conversationId, role: 'assistant', content: said });
  }
  yield { type: signal.aborted ? 'stopped' : 'done' };
}

export async function onRequest(context: any) {
  const conversationId = context.conversation_id;
  const message = String(context.request.body?.message ?? '').trim();
  if (conversationId === null || message === '') {
    return Response.json(
      { error: 'send {"message": ...} with a makers-conversation-id header' }, { status: 400 });
  }
  return context.utils.streamSSE(reply(context, conversationId, message));
}
