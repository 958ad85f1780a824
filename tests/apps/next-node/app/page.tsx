'use client';

// The chat page: it talks to the project's own routes on its origin, POST /chat (server-sent
// events), POST /stop and POST /history. It works only once hydrated.
import { useEffect, useRef, useState, type KeyboardEvent } from 'react';
import { Title } from './Title';

type Message = { role: 'user' | 'assistant'; content: string };

function keptConversationId(): string {
  const kept = localStorage.getItem('conversation_id');
  if (kept) return kept;
  const made = crypto.randomUUID();
  localStorage.setItem('conversation_id', made);
  return made;
}

async function* sseData(response: Response): AsyncGenerator<any> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let pending = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    pending += value;
    let end;
    while ((end = pending.indexOf('\n\n')) >= 0) {
      const frame = pending.slice(0, end);
      pending = pending.slice(end + 2);
      for (const line of frame.split('\n')) {
        if (line.startsWith('data:')) yield JSON.parse(line.slice(5));
      }
    }
  }
}

export default function ChatPage() {
  const conversation = useRef<string>('');
  const [messages, setMessages] = useState<Message[]>([]);
  const [draft, setDraft] = useState('');
  const [status, setStatus] = useState('loading');

  useEffect(() => {
    conversation.current = keptConversationId();
    // React runs an effect twice in development: only the last one's answer is shown
    let current = true;
    fetch('/history', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ conversation_id: conversation.current }),
    })
      .then((response) => response.json())
      .then((data) => {
        if (current) { setMessages(data.messages); setStatus('ready'); }
      })
      .catch((error) => { if (current) setStatus(String(error)); });
    return () => { current = false; };
  }, []);

  const appendToReply = (text: string) => setMessages((shown) => {
    const reply = shown[shown.length - 1];
    return [...shown.slice(0, -1), { ...reply, content: reply.content + text }];
  });

  async function send() {
    const message = draft.trim();
    if (message === '' || !['ready', 'done', 'stopped'].includes(status)) return;
    setDraft('');
    setMessages((shown) => [...shown, { role: 'user', content: message },
      { role: 'assistant', content: '' }]);
    setStatus('streaming');
    try {
      const response = await fetch('/chat', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json',
          'makers-conversation-id': conversation.current },
        body: JSON.stringify({ message }),
      });
      let ending = 'stopped';
      for await (const frame of sseData(response)) {
        if (frame.type === 'delta') appendToReply(frame.text);
        else ending = frame.type;
      }
      setStatus(ending);
    } catch (error) {
      setStatus(String(error));
    }
  }

  function stop() {
    // the body names the conversation; the header would make this request a run of it
    void fetch('/stop', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ conversation_id: conversation.current }),
    });
  }

  function onKeyDown(event: KeyboardEvent<HTMLTextAreaElement>) {
    if (event.key === 'Enter' && !event.shiftKey) {
      event.preventDefault();
      void send();
    }
  }

  return (
    <main style={{ maxWidth: '40rem', margin: '2rem auto' }}>
      <Title />
      <ol className="messages" style={{ listStyle: 'none', padding: 0 }}>
        {messages.map((message, index) => (
          <li key={index} className={message.role}>{message.content}</li>
        ))}
      </ol>
      <textarea
        aria-label="Message"
        placeholder="Type a message, Enter to send"
        value={draft}
        onChange={(event) => setDraft(event.target.value)}
        onKeyDown={onKeyDown}
        style={{ width: '100%' }}
      />
      <button type="button" disabled={status !== 'streaming'} onClick={stop}>Stop</button>
      <p role="status">{status}</p>
    </main>
  );
}
