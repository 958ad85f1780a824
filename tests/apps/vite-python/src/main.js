// The chat page, without a framework: POST /chat (server-sent events from the Python agent),
// POST /stop and POST /history, all on the page's own origin.
import { title } from './title.js';

const heading = document.querySelector('h1');
const list = document.querySelector('.messages');
const input = document.querySelector('textarea');
const stopButton = document.querySelector('button');
const status = document.querySelector('[role="status"]');

let conversationId = localStorage.getItem('conversation_id');
if (!conversationId) {
  conversationId = crypto.randomUUID();
  localStorage.setItem('conversation_id', conversationId);
}

function show(role, content) {
  const item = document.createElement('li');
  item.className = role;
  item.textContent = content;
  list.append(item);
  return item;
}

function setStatus(text) {
  status.textContent = text;
  stopButton.disabled = text !== 'streaming';
}

async function send(message) {
  show('user', message);
  const reply = show('assistant', '');
  setStatus('streaming');
  const response = await fetch('/chat', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'makers-conversation-id': conversationId },
    body: JSON.stringify({ message }),
  });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let pending = '';
  let ending = 'stopped';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    pending += value;
    const frames = pending.split('\n\n');
    pending = frames.pop();
    for (const frame of frames) {
      const line = frame.split('\n').find((each) => each.startsWith('data:'));
      if (!line) continue;
      const event = JSON.parse(line.slice(5));
      if (event.type === 'delta') reply.textContent += event.text;
      else ending = event.type;
    }
  }
  setStatus(ending);
}

input.addEventListener('keydown', (event) => {
  if (event.key !== 'Enter' || event.shiftKey) return;
  event.preventDefault();
  const message = input.value.trim();
  if (!message || !['ready', 'done', 'stopped'].includes(status.textContent)) return;
  input.value = '';
  send(message).catch((error) => setStatus(String(error)));
});

stopButton.addEventListener('click', () => {
  // the body names the conversation; the header would make this request a run of it
  fetch('/stop', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ conversation_id: conversationId }),
  });
});

heading.textContent = title;
if (import.meta.hot) {
  // a new heading replaces the old one in place: the page (and the chat) is not reloaded
  import.meta.hot.accept('./title.js', (updated) => { heading.textContent = updated.title; });
}

fetch('/history', {
  method: 'POST',
  headers: { 'Content-Type': 'application/json' },
  body: JSON.stringify({ conversation_id: conversationId }),
})
  .then((response) => response.json())
  .then((data) => {
    for (const message of data.messages) show(message.role, message.content);
    setStatus('ready');
  })
  .catch((error) => setStatus(String(error)));
