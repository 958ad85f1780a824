import { useEffect, useState, type KeyboardEvent } from 'react';
import { conversationId, loadHistory, stopChat, streamChat, type ChatMessage } from './chat';
import { Title } from './Title';

export function App() {
  const [id] = useState(conversationId);
  const [messages, setMessages] = useState<ChatMessage[]>([]);
  const [draft, setDraft] = useState('');
  const [status, setStatus] = useState('loading');

  useEffect(() => {
    // React runs an effect twice in development: only the last one's answer is shown
    let current = true;
    loadHistory(id).then((earlier) => {
      if (!current) return;
      setMessages(earlier);
      setStatus('ready');
    }, (error) => current && setStatus(String(error)));
    return () => { current = false; };
  }, [id]);

  async function send() {
    const message = draft.trim();
    if (!message || status !== 'ready' && status !== 'done' && status !== 'stopped') return;
    setDraft('');
    setMessages((shown) => [...shown, { role: 'user', content: message },
      { role: 'assistant', content: '' }]);
    setStatus('streaming');
    try {
      const ending = await streamChat(id, message, (text) => setMessages((shown) => {
        const last = shown[shown.length - 1];
        return [...shown.slice(0, -1), { ...last, content: last.content + text }];
      }));
      setStatus(ending);
    } catch (error) {
      setStatus(String(error));
    }
  }

  function onKeyDown(event: KeyboardEvent<HTMLTextAreaElement>) {
    if (event.key === 'Enter' && !event.shiftKey) {
      event.preventDefault();
      void send();
    }
  }

  return (
    <main>
      <Title />
      <ol className="messages">
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
      />
      <button type="button" disabled={status !== 'streaming'} onClick={() => void stopChat(id)}>
        Stop
      </button>
      <p role="status">{status}</p>
    </main>
  );
}
