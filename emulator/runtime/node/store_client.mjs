// The store RPC client: newline-delimited JSON over a Unix-domain socket to
// the Python store (emulator/runtime/store_rpc/server.py). No npm dependencies.
//
// Requests are pipelined on one connection and matched to answers by id. A
// failed call rejects with an Error whose `name` and `message` are the Python
// exception's (MemoryValidationError, MemoryNotFoundError, ...), an instance
// of the matching class below.
import net from 'node:net';

export class StoreError extends Error {}
export class MemoryValidationError extends StoreError {}
export class MemoryQuotaExceededError extends StoreError {}
export class MemoryNotFoundError extends StoreError {}
export class MemoryConflictError extends StoreError {}
export class MemoryCorruptError extends StoreError {}
export class BackendError extends StoreError {}
export class MissingExtraError extends BackendError {}

const ERROR_CLASSES = {
  StoreError, MemoryValidationError, MemoryQuotaExceededError, MemoryNotFoundError,
  MemoryConflictError, PreconditionFailedError: MemoryConflictError, MemoryCorruptError,
  BackendError, MissingExtraError,
};

/** An Error named as Python named it (`error.name`), of the closest class. */
export function storeError(name, message) {
  const Class = ERROR_CLASSES[name] ?? StoreError;
  const error = new Class(message);
  Object.defineProperty(error, 'name', { value: name, enumerable: false, configurable: true, writable: true });
  return error;
}

// Nesting past this is refused by the store (at most 100 levels); deeper
// values are cut here so that neither side's JSON parser overflows its stack.
const DEEPEST = 110;

/**
 * `params` as one JSON request line. JSON cannot carry NaN, Infinity,
 * functions, symbols, BigInts or cycles (JSON.stringify drops or nulls them
 * silently); they are sent as null and listed under `$nonjson`, so that the
 * Python store rejects them with its own message, as it would a Python caller.
 */
export function encodeRequest(id, method, params) {
  const nonjson = [];
  const holders = new Map(); // object -> [the object holding it, its key there, its depth]
  let wrapper = null; // JSON.stringify's own {"": params}
  function pathTo(holder, key) {
    const path = [key];
    for (let up = holder; holders.get(up)[0] !== wrapper; up = holders.get(up)[0]) path.unshift(holders.get(up)[1]);
    return path;
  }
  function replacer(key, value) {
    if (wrapper === null) wrapper = this;
    let kind = null;
    if (typeof value === 'number' && !Number.isFinite(value)) kind = String(value);
    else if (typeof value === 'function' || typeof value === 'symbol' || typeof value === 'bigint') kind = typeof value;
    else if (value !== null && typeof value === 'object') {
      const depth = this === wrapper ? 0 : holders.get(this)[2] + 1;
      if (depth > DEEPEST) kind = 'deep';
      for (let up = this; kind === null && up !== wrapper; up = holders.get(up)[0]) {
        if (up === value) kind = 'circular';
      }
      if (kind === null) holders.set(value, [this, Array.isArray(this) ? Number(key) : key, depth]);
    }
    if (kind === null) return value;
    if (this === wrapper) throw storeError('MemoryValidationError', `${method} takes one object of arguments`);
    nonjson.push({ path: pathTo(this, Array.isArray(this) ? Number(key) : key), kind });
    return null;
  }
  const body = JSON.stringify(params ?? {}, replacer);
  const extra = nonjson.length ? `${body === '{}' ? '' : ','}"$nonjson":${JSON.stringify(nonjson)}}` : '';
  return `{"id":${id},"method":${JSON.stringify(method)},"params":${extra ? body.slice(0, -1) + extra : body}}\n`;
}

// Bytes read per socket read, into one buffer reused for every read
// (`onread`): an answer up to this size costs no allocation beyond its string.
const READ_BUFFER_BYTES = 256 * 1024;

/**
 * A connection to the store RPC socket; `call(method, params)` answers a Promise.
 *
 * Why it reads with `onread` rather than `'data'` events (measured in
 * tests/bench/bench_node_profile.py: about 15 us less per call): the stream's
 * `'data'` path allocates a Buffer per chunk and runs the Readable machinery;
 * `onread` hands each read in one reused buffer, which is split into lines
 * where it lies. A line that spans reads (an answer larger than one read) is
 * copied out and joined once, when its end arrives. Splitting at byte 10 is
 * safe in UTF-8: no multi-byte character contains that byte, and JSON
 * escapes every newline inside a string.
 *
 * Requests made in the same tick (`Promise.all` of several calls, an adapter's
 * batch) go out in one write, queued until the microtask after the first:
 * one system call, and the server reads them in one chunk.
 */
export class RpcClient {
  constructor(socketPath) {
    this.socketPath = socketPath;
    this.nextId = 1;
    this.pending = new Map();
    this.socket = null;
    this.closed = false;
    this.queued = []; // request lines of this tick, not yet written
    this.held = []; // the start of an answer line whose end has not been read
  }

  call(method, params = {}) {
    if (this.closed) return Promise.reject(storeError('BackendError', 'the store RPC client is closed'));
    const id = this.nextId++;
    let line;
    try {
      line = encodeRequest(id, method, params);
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise((resolve, reject) => {
      const socket = this._socket();
      if (this.pending.size === 0) socket.ref(); // keep the process alive while calls are in flight
      this.pending.set(id, { resolve, reject });
      if (this.queued.push(line) === 1) queueMicrotask(() => this._flush());
    });
  }

  close() {
    this.closed = true;
    if (this.socket) this.socket.end();
    this.socket = null;
  }

  // The queued lines are always the current connection's: _lost empties the
  // queue (and rejects its calls) when a connection goes.
  _flush() {
    const lines = this.queued;
    this.queued = [];
    if (lines.length && this.socket) this.socket.write(lines.length === 1 ? lines[0] : lines.join(''));
  }

  _socket() {
    if (this.socket) return this.socket;
    const buffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
    const socket = net.createConnection({
      path: this.socketPath,
      onread: { buffer, callback: (length, read) => this._read(read, length) },
    });
    socket.on('error', (error) => this._lost(socket, error.message));
    socket.on('close', () => this._lost(socket, 'the connection closed'));
    this.socket = socket;
    return socket;
  }

  // One read: `length` bytes at the start of the reused buffer `read`.
  _read(read, length) {
    let start = 0;
    let end = read.indexOf(10);
    while (end !== -1 && end < length) {
      let line;
      if (this.held.length) {
        this.held.push(read.subarray(start, end));
        line = Buffer.concat(this.held).toString('utf8');
        this.held = [];
      } else {
        line = read.toString('utf8', start, end);
      }
      this._answer(line);
      start = end + 1;
      end = start < length ? read.indexOf(10, start) : -1;
    }
    // the buffer is reused by the next read: keep a copy of what is left
    if (start < length) this.held.push(Buffer.from(read.subarray(start, length)));
  }

  _answer(line) {
    const reply = JSON.parse(line);
    const call = this.pending.get(reply.id);
    if (call === undefined) return;
    this.pending.delete(reply.id);
    if (this.pending.size === 0 && this.socket) this.socket.unref();
    if (reply.error) call.reject(storeError(reply.error.name, reply.error.message));
    else call.resolve(reply.result);
  }

  _lost(socket, reason) {
    // a connection replaced after its error: its calls were rejected then
    if (this.socket !== null && this.socket !== socket) return;
    this.socket = null; // the next call reconnects
    this.queued = [];
    this.held = [];
    const calls = [...this.pending.values()];
    this.pending.clear();
    for (const call of calls) {
      call.reject(storeError('BackendError', `store RPC at ${this.socketPath} failed: ${reason}`));
    }
  }
}

/** Connect to the store RPC socket (lazily: the first call opens it). */
export function connect(socketPath) {
  if (typeof socketPath !== 'string' || socketPath === '') {
    throw storeError('MemoryValidationError', 'connect needs the store RPC socket path (MAKERS_STORE_RPC)');
  }
  return new RpcClient(socketPath);
}
