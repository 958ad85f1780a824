// `context.tracer`: the run's attributes and spans, recorded by the Python
// worker's tracer (emulator/runtime/worker/tracing.py), so a Node run has the same log
// lines, traces.jsonl record and /agent-metrics entry as a Python one.
//
// Calls are sent without waiting; `flush()` (done by the worker before the
// run's answer completes) waits for them all, so the record is whole.

function statusText(status) {
  if (typeof status === 'string') return status;
  if (status && typeof status === 'object' && 'code' in status) {
    return status.code === 2 ? 'error' : 'ok';  // OpenTelemetry's SpanStatusCode
  }
  return String(status);
}

function checkedAttributes(attributes, what) {
  if (attributes === undefined || attributes === null) return {};
  if (typeof attributes !== 'object' || Array.isArray(attributes)) {
    throw new TypeError(`${what}: attributes must be an object, not ${
      Array.isArray(attributes) ? 'an array' : typeof attributes}`);
  }
  return { ...attributes };
}

class Span {
  constructor(tracer, name, attributes) {
    if (typeof name !== 'string' || name === '') {
      throw new TypeError('startSpan: name must be a non-empty string');
    }
    this.tracer = tracer;
    this.name = name;
    this.attributes = checkedAttributes(attributes, 'startSpan');
    this.events = [];
    this.status = 'ok';
    this.started = performance.now();
    this.ended = false;
  }

  setAttribute(key, value) { this.attributes[key] = value; return this; }

  setAttributes(attributes) {
    Object.assign(this.attributes, checkedAttributes(attributes, 'setAttributes'));
    return this;
  }

  addEvent(name, attributes) {
    this.events.push({ name, attributes: checkedAttributes(attributes, 'addEvent') });
    return this;
  }

  setStatus(status) { this.status = statusText(status); return this; }

  recordException(error) {
    this.status = 'error';
    this.events.push({ name: 'exception',
      attributes: { type: error?.name ?? 'Error', message: error?.message ?? String(error) } });
  }

  end() {
    if (this.ended) return;
    this.ended = true;
    this.tracer.send('tracer.span', { name: this.name, attributes: this.attributes,
      events: this.events, status: this.status,
      durationMs: performance.now() - this.started });
  }
}

export class Tracer {
  constructor(client, runId) {
    this.client = client;
    this.runId = runId;
    this.pending = new Set();
  }

  send(method, params) {
    const call = this.client.call(method, { runId: this.runId, ...params })
      .catch((error) => console.error(`${method} failed:`, error.message));
    this.pending.add(call);
    call.finally(() => this.pending.delete(call));
  }

  setAttributes(attributes) {
    this.send('tracer.setAttributes',
      { attributes: checkedAttributes(attributes, 'setAttributes') });
  }

  setAttribute(key, value) { this.send('tracer.setAttributes', { attributes: { [key]: value } }); }

  startSpan(name, attributes) { return new Span(this, name, attributes); }

  /** OpenTelemetry's form: `startActiveSpan(name, [attributes,] fn)`, the span ended after fn. */
  startActiveSpan(name, ...rest) {
    const fn = rest.pop();
    const span = this.startSpan(name, rest[0]?.attributes ?? rest[0]);
    const ending = (value) => { span.end(); return value; };
    const failing = (error) => { span.recordException(error); span.end(); throw error; };
    try {
      const result = fn(span);
      return result instanceof Promise ? result.then(ending, failing) : ending(result);
    } catch (error) {
      return failing(error);
    }
  }

  async flush() {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }
}
