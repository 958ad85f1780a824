import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App';
import './app.css';

// Signing in, as far as this app needs: middleware.ts lets the agents answer with this cookie.
if (!/(?:^|;\s*)session=/.test(document.cookie)) {
  document.cookie = `session=${crypto.randomUUID()}; path=/; SameSite=Lax`;
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
