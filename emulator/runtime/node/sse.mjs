// Server-sent-event frames, as the Python runtime's sse.py writes them.

/** One frame: `data` as is if it is a string, else its JSON (String(data) if JSON cannot). */
export function sseFrame(data, { event, id, retry } = {}) {
  const lines = [];
  for (const [name, value] of [['event', event], ['id', id]]) {
    if (value !== undefined && value !== null) {
      if (/[\r\n]/.test(String(value))) throw new TypeError(`sse ${name} must be one line`);
      lines.push(`${name}: ${value}`);
    }
  }
  if (retry !== undefined && retry !== null) lines.push(`retry: ${Math.trunc(Number(retry))}`);
  let text = data;
  if (typeof data !== 'string') {
    try {
      text = JSON.stringify(data);
    } catch {
      text = undefined;
    }
    if (text === undefined) text = String(data);
  }
  for (const line of text.replace(/\r\n/g, '\n').split('\n')) lines.push(`data: ${line}`);
  return `${lines.join('\n')}\n\n`;
}

/** What one item a streaming handler yields puts on the wire. */
export function toFrame(item) {
  if (item instanceof Uint8Array) return item;
  if (typeof item === 'string' && item.endsWith('\n\n')) return item;
  return sseFrame(item);
}
