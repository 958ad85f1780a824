// Talks to the project's own routes on the page's origin: POST /chat (server-sent events),
// POST /stop and POST /history.

export interface ChatMessage {
  role: 'user' | 'assistant';
  content: string;
}

/** The conversation id this browser keeps, made on first use. */
export function conversationId(): string {
  let id = localStorage.getItem('conversation_id');
  if (!id) {
    id = crypto.randomUUID();
    localStorage.setItem('conversation_id', id);
  }
  return id;
}

export async function loadHistory(id: string): Promise<ChatMessage[]> {
  const response = await fetch('/history', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ conversation_id: id }),
  });
  if (!response.ok) throw new Error(`/history answered ${response.status}`);
  return (await response.json()).messages;
}

/** Streams one turn; `onText` gets each piece. Resolves to how the run ended. */
export async function streamChat(
  id: string, message: string, onText: (text: string) => void,
): Promise<'done' | 'stopped'> {
  const response = await fetch('/chat', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'makers-conversation-id': id },
    body: JSON.stringify({ message }),
  });
  if (!response.ok || !response.body) throw new Error(`/chat answered ${response.status}`);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = '';
  let ending: 'done' | 'stopped' = 'stopped';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffered += value;
    const frames = buffered.split('\n\n');
    buffered = frames.pop() ?? '';
    for (const frame of frames) {
      const data = frame.split('\n').find((line) => line.startsWith('data:'));
      if (!data) continue;
      const event = JSON.parse(data.slice(5));
      if (event.type === 'delta') onText(event.text);
      else ending = event.type;
    }
  }
  return ending;
}

/** Asks the platform to abort the conversation's run: the body names it, no header. */
export async function stopChat(id: string): Promise<void> {
  await fetch('/stop', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ conversation_id: id }),
  });
}
