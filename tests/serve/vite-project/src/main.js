import './style.css';

document.getElementById('message').textContent = 'page ready';
document.getElementById('ask').addEventListener('click', async () => {
  const answer = await fetch('/hello', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'vite' }),
  });
  document.getElementById('reply').textContent = await answer.text();
});
