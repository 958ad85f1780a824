// What a Node handler returns, sent as the HTTP answer (the Python side relays it).
//
// A `Response` (the platform's contract) is sent as is: a body of a streamed
// type (platform_choices.NODE_STREAMED_TYPES: SSE, NDJSON) chunk by chunk as
// the handler produces it, any other body whole with its length. Like the Python runtime, serve also
// takes a plain value: null/undefined -> 204, a string -> text, bytes ->
// octet-stream, an async iterable -> server-sent events (one frame per item),
// anything else -> JSON.

import { toFrame } from './sse.mjs';

const OUTCOME_HEADER = 'makers-internal-outcome';
const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
};
// hop-by-hop, or set here from the body actually sent
const DROPPED = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive']);

/** `Name: message`, as the Python runtime writes `f"{type(exc).__name__}: {exc}"`. */
export function errorText(error) {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return `Error: ${String(error)}`;
}

function headersOf(response) {
  const headers = {};
  for (const [name, value] of response.headers) {
    if (!DROPPED.has(name)) headers[name] = value;
  }
  return headers;
}

function toResponse(result) {
  if (result instanceof Response) return result;
  if (result === undefined || result === null) return new Response(null, { status: 204 });
  if (typeof result === 'string') {
    return new Response(result, { headers: { 'content-type': 'text/plain; charset=utf-8' } });
  }
  if (result instanceof Uint8Array || result instanceof ArrayBuffer) {
    return new Response(result, { headers: { 'content-type': 'application/octet-stream' } });
  }
  if (typeof result[Symbol.asyncIterator] === 'function') {
    const encoder = new TextEncoder();
    const iterator = result[Symbol.asyncIterator]();
    const body = new ReadableStream({
      async pull(controller) {
        try {
          const { value, done } = await iterator.next();
          if (done) controller.close();
          else {
            const frame = toFrame(value);
            controller.enqueue(typeof frame === 'string' ? encoder.encode(frame) : frame);
          }
        } catch (error) {
          controller.error(error);  // reported like a failing Response stream
        }
      },
      async cancel() { await iterator.return?.(); },
    });
    return new Response(body, { headers: SSE_HEADERS });
  }
  return new Response(JSON.stringify(result), { headers: { 'content-type': 'application/json' } });
}

function isStreamed(response, streamedTypes) {
  const type = (response.headers.get('content-type') ?? '').toLowerCase();
  return response.body !== null && streamedTypes.some((streamed) => type.startsWith(streamed));
}

async function sendStream(res, response, { signal, beforeEnd, onStreamError }) {
  res.writeHead(response.status, headersOf(response));
  res.flushHeaders();
  const reader = response.body.getReader();
  const stop = () => { reader.cancel().catch(() => {}); };
  res.on('close', stop);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done || res.destroyed) break;
      res.write(value);
    }
  } catch (error) {
    if (!signal.aborted && !res.destroyed) {
      console.error('the response stream failed:', error);
      await onStreamError(errorText(error));  // the Python side ends the stream with it
    }
  } finally {
    res.off('close', stop);
  }
  await beforeEnd();
  res.end();
}

/**
 * Sends `result` (see the module comment). `beforeEnd` runs before the answer
 * completes; `onStreamError(text)` reports a stream that failed after its start.
 */
export async function sendResult(
  res, result, { streamedTypes, signal, runId, beforeEnd, onStreamError },
) {
  let response;
  try {
    response = toResponse(result);
  } catch (error) {
    await beforeEnd();
    const body = JSON.stringify({ error: `the handler's result cannot be sent: ${errorText(error)}`,
      run_id: runId });
    res.writeHead(500, { 'content-type': 'application/json', [OUTCOME_HEADER]: 'error' });
    res.end(body);
    return;
  }
  if (isStreamed(response, streamedTypes)) {
    await sendStream(res, response, { signal, beforeEnd, onStreamError });
    return;
  }
  const body = response.body === null ? Buffer.alloc(0)
    : Buffer.from(await response.arrayBuffer());
  await beforeEnd();
  const headers = headersOf(response);
  if (response.status !== 204 && response.status !== 304) headers['content-length'] = body.length;
  res.writeHead(response.status, headers);
  res.end(body);
}
