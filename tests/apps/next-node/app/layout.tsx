import type { ReactNode } from 'react';

export const metadata = { title: 'Next.js chat (makers-store test app)' };

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body style={{ fontFamily: 'system-ui, sans-serif' }}>{children}</body>
    </html>
  );
}
